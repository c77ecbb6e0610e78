"""A truncated output toward another switch after ``encap``: Open vSwitch 3.1 commits
its pending header changes at ``encap(nsh)`` and leaves the Ethernet header of
``encap(ethernet)`` pending (measured: ``push_vlan,encap(nsh),encap(ethernet),
output(port=2,max_len=20)`` sends 34 bytes of a 42-byte frame, ``encap(nsh),
encap(ethernet),push_vlan,output(port=2,max_len=20)`` 38), so P's switch cuts the
crossed frame to N + 14 and N + 18. The oracle item ``encap_trunc`` checks it on
random rule sets."""

from __future__ import annotations

from tandem.oneswitch.trunc_translate import pending_change
from tandem.rules import ofctl


def _pending(text: str) -> int | str:
    rule = ofctl.parse_rule(text)
    acts = rule.apply_actions
    return pending_change(acts, len(acts) - 1, rule, {1, 2, 3})


def test_encap_nsh_commits_and_the_ethernet_header_stays_pending():
    assert _pending("in_port=1,actions=push_vlan:0x8100,encap(nsh),encap(ethernet),output(port=2,max_len=20)") == 14
    assert _pending("in_port=1,actions=encap(nsh),encap(ethernet),push_vlan:0x8100,output(port=2,max_len=20)") == 18
    assert _pending("in_port=1,vlan_vid=0x0000,actions=push_vlan:0x8100,output(port=2,max_len=20)") == 4


def test_a_truncated_output_to_in_port_commits_nothing():
    # Open vSwitch's output_trunc sends nothing to IN_PORT (the only reserved port ovs-ofctl
    # takes there), so the header pending before it stays pending (as dp-core's pipeline/trunc.rs)
    trunc = "output(port=IN_PORT,max_len=1500)"
    assert _pending(f"in_port=1,actions=encap(nsh),encap(ethernet),{trunc},output(port=2,max_len=14)") == 14
    assert _pending(f"in_port=1,vlan_vid=0x0000,actions=push_vlan:0x8100,{trunc},output(port=2,max_len=14)") == 4
    assert _pending("in_port=1,vlan_vid=0x0000,actions=push_vlan:0x8100,output:IN_PORT,output(port=2,max_len=14)") == 0
