"""The OneSwitch view of a scenario: placement-independent virtual ports, the
derived topology, and the untagged hand-off of single-destination PCIe links."""

from pathlib import Path

from tandem.model.load import load_scenario
from tandem.oneswitch.scenario import derive_topology, untag_single_destination, virtual_ports, virtual_rules
from tandem.oneswitch.translate import translate
from tandem.rules.ir import ApplyActions, Match, Output, Rule
from tandem.rules.ofctl import format_rule

SDWAN = Path(__file__).resolve().parents[2] / "examples" / "uno-sdwan.yaml"


def test_virtual_ports_do_not_move_with_the_nfs_only_their_physical_places_do():
    sc = load_scenario(SDWAN)
    a = derive_topology(sc, {"secgw1": "snic0", "l7fw1": "snic0"})
    b = derive_topology(sc, {"secgw1": "host", "l7fw1": "host"})
    assert sorted(a.port_map) == sorted(b.port_map) == list(range(1, 10))
    changed = {v for v in a.port_map if a.port_map[v] != b.port_map[v]}
    vp = virtual_ports(sc)
    assert changed == {*vp.nf["secgw1"], *vp.nf["l7fw1"]}
    assert [(str(l.a), str(l.b)) for l in a.links] == [(f"host:{vp.pcie_port(0)}", f"snic0:{vp.pcie_port(0)}")]


def test_a_link_with_one_destination_carries_frames_unmarked_and_two_keep_their_marks():
    sc = load_scenario(SDWAN)
    topo = derive_topology(sc, {"secgw1": "snic0", "l7fw1": "snic0"})
    tr = translate(virtual_rules(sc), topo)
    rules, n = untag_single_destination(tr.per_switch, tr.groups, topo)
    assert n == 1  # sNIC -> host carries only frames for vm1.eth0
    text = {sw: [format_rule(r) for r in rs] for sw, rs in rules.items()}
    p = virtual_ports(sc).pcie_port(0)
    assert f"table=0,priority=100,in_port=9,actions=output:{p}" in text["snic0"]
    assert f"table=0,priority=65535,cookie=0xf5e000000000000,in_port={p},actions=output:5" in text["host"]
    assert not any("pkt_mark" in t for t in text["snic0"])
    # sNIC -> host now carries frames for vm1.eth0 and for secgw1.in (two flow ids): it stays
    # marked; host -> sNIC still carries one destination (l7fw1.in) and is unmarked
    more = virtual_rules(sc) + [Rule(Match.of(in_port=2), (ApplyActions((Output(5),)),), priority=100),
                                Rule(Match.of(in_port=3), (ApplyActions((Output(6),)),), priority=100)]
    topo2 = derive_topology(sc, {"secgw1": "host", "l7fw1": "snic0"})
    tr2 = translate(more, topo2)
    rules2, n2 = untag_single_destination(tr2.per_switch, tr2.groups, topo2)
    assert n2 == 1
    assert rules2["snic0"][1:] == tr2.per_switch["snic0"]  # one rule more: the link's arrivals go straight out
    assert format_rule(rules2["snic0"][0]).startswith(f"table=0,priority=65535,cookie=0xf5e000000000000,in_port={p},")
    snic_text = [format_rule(r) for r in rules2["snic0"]]
    assert sum("->pkt_mark" in t for t in snic_text) == 4  # every sNIC -> host hand-off keeps its mark
    assert f"table=0,priority=100,in_port=7,actions=output:{p}" in [format_rule(r) for r in rules2["host"]]
