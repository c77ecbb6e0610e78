"""``output(port=P,max_len=N)`` toward another switch as the last action of a rule, with
a push or ``encap(ethernet)`` pending: Open vSwitch 3.1 commits nothing at an output to
a patch port that ends the whole translation, so the pending header would cross
uncommitted and be added after P's switch cut the frame (N + 2d bytes instead of
N + d: 28 instead of 24 after a push_vlan, 48 instead of 34 after encap(ethernet),
measured). The translation keeps an action after that PCIe output (the mark's
restore), so the crossing commits, as an output to a physical PCIe port does."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import translate
from tandem.rules.ir import Output
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS

TRANSIT = Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("h:2", "s1:9")],
                         {1: "s0:1", 2: "s0:2", 3: "s1:1"})
FRAME = bytes.fromhex("020000000002020000000006080045000014000000004006b5e70a0000010a000002") + bytes(26)
ENDING = [  # (topology, virtual in_port, rule ending in the truncated output)
    (TOPOS["k3"], 1, "in_port=1,vlan_vid=0x0000,actions=push_vlan:0x8100,output(port=3,max_len=20)"),
    (TOPOS["k3"], 1, "in_port=1,actions=encap(nsh),encap(ethernet),output(port=3,max_len=20)"),
    (TOPOS["k3"], 3, "in_port=3,actions=encap(nsh(md_type=1)),set_field:0x10->nsh_spi,encap(ethernet),"
                     "output(port=2,max_len=14)"),
    (TRANSIT, 3, "in_port=3,actions=output:3,encap(nsh),encap(ethernet),output:3,output(port=2,max_len=20)"),
    (TRANSIT, 3, "in_port=3,vlan_vid=0x0000,actions=push_vlan:0x8100,pop_vlan,push_vlan:0x88a8,output(port=2,max_len=20)"),
]
CASES = ENDING + [
    # (a truncated output to IN_PORT sends and commits nothing: the header stays pending)
    (TRANSIT, 3, "in_port=3,actions=encap(nsh),encap(ethernet),output(port=IN_PORT,max_len=1500),"
                 "output(port=2,max_len=14),output:1"),
    # (a clone that ends the translation is translated inline, committing nothing at its start:
    # 24 bytes; with an action after it, the clone commits first: 20; trunc_translate.pending_change)
    (TOPOS["k3"], 1, "in_port=1,vlan_vid=0x0000,actions=push_vlan:0x8100,clone(output(port=3,max_len=20))"),
    (TOPOS["k3"], 1, "in_port=1,vlan_vid=0x0000,actions=output:2,push_vlan:0x8100,clone(output(port=3,max_len=20))"),
    (TOPOS["k3"], 1, "in_port=1,vlan_vid=0x0000,actions=push_vlan:0x8100,clone(output(port=3,max_len=20)),note:01"),
]


def test_a_last_clone_that_may_or_may_not_end_the_translation_is_refused_where_it_matters():
    """In a later table an earlier table may have written the action set (then the clone
    is no last action and commits first): refused when that changes the cut, else taken."""
    from tandem.oneswitch.ids import TranslationError

    with pytest.raises(TranslationError, match="last clone"):
        translate([parse_rule("table=1,in_port=1,vlan_vid=0x0000,actions=output:2,push_vlan:0x8100,"
                              "clone(output(port=3,max_len=20))")], TOPOS["k3"])
    translate([parse_rule("table=0,in_port=1,vlan_vid=0x0000,actions=output:2,push_vlan:0x8100,"
                          "clone(output(port=3,max_len=20))")], TOPOS["k3"])
    translate([parse_rule("table=1,in_port=1,actions=output:2,clone(output(port=3,max_len=20))")], TOPOS["k3"])


@pytest.mark.parametrize("topo, vin, text", ENDING)
def test_the_pcie_output_of_a_pending_truncated_output_is_not_the_last_action(topo, vin, text):
    tr = translate([parse_rule(text)], topo)
    ingress = topo.port_map[vin].switch
    (rule,) = tr.per_switch[ingress]
    last = rule.apply_actions[-1]
    assert not (type(last) is Output and any(last.port == link.a.port or last.port == link.b.port
                                             for link in topo.links)), rule


@pytest.mark.ovs
@pytest.mark.parametrize("topo, vin, text", CASES)
def test_a_truncated_output_with_a_pending_header_cuts_as_the_virtual_switch(topo, vin, text):
    from tandem.testing.oneswitch_oracle import Oracle

    rules = [parse_rule(text)]
    tr = translate(rules, topo)
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        with Oracle(sb, topo) as o:
            o.load_virtual(rules)
            o.load_translation(tr)
            rep = o.compare([(vin, FRAME)])
    assert not rep.mismatches, rep.mismatches[0]
