"""What Open vSwitch 3.1 does with ``check_pkt_larger`` into an NSH field, kept as a
golden case for docs/endpoint.md's refusal row (OneSwitch refuses the form): the
flow gets the bit, which a later move reads, but the frame's NSH header gets it only
where the frame is not larger than the length. dp-core writes both, so the form stays
refused (``ir.no_nsh_operand``)."""

from __future__ import annotations

import struct

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
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


def test_oneswitch_refuses_the_form():
    with pytest.raises(OfctlSyntaxError, match="operand of move, push and pop only"):
        parse_rule("eth_type=0x894f,actions=check_pkt_larger(50)->NXOXM_NSH_SPI[2],output:2")
