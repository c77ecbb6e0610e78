"""``decap(),decap()`` (rules/decap.py) on a dummy Open vSwitch 3.1 bridge and in dp-core,
frame for frame: the inner frame leaves with the registers, metadata, ``pkt_mark``,
``tunnel_id``, the stack and the action set written before the pair kept (Open vSwitch recirculates: ``pop_eth,
pop_nsh(),recirc(…)``), both packet-type spellings do the same, two pairs unwrap NSH
inside NSH, and a VLAN-tagged or non-NSH frame fails the whole translation (nothing is
sent, not even an output before the pair)."""

from __future__ import annotations

import struct

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules import nsh as N
from tandem.rules.ir import ApplyActions, Decap, Match, Output, Rule
from tandem.rules.ofctl import parse_rule

pytestmark = [pytest.mark.ovs]

UDP = bytes.fromhex("02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000")


def _nsh(inner: bytes, vlan: bool = False, spi: int = 0x123) -> bytes:
    return (bytes.fromhex("0a00000000020a0000000001") + (bytes.fromhex("81000064") if vlan else b"")
            + struct.pack("!H", N.ETH_TYPE_NSH) + N.header(dict(nsh_spi=spi, nsh_si=5, nsh_np=3, nsh_c1=0x11)) + inner)


NSH_UDP = _nsh(UDP)
M = "eth_type=0x894f,nsh_np=3"
CASES = {
    "state kept": (["table=0,actions=set_field:5->pkt_mark,write_actions(output:3),write_metadata:7,goto_table:1",
                    f"table=1,{M},metadata=7,actions=decap(),decap(),set_field:9->reg1,output:2,goto_table:2",
                    "table=2,reg1=9,metadata=7,pkt_mark=5,ip,actions=output:2"], NSH_UDP),
    "stack and tunnel_id kept": ([f"table=0,{M},actions=set_field:5->reg0,push:NXM_NX_REG0[],set_field:9->tunnel_id,"
                                  "decap(),decap(),pop:NXM_NX_REG1[],goto_table:1",
                                  "table=1,reg1=5,tunnel_id=9,actions=output:2"], NSH_UDP),
    "packet types named": ([f"{M},actions=decap(packet_type(ns=1,type=0x894f)),decap(packet_type(ns=0,type=0)),output:2"],
                           NSH_UDP),
    "output before the pair": ([f"{M},actions=output:3,decap(),decap(),output:2"], NSH_UDP),
    "two pairs": ([f"table=0,{M},actions=decap(),decap(),goto_table:1", f"table=1,{M},actions=decap(),decap(),output:2"],
                  _nsh(_nsh(UDP, spi=0x77))),
    "VLAN tag: nothing": ([f"{M},actions=output:3,decap(),decap(),output:2"], _nsh(UDP, vlan=True)),
    "pushed VLAN tag: nothing": ([f"{M},actions=output:3,push_vlan:0x8100,decap(),decap(),output:2"], NSH_UDP),
}


def _ovs(flows: list[str], frame: bytes) -> dict[int, list[bytes]]:
    with OvsSandbox() as sb:
        sb.add_bridge("br0", [1, 2, 3])
        sb.add_flows("br0", flows)
        sb.inject("br0", 1, [frame])
        sb.settle()
        return {port: frames for (_, port), frames in sb.take_all_output().items() if frames}


def _dp(rules: list[Rule], frame: bytes) -> dict[int, list[bytes]]:
    sw = Switch([1, 2, 3], 3, drop_malformed=False)
    sw.add_rules(rules)
    got: dict[int, list[bytes]] = {}
    for port, out in sw.process(1, frame):
        got.setdefault(port, []).append(out)
    return got


@pytest.mark.parametrize("name", sorted(CASES))
def test_dp_core_sends_what_open_vswitch_sends(name):
    flows, frame = CASES[name]
    want = _ovs(flows, frame)
    assert _dp([parse_rule(t) for t in flows], frame) == want
    if name == "state kept":  # (port 2 twice: the pair's own output and table 2's; the written output once)
        assert want == {2: [UDP, UDP], 3: [UDP]}
    elif "nothing" in name:
        assert want == {}
    else:
        assert UDP in want[2]


def test_a_non_nsh_frame_fails_the_translation():
    # (a rule the IR refuses: the match does not pin NSH; dp-core still runs it as Open vSwitch does)
    rule = Rule(Match(), (ApplyActions((Output(3), Decap(), Decap(), Output(2))),))
    assert _ovs(["actions=output:3,decap(),decap(),output:2"], UDP) == {} == _dp([rule], UDP)
