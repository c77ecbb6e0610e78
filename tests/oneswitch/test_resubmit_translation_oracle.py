"""Resubmits under OneSwitch, the cases random rule sets meet rarely: a rule that
looks table 0 up again (``resubmit(,0)``, ``output:TABLE``) and a resubmit with
another in_port of the same switch. The OVS oracle compares every frame with the
virtual switch, and must catch a translation that looks table 0 up with the mark
a PCIe output left, or with the virtual port number as the in_port
(docs/oneswitch.md section 7). Random rule sets: ``tandem bench of13_oracle --
--items resubmit``."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch import rule_analysis
from tandem.oneswitch.compiler import Compiler
from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import translate
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.rules.packets import build_frame

pytestmark = pytest.mark.ovs

K3 = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                    {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"})
# reg0 counts the lookups; each lookup's rule sends to another switch, in the bare form
# where it ends the pipeline (the flow id stays in the mark), then table 0 is looked up again
RULES = [
    "priority=9,reg0=0,actions=load:1->NXM_NX_REG0[],TABLE,load:2->NXM_NX_REG0[],resubmit(,0),"
    "load:3->NXM_NX_REG0[],resubmit(,0),output:2",
    "priority=8,reg0=1,actions=output:1",
    "priority=8,reg0=2,actions=output:4",
    "priority=8,reg0=3,actions=output:3",
    "table=1,priority=5,actions=output:1",
]


def _frames():
    frame = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1, udp_dst=2)
    return [(v, frame) for v in (1, 2, 3, 4) for _ in range(3)]


def _compare(sb, topo, lines, packets, group_lines=()):
    """The oracle's report on these rules (and groups): the virtual switch against their translation."""
    from tandem.testing.oneswitch_oracle import Oracle

    rules, groups = [parse_rule(t) for t in lines], [parse_group(t) for t in group_lines]
    with Oracle(sb, topo) as o:
        o.load_virtual(rules, groups)
        o.load_translation(translate(rules, topo, groups))
        return o.compare(packets)


@pytest.fixture(scope="module")
def sb():
    with OvsSandbox() as s:
        s.appctl("upcall/disable-megaflows")
        yield s


def test_table_0_looked_up_again_meets_what_the_virtual_switch_meets(sb, monkeypatch):
    rep = _compare(sb, K3, RULES, _frames())
    assert rep.mismatches == [] and rep.outputs >= 36
    # without the mark set to 0 for the lookup, the flow id a PCIe output left there is seen
    monkeypatch.setattr(rule_analysis, "_ZERO_MARK", rule_analysis.SetField("reg15", 0))
    assert _compare(sb, K3, RULES, _frames()).mismatches


TWO = Topology.build({"h": "host", "s": "snic"}, [("h:9", "s:9")], {5: "h:1", 6: "h:2", 7: "s:1", 8: "s:2"})
IN_PORT_RULES = [
    "priority=9,in_port=7,actions=resubmit(8,1),output:5",  # on s, whose port 8 is physical 2
    "table=1,priority=5,in_port=8,actions=output:6",
    "table=1,priority=5,in_port=7,actions=output:8",
]


def test_a_resubmit_with_another_port_of_the_switch_looks_up_with_its_physical_number(sb, monkeypatch):
    frames = [(7, build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1, udp_dst=2))] * 3
    rep = _compare(sb, TWO, IN_PORT_RULES, frames)
    assert rep.mismatches == [] and rep.outputs == 6
    monkeypatch.setattr(Compiler, "_resubmit", lambda self, sw, a, what: a)  # the virtual number kept
    assert _compare(sb, TWO, IN_PORT_RULES, frames).mismatches
