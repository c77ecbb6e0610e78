"""The NSH fields (Open vSwitch's nsh_flags, nsh_ttl, nsh_mdtype, nsh_np, nsh_spi,
nsh_si, nsh_c1..c4 of an 0x894f frame) and dec_nsh_ttl in text and on the wire, the checks Open
vSwitch makes (contexts without nsh_mdtype=1: test_nsh_context.py), and
NSH frames built and read back as Open vSwitch's parse_nsh reads them. The golden
bytes are tests/ofwire/golden/flow_mod_nx_nsh.hex; the packet oracle is
``tandem bench of13_oracle --items match:nsh,set:nsh,dec_nsh_ttl``."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from tandem.rules.nxm import NSH_EXPERIMENTER
from tandem.rules import ofwire as W
from tandem.rules.ir import Match
from tandem.rules.ofctl import OfctlSyntaxError, parse_rule
from tandem.rules.packets import build_frame, extract_fields, frame_matches

sys.path.insert(0, str(Path(__file__).parents[1] / "ofwire"))
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402


@pytest.mark.parametrize("text", [
    "eth_type=0x894f,nsh_flags=0x5/0xff,nsh_ttl=63,nsh_mdtype=2,nsh_np=200,nsh_spi=0xffffff,nsh_si=0,actions=drop",
    "table=2,eth_type=0x894f,nsh_mdtype=1,nsh_c1=0x1,nsh_c2=0x10/0xf0,nsh_c3=0xffffffff,nsh_c4=0x0,actions=output:1",
    "eth_type=0x894f,actions=set_field:255->nsh_flags,set_field:0->nsh_ttl,set_field:0xabcdef->nsh_spi,"
    "set_field:1->nsh_si,set_field:0x5->nsh_c1,set_field:0x1/0xf->nsh_c4,output:2",
    "eth_type=0x894f,nsh_ttl=2,actions=dec_nsh_ttl,output:1,clone(dec_nsh_ttl,output:2)",
    # (nshttl) written into the action set, with or without an NSH match (Open vSwitch checks none there)
    "eth_type=0x894f,actions=write_actions(set_field:9->nsh_ttl,dec_nsh_ttl,output:2)",
    "actions=write_actions(dec_nsh_ttl,output:2)",
])
def test_text_and_wire_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


@pytest.mark.parametrize("text, why", [
    ("nsh_spi=1,actions=drop", "needs eth_type"),
    ("eth_type=0x894f,nsh_ttl=64,actions=drop", "nsh_ttl"),  # (6 bits, as Open vSwitch)
    ("eth_type=0x894f,nsh_spi=0x1000000,actions=drop", "nsh_spi"),  # (24 bits)
    ("eth_type=0x894f,nsh_mdtype=3,actions=drop", "MD type 1 or 2 only"),
    ("eth_type=0x894f,nsh_ttl=1/3,actions=drop", "cannot be masked"),
    ("eth_type=0x894f,actions=set_field:1->nsh_mdtype", "nsh_mdtype"),  # (read-only)
    ("eth_type=0x894f,actions=set_field:1->nsh_np", "nsh_np"),
    ("eth_type=0x894f,actions=move:NXM_NX_REG0[0..5]->nsh_ttl[]", "source is 6 bits wide but destination is 8"),  # (nsh_ttl[]: 8 bits, as OVS)
    ("ip,actions=set_field:1->nsh_si", "nsh_si"),
    ("actions=dec_nsh_ttl", "dec_nsh_ttl needs eth_type=0x894f"),
    ("eth_type=0x894f,actions=push_mpls:0x8847,dec_nsh_ttl", "dec_nsh_ttl needs eth_type=0x894f"),
    ("eth_type=0x894f,actions=dec_nsh_ttl(1)", "takes no argument"),
])
def test_text_refusals(text, why):
    with pytest.raises(OfctlSyntaxError, match=why):
        parse_rule(text)


def _oxm(num: int, value: bytes) -> bytes:
    return struct.pack("!II", 0xFFFF << 16 | num << 9 | 4 + len(value), NSH_EXPERIMENTER) + value


def _match(*oxms: bytes) -> bytes:
    oxm = struct.pack("!IH", 0x8000 << 16 | 5 << 9 | 2, 0x894F) + b"".join(oxms)
    raw = struct.pack("!HH", 1, 4 + len(oxm)) + oxm
    return raw + bytes(-len(raw) % 8)


def test_dec_nsh_ttl_in_write_actions_and_buckets():
    from tandem.rules.ir import DecNshTtl, Output
    from tandem.rules.ofwire_nx import NX_REFUSED

    assert 48 not in NX_REFUSED
    acts = [DecNshTtl(), Output(2)]
    assert W.decode_actions(W.encode_actions(acts)) == acts  # (write_actions' list)
    assert W.decode_actions(W.encode_actions(acts), bucket=True) == acts


def test_wire_checks_as_open_vswitch():
    assert W.decode_match(_match(_oxm(4, struct.pack("!I", 5))))[0] == Match.of(eth_type=0x894F, nsh_spi=5)
    for oxms, err in (((_oxm(10, b"\x40"),), W.OFPBMC_BAD_VALUE),  # nsh_ttl=64 (OVS: BAD_VALUE)
                      ((_oxm(2, b"\x00"),), W.OFPBMC_BAD_VALUE)):  # nsh_mdtype=0 (OVS: BAD_VALUE)
        with pytest.raises(W.OFError) as e:
            W.decode_match(_match(*oxms))
        assert (e.value.etype, e.value.code) == (W.OFPET_BAD_MATCH, err)


def test_frames_read_back_as_open_vswitch_parses_them():
    md1 = build_frame(eth_type=0x894F, nsh_flags=6, nsh_ttl=9, nsh_np=1, nsh_spi=0x1234, nsh_si=5, nsh_c2=7)
    got = {k: v for k, v in extract_fields(md1).items() if k.startswith("nsh_")}
    # (the header holds 2 flag bits)
    assert got == dict(nsh_flags=2, nsh_ttl=9, nsh_mdtype=1, nsh_np=1, nsh_spi=0x1234, nsh_si=5,
                       nsh_c1=0, nsh_c2=7, nsh_c3=0, nsh_c4=0)
    md2 = build_frame(eth_type=0x894F, nsh_mdtype=2, nsh_c2=7, nsh_si=3)
    got = extract_fields(md2)
    assert (got["nsh_mdtype"], got["nsh_si"], got["nsh_c2"]) == (2, 3, 0)  # (MD type 2: contexts read 0)
    assert frame_matches(parse_rule("eth_type=0x894f,nsh_mdtype=1,nsh_c2=7,actions=drop").match, md1)
    assert not frame_matches(parse_rule("eth_type=0x894f,nsh_si=3,nsh_mdtype=1,actions=drop").match, md2)
    broken = bytearray(md1)
    broken[14] |= 0x40  # version 1: Open vSwitch parses no NSH field
    assert all(v == 0 for k, v in extract_fields(bytes(broken)).items() if k.startswith("nsh_"))


def test_wire_order_as_open_vswitch_sends_it():
    """Open vSwitch 3.1's FLOW_STATS put NXOXM_NSH_TTL (field 10) right after NXOXM_NSH_FLAGS
    (measured: flags, ttl, np, si, c4), and so do Tandem's FLOW_STATS and FLOW_REMOVED."""
    m = Match.of(eth_type=0x894F, nsh_flags=1, nsh_ttl=5, nsh_c4=1, nsh_si=3, nsh_np=3)
    assert W.encode_oxms(m) == bytes.fromhex("80000a02894f" "ffff0205005ad65001" "ffff1405005ad65005" "ffff0605005ad65003"
                                             "ffff0a05005ad65003" "ffff1208005ad65000000001")
