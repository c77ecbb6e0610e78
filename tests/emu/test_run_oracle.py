"""`tandem run` against the OVS oracle: the frames leaving every external port of
the rule-driven emulated machine (OneSwitch-translated rules in dp-core pipelines
on host and sNICs, PCIe, NFs at their places) equal, per port as multisets, those
of the same virtual rules on one real OVS bridge with the NFs as pass-through
patch pairs. Every example scenario (its chains compiled to rules, at the
placement the run decides and with every NF that can run there on the host), and seeded random
scenarios with >= 500 virtual rules (bounded here; `tandem bench run_oracle`
runs 20)."""

from pathlib import Path

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.run_oracle import compare, random_case, scenario_packets
from tandem.model.load import load_scenario
from tandem.oneswitch.scenario import virtual_rules
from tandem.placement.from_scenario import decide
from tandem.rules.ir import WriteActions

pytestmark = [pytest.mark.ovs]

EXAMPLES = sorted(Path(__file__).resolve().parents[2].joinpath("examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def sb():
    with OvsSandbox() as s:
        s.vsctl("set", "Open_vSwitch", ".", "other_config:vlan-limit=2")
        yield s


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_matches_one_ovs_bridge(sb, path):
    sc = load_scenario(path)
    rules = virtual_rules(sc)
    packets = scenario_packets(sc, rules)
    decided = decide(sc).placement
    # and every NF that can run on the host moved there (the traffic then crosses PCIe)
    host = {n: sc.host_id if sc.nf_types[i.type].profile_for(sc.host_id, "host") else decided[n] for n, i in sc.nfs().items()}
    for i, placement in enumerate([decided] + ([host] if host != decided else [])):
        rep = compare(sb, sc, placement, rules, [], packets, bridge=f"ex{EXAMPLES.index(path)}p{i}")
        assert rep.mismatches == 0, [(d.name, len(d.missing), len(d.extra)) for d in rep.diffs]
        if rules:
            assert rep.frames_out > 0  # the chains really carried frames to the outside


# (seed, whether frames leave with two VLAN tags: the rules push tags before and after the NFs,
# and a double-tagged frame crosses PCIe whole since the flow id travels in the packet mark)
@pytest.mark.parametrize("seed, double_tagged", [(11, True), (12, False), (13, True)])
def test_random_scenarios_with_500_rules_match_one_ovs_bridge(sb, seed, double_tagged):
    sc, placement, rules, groups, packets = random_case(seed, 500)
    assert len(rules) >= 500
    rep = compare(sb, sc, placement, rules, groups, packets, bridge=f"rnd{seed}")
    assert rep.frames_out > 50
    assert (rep.two_tags > 100) == double_tagged
    assert rep.mismatches == 0, [(d.name, [f.hex() for f in d.missing[:2]], [f.hex() for f in d.extra[:2]]) for d in rep.diffs]


def test_last_tables_and_action_sets_match_one_ovs_bridge(sb):
    """The stages in the last tables Open vSwitch offers (up to 253, gotos to its own
    254), groups and outputs written in different tables, outputs to port numbers no
    port has: what OneSwitch once refused, through the emulated machine."""
    sc, placement, rules, groups, packets = random_case(14, 500, last_tables=True,
                                                       features=frozenset({"action_sets", "wild_ports"}))
    assert max(r.table for r in rules) == 253 and sum(r.goto == 254 for r in rules) >= 10
    assert sum(isinstance(i, WriteActions) for r in rules for i in r.instructions) >= 100
    rep = compare(sb, sc, placement, rules, groups, packets, bridge="last")
    assert rep.frames_out > 50
    assert rep.mismatches == 0, [(d.name, [f.hex() for f in d.missing[:2]], [f.hex() for f in d.extra[:2]]) for d in rep.diffs]


def test_the_oracle_sees_a_wrong_translation(sb):
    # A run whose rules differ from the reference's (one output moved) must be caught.
    from tandem.testing import run_oracle
    from tandem.rules.ir import ApplyActions, Output, Rule

    sc = load_scenario(EXAMPLES[[p.stem for p in EXAMPLES].index("uno-sdwan")])
    rules = virtual_rules(sc)
    packets = scenario_packets(sc, rules)
    wrong = [Rule(r.match, (ApplyActions((Output(2),)),), r.table, r.priority) if r.match.get("in_port").value == 9 else r
             for r in rules]
    ours = run_oracle.emulate(sc, decide(sc).placement, wrong, [], packets)
    ref = run_oracle.reference(sb, sc, rules, [], packets, bridge="wrong")
    assert ours != ref
