"""What Open vSwitch 3.1 does with ``check_pkt_larger`` into an NSH field, kept as golden
cases for docs/endpoint.md's refusal row (OneSwitch refuses the form): the flow gets the bit,
which a later move reads, but the frame's NSH header gets it only where Open vSwitch's
datapath flow mask holds that bit. Its translation writes the bit into the flow without
unwildcarding it (other writes, matches and reads do), and it commits the NSH header as a
masked set under that mask, so the header changes only where a match, an earlier or later
read or write of the bit (in either branch of the datapath's length check, both translated
into one datapath flow) put it in the mask; whether the frame is larger does not decide it
(measured: without a match or read the bit never reaches the header; with a later table's
move of it both branches' frames carry it). dp-core writes both, so OneSwitch takes
the form only where the rule's match fixes the bit (``rules/nsh_check_larger.py``), which
puts it into the mask from the rule's lookup on."""

from __future__ import annotations

import struct

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules import nsh as N
from tandem.rules.ofctl import parse_rule
from tandem.rules.ofctl_lex import OfctlSyntaxError

pytestmark = [pytest.mark.ovs]

UDP = bytes.fromhex("02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000")
FRAME = (bytes.fromhex("0a00000000020a0000000001") + struct.pack("!H", N.ETH_TYPE_NSH)
         + N.header(dict(nsh_spi=0x123, nsh_si=5, nsh_np=3, nsh_c1=0x11)) + UDP)  # (96 bytes)


def _ovs(length: int, dst: str, width: int) -> tuple[bytes, bytes]:
    """(the frame sent after the check, the frame of a later table that moved the field's low byte into eth_src)."""
    flows = [f"table=0,in_port=1,eth_type=0x894f,actions=check_pkt_larger({length})->{dst},output:2,goto_table:1",
             f"table=1,eth_type=0x894f,actions=move:{dst.split('[')[0]}[]->NXM_NX_REG0[0..{width - 1}],"
             "move:NXM_NX_REG0[0..7]->NXM_OF_ETH_SRC[0..7],output:3"]
    with OvsSandbox() as sb:
        sb.add_bridge("br0", [1, 2, 3])
        sb.add_flows("br0", flows)
        sb.inject("br0", 1, [FRAME])
        sb.settle()
        out = {port: frames for (_, port), frames in sb.take_all_output().items() if frames}
    return out[2][0], out[3][0]


def _nsh(frame: bytes) -> tuple[int, int]:
    spi_si = struct.unpack_from("!I", frame, 18)[0]
    return spi_si >> 8, spi_si & 0xFF


def test_a_larger_frame_keeps_its_header_while_the_flow_has_the_bit():
    sent, later = _ovs(50, "NXOXM_NSH_SPI[2]", 24)
    assert _nsh(sent) == _nsh(later) == (0x123, 5)  # (the header unchanged)
    assert later[11] == 0x27  # (the flow's SPI: 0x127)


def test_a_frame_not_larger_gets_the_header_bit():
    sent, later = _ovs(500, "NXOXM_NSH_SI[0]", 8)
    assert _nsh(sent) == _nsh(later) == (0x123, 4)
    assert later[11] == 0x04


def test_oneswitch_refuses_a_bit_the_match_does_not_fix():
    with pytest.raises(OfctlSyntaxError, match="only a bit the rule's match fixes"):
        parse_rule("eth_type=0x894f,actions=check_pkt_larger(50)->NXOXM_NSH_SPI[2],output:2")
    with pytest.raises(OfctlSyntaxError, match="only a bit the rule's match fixes"):
        parse_rule("eth_type=0x894f,nsh_mdtype=1,nsh_c1=0x10/0xf0,actions=check_pkt_larger(50)->NXOXM_NSH_C1[1]")


