"""What Open vSwitch 3.1 does with encap and decap on a dummy bridge, kept as golden
cases (rules/encap.py and docs/endpoint.md's refusal rows rest on them), and dp-core
against the same bridge for the one form OneSwitch runs:

- the SFC pattern ``encap(nsh(md_type=1)), NSH set_fields, encap(ethernet)`` sends the
  whole frame in NSH MD type 1 and an Ethernet header with addresses 0 (dp-core sends
  the same bytes, and a later table sees the NSH frame);
- ``encap(nsh)`` (or ``encap(mpls)``, or one ``decap()`` of an Ethernet frame) then
  ``output`` sends nothing: a non-Ethernet packet does not leave an Ethernet port;
- ``encap(ethernet)`` on an Ethernet packet fails the whole translation: not even an
  output before it sends;
- ``decap(),decap()`` on NSH over Ethernet sends the inner frame (Open vSwitch
  recirculates after the NSH decap: the rest of the list runs on the re-parsed packet)."""

from __future__ import annotations

import struct

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules import nsh as N
from tandem.rules.ofctl import parse_rule

pytestmark = [pytest.mark.ovs]

UDP = bytes.fromhex("02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000")
NSH_ETH = (bytes.fromhex("0a00000000020a0000000001") + struct.pack("!H", N.ETH_TYPE_NSH)
           + N.header(dict(nsh_spi=0x123, nsh_si=5, nsh_np=3, nsh_c1=0x11)) + UDP)
SFC = ["table=0,in_port=1,actions=encap(nsh(md_type=1)),set_field:0x55->nsh_spi,set_field:7->nsh_si,"
       "set_field:0x1234->nsh_c1,encap(ethernet),set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:2,goto_table:1",
       "table=1,eth_type=0x894f,eth_src=00:00:00:00:00:00,nsh_spi=0x55,nsh_ttl=63,nsh_np=3,actions=output:3"]
SFC_OUT = bytes.fromhex("0a0b0c0d0e0f000000000000894f" "0fc6010300005507" "00001234" + "00" * 12) + UDP


def _ovs(flows: list[str], in_port: int, frame: bytes) -> dict[int, list[bytes]]:
    with OvsSandbox() as sb:
        sb.add_bridge("br0", [1, 2, 3])
        sb.add_flows("br0", flows)
        sb.inject("br0", in_port, [frame])
        sb.settle()
        return {port: frames for (_, port), frames in sb.take_all_output().items() if frames}


def test_sfc_pattern_frames_match_open_vswitch():
    want = {2: [SFC_OUT], 3: [SFC_OUT]}
    assert _ovs(SFC, 1, UDP) == want
    sw = Switch([1, 2, 3], 2, drop_malformed=False)
    sw.add_rules([parse_rule(t) for t in SFC])
    got: dict[int, list[bytes]] = {}
    for port, frame in sw.process(1, UDP):
        got.setdefault(port, []).append(frame)
    assert got == want


@pytest.mark.parametrize("actions", ["encap(nsh(md_type=1)),output:2", "encap(mpls),output:2", "decap(),output:2",
                                     "output:3,encap(ethernet),output:2"])
def test_a_non_ethernet_packet_leaves_no_port(actions):
    assert _ovs([f"in_port=1,actions={actions}"], 1, UDP) == {}


def test_decap_of_nsh_recirculates_and_sends_the_inner_frame():
    assert _ovs(["in_port=1,actions=decap(),decap(),output:2"], 1, NSH_ETH) == {2: [UDP]}
