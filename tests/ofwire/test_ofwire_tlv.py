"""Nicira's TLV table messages (ofwire_tlv.py): golden bytes Open vSwitch reads as the
same table mod, and the map after each mod, refused with Open vSwitch's NXTTMFC_* errors."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_tlv as T
from tandem.rules.ofwire_tlv import TlvMap

A, B = TlvMap(0xFFFF, 0, 4, 0), TlvMap(0x0102, 0x80, 8, 1)
# add {class=0xffff,type=0,len=4}->tun_metadata0,{class=0x102,type=0x80,len=8}->tun_metadata1, xid 7
GOLDEN_ADD = "040400280000000700002320000000180000000000000000ffff0004000000000102800800010000"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")


def test_table_mod_matches_its_golden_bytes_and_decodes_back():
    raw = T.encode_tlv_table_mod(7, T.NXTTMC_ADD, [A, B])
    assert raw.hex() == GOLDEN_ADD
    assert T.decode_tlv_table_mod(raw[8:]) == (T.NXTTMC_ADD, [A, B])
    reply = T.encode_tlv_table_reply(9, {1: B, 0: A})
    assert T.decode_tlv_table_reply(reply[8:]) == (256, 64, [A, B])


@needs_ofctl
def test_open_vswitch_reads_the_golden_bytes_as_the_same_table_mod():
    out = subprocess.run(["ovs-ofctl", "ofp-print", GOLDEN_ADD], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines()]
    assert "NXT_TLV_TABLE_MOD (OF1.3) (xid=0x7):" in out and ["ADD", "mapping", "table:"] in rows, out
    assert ["0xffff", "0", "4", "tun_metadata0"] in rows and ["0x102", "0x80", "8", "tun_metadata1"] in rows, out


def _mod(command: int, *maps: tuple[int, int, int, int]) -> bytes:
    return struct.pack("!IIH6x", 0x2320, 24, command) + b"".join(struct.pack("!HBBH2x", *m) for m in maps)


@pytest.mark.parametrize("body, err", [
    (_mod(3), T.NXTTMFC_BAD_COMMAND),
    (_mod(0, (0xFFFF, 0, 6, 0)), T.NXTTMFC_BAD_OPT_LEN),
    (_mod(0, (0xFFFF, 0, 128, 0)), T.NXTTMFC_BAD_OPT_LEN),  # (124 bytes at most)
    (_mod(0, (0xFFFF, 0, 4, 64)), T.NXTTMFC_BAD_FIELD_IDX),
    (_mod(0)[:10], (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)),
    (_mod(0, (0xFFFF, 0, 4, 0))[:-2], (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)),
])
def test_a_bad_table_mod_gets_open_vswitchs_error(body, err):
    with pytest.raises(W.OFError) as e:
        T.decode_tlv_table_mod(body)
    assert (e.value.etype, e.value.code) == err


def test_add_delete_clear_as_open_vswitch():
    m = T.apply_tlv_mod({}, T.NXTTMC_ADD, [A, B])
    assert m == {0: A, 1: B}
    for maps, err in [
        ([TlvMap(1, 1, 4, 0)], T.NXTTMFC_ALREADY_MAPPED),
        ([TlvMap(0x0102, 0x80, 4, 2)], T.NXTTMFC_DUP_ENTRY),  # (class, type) of tun_metadata1
        ([TlvMap(5, 5, 124, 5), TlvMap(6, 6, 124, 6)], T.NXTTMFC_TABLE_FULL),  # 12 + 248 > 256 bytes
        ([TlvMap(5, 5, 4, 5), TlvMap(6, 6, 4, 5)], T.NXTTMFC_ALREADY_MAPPED),  # (the same index twice in one mod)
    ]:
        with pytest.raises(W.OFError) as e:
            T.apply_tlv_mod(m, T.NXTTMC_ADD, maps)
        assert (e.value.etype, e.value.code) == err
    assert m == {0: A, 1: B}  # (a refused mod takes none of its mappings)
    assert T.apply_tlv_mod(m, T.NXTTMC_ADD, [TlvMap(5, 5, 124, 5), TlvMap(6, 6, 120, 6)])[6].option_len == 120
    assert T.apply_tlv_mod(m, T.NXTTMC_DELETE, [TlvMap(0, 0, 0, 0), TlvMap(0, 0, 0, 30)]) == {1: B}  # 30: unmapped
    assert T.apply_tlv_mod(m, T.NXTTMC_CLEAR, []) == {}