# (match, actions) of a rule in table 0 (table 1: output:2) -> the NSH fields that changed in the frame OVS 3.1 sent
FIXED = [
    ("nsh_spi=0x123", "check_pkt_larger(500)->NXOXM_NSH_SPI[0],output:2", {"nsh_spi": 0x122}),
    ("nsh_spi=0x123", "check_pkt_larger(50)->NXOXM_NSH_SPI[2],output:2", {"nsh_spi": 0x127}),
    ("nsh_mdtype=1,nsh_c1=0x11/0xff", "check_pkt_larger(50)->NXOXM_NSH_C1[1],output:2", {"nsh_c1": 0x13}),
    ("nsh_mdtype=1,nsh_c1=0x11/0xff", "check_pkt_larger(500)->NXOXM_NSH_C1[0],output:2", {"nsh_c1": 0x10}),
    ("nsh_flags=1", "check_pkt_larger(50)->NXOXM_NSH_FLAGS[1],goto_table:1", {"nsh_flags": 3}),
    ("nsh_ttl=0x2a", "check_pkt_larger(50)->NXOXM_NSH_TTL[0],output:2", {"nsh_ttl": 0x2B}),
    ("nsh_si=5", "check_pkt_larger(500)->NXOXM_NSH_SI[0],set_field:9->nsh_c2,output:2", {"nsh_si": 4, "nsh_c2": 9}),
]
HDR = dict(nsh_flags=1, nsh_ttl=0x2A, nsh_spi=0x123, nsh_si=5, nsh_np=3, nsh_c1=0x11, nsh_c2=0x22, nsh_c3=0x33, nsh_c4=0x44)
FULL = bytes.fromhex("0a00000000020a0000000001") + struct.pack("!H", N.ETH_TYPE_NSH) + N.header(HDR) + UDP


@pytest.mark.parametrize("match, actions, changed", FIXED)
def test_dp_core_writes_a_bit_the_match_fixes_as_open_vswitch(match, actions, changed):
    """Measured on OVS 3.1 (frame of 96 bytes): the header gets the bit whether the frame is larger or not."""
    sw = Switch([1, 2, 3], 2, drop_malformed=False)
    sw.add_rules([parse_rule(f"table=0,in_port=1,eth_type=0x894f,{match},actions={actions}"),
                  parse_rule("table=1,actions=output:2")])
    [(port, frame)] = list(sw.process(1, FULL))
    want = {**N.fields(FULL, 14), **changed}
    assert port == 2 and N.fields(frame, 14) == want


def test_open_vswitch_writes_a_bit_the_match_fixes():
    with OvsSandbox() as sb:
        sb.add_bridge("br0", [1, 2])
        for match, actions, changed in FIXED:
            sb.replace_flows("br0", [f"table=0,in_port=1,eth_type=0x894f,{match},actions={actions}",
                                     "table=1,actions=output:2"])
            sb.inject("br0", 1, [FULL])
            sb.settle()
            [frame] = sb.take_output("br0", 2)
            assert N.fields(frame, 14) == {**N.fields(FULL, 14), **changed}, (match, actions)


# actions of one rule (in_port=1, eth_type=0x894f, then output:2) -> the frame's (SPI, SI), measured on OVS 3.1
MASKED = {
    "check_pkt_larger(500)->NXOXM_NSH_SPI[0]": (0x123, 5),  # (not larger: writes 0, no mask, no change)
    "check_pkt_larger(50)->NXOXM_NSH_SPI[2]": (0x123, 5),  # (larger: writes 1, no mask, no change)
    "move:NXOXM_NSH_SPI[]->NXM_NX_REG0[0..23],check_pkt_larger(50)->NXOXM_NSH_SPI[2]": (0x127, 5),  # (read before)
    "check_pkt_larger(50)->NXOXM_NSH_SPI[2],load:1->NXOXM_NSH_SPI[3]": (0x12B, 5),  # (bit 3 only in the mask)
    "set_field:7->nsh_si,check_pkt_larger(50)->NXOXM_NSH_SPI[2]": (0x123, 7),
}


def test_the_header_gets_the_bit_only_where_the_datapath_flow_mask_holds_it():
    got = {}
    with OvsSandbox() as sb:
        sb.add_bridge("br0", [1, 2])
        for actions in MASKED:
            sb.replace_flows("br0", [f"in_port=1,eth_type=0x894f,actions={actions},output:2"])
            sb.inject("br0", 1, [FRAME])
            sb.settle()
            got[actions] = [_nsh(f) for f in sb.take_output("br0", 2)]
        sb.replace_flows("br0", ["in_port=1,eth_type=0x894f,nsh_spi=0x123,actions=check_pkt_larger(50)->NXOXM_NSH_SPI[2],"
                                 "output:2"])  # (the match puts the SPI into the mask)
        sb.inject("br0", 1, [FRAME])
        sb.settle()
        matched = [_nsh(f) for f in sb.take_output("br0", 2)]
    assert got == {a: [v] for a, v in MASKED.items()}
    assert matched == [(0x127, 5)]
