"""The SFC decap pair split between apply-actions (``decap()``) and the action set
(``decap()``; rules/decap_set.py) on a dummy Open vSwitch 3.1 bridge and in dp-core, frame
for frame: the set's decap pops both headers and recirculates (``pop_eth,pop_nsh(),
recirc(…)``), then its output sends the inner frame and a written push_vlan tags it; a
VLAN-tagged frame sends nothing. The forms OneSwitch refuses, as Open vSwitch runs them:
one decap() alone (in the list or the set) and the split pair's later tables send nothing
(a packet that is not Ethernet leaves no Ethernet port)."""

from __future__ import annotations

import pytest

from tandem.rules.ofctl import parse_rule

from test_decap_vs_ovs import M, NSH_UDP, UDP, _dp, _nsh, _ovs

pytestmark = [pytest.mark.ovs]

TAGGED_UDP = UDP[:12] + bytes.fromhex("81000000") + UDP[12:]
CASES = {
    "split": ([f"{M},actions=decap(),write_actions(decap(),output:2)"], NSH_UDP, {2: [UDP]}),
    "output and register before": ([f"table=0,{M},actions=set_field:9->reg1,output:3,decap(),"
                                    "write_actions(set_field:5->reg0,decap(),output:2)"], NSH_UDP, {2: [UDP], 3: [NSH_UDP]}),
    "packet types named": ([f"{M},actions=decap(packet_type(ns=1,type=0x894f)),"
                            "write_actions(decap(packet_type(ns=0,type=0)),output:2)"], NSH_UDP, {2: [UDP]}),
    "written push_vlan after": ([f"{M},actions=decap(),write_actions(decap(),push_vlan:0x8100,output:2)"], NSH_UDP,
                                {2: [TAGGED_UDP]}),
    "written push_vlan before": ([f"{M},actions=decap(),write_actions(push_vlan:0x8100,decap(),output:2)"], NSH_UDP,
                                 {2: [TAGGED_UDP]}),
    "VLAN tag: nothing": ([f"{M},actions=output:3,decap(),write_actions(decap(),output:2)"], _nsh(UDP, vlan=True), {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dp_core_sends_what_open_vswitch_sends(name):
    flows, frame, want = CASES[name]
    assert _ovs(flows, frame) == want
    assert _dp([parse_rule(t) for t in flows], frame) == want


REFUSED = {  # (what Open vSwitch does with the forms decap_set.py refuses: a packet no Ethernet port sends)
    "decap() alone in the list": [f"{M},actions=decap(),output:2"],
    "decap() alone in the set": [f"{M},actions=write_actions(decap(),output:2)"],
    "written decap(),decap() alone": [f"{M},actions=write_actions(decap(),decap(),output:2)"],
    "split pair's later table": [f"table=0,{M},actions=decap(),write_actions(decap()),goto_table:1",
                                 "table=1,actions=output:3"],
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_refused_forms_send_nothing_in_open_vswitch(name):
    assert _ovs(REFUSED[name], NSH_UDP) == {}
