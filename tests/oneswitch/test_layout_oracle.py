"""OVS oracle for what OneSwitch used to refuse and Open vSwitch accepts: tables
252 and 253 (and a goto to Open vSwitch's own table 254), in_port and outputs
naming a port number no port has, LOCAL in and out, FLOOD/ALL/IN_PORT/
CONTROLLER/LOCAL written into the action set, and groups and outputs written
in different tables (a written group must beat a later written output).
Random rule sets, frames at every virtual port and at LOCAL, compared byte
for byte (and packet-ins) against one reference bridge."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import translate
from tandem.rules.generate import ACTION_SET_FEATURES, LAST_TABLES, spread_tables
from tandem.rules.ir import OFPP_LOCAL, GroupAction, Output, Rule, WriteActions
from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets
from test_oneswitch_oracle import TOPOS as ORACLE_TOPOS

pytestmark = [pytest.mark.ovs]

TOPOS = {**{k: ORACLE_TOPOS[k] for k in ("k3", "k2", "transit")},
         "one": Topology.build({"h": "host"}, [], {1: "h:1", 2: "h:2", 3: "h:3"})}
def group_then_output(rules: list[Rule]) -> int:
    """Rules that write an output in a table after one where some rule writes a group
    and goes on: the translator's old section 7 refusal."""
    def written(r, kind):
        return any(isinstance(a, kind) for i in r.instructions if isinstance(i, WriteActions) for a in i.actions)
    first = min((r.table for r in rules if written(r, GroupAction) and r.goto is not None), default=999)
    return sum(1 for r in rules if r.table > first and written(r, Output))


@pytest.fixture(scope="module")
def sb():
    with OvsSandbox() as s:
        yield s


@pytest.mark.parametrize("topo_name, seed", [("k3", 21), ("k2", 22), ("transit", 23), ("one", 24)])
def test_tables_wild_ports_local_and_action_sets_forward_like_one_bridge(sb, topo_name, seed):
    topo = TOPOS[topo_name]
    rng = random.Random(seed)
    refused: list[str] = []
    drawn, groups = oracle_ruleset(rng, 300, topo, tables=4, n_groups=3, features=ACTION_SET_FEATURES, refused=refused)
    assert refused == []  # nothing the generator draws is refused any more
    rules = spread_tables(rng, drawn)  # tables 0, 1, 252, 253 and gotos to 254
    assert {r.table for r in rules} == set(LAST_TABLES) and sum(r.goto == 254 for r in rules) >= 10
    assert group_then_output(rules) >= 10
    tr = translate(rules, topo, groups)
    packets = random_packets(rng, rules, topo, per_port=40)
    packets += [(OFPP_LOCAL, f) for _, f in packets[::len(topo.port_map)]]  # frames from the host's own port too
    with Oracle(sb, topo, packet_in=True) as o:
        o.load_virtual(rules, groups)
        o.load_translation(tr)
        report = o.compare(packets)
    assert report.outputs > report.packets // 4
    assert not report.mismatches, "\n".join(str(m) for m in report.mismatches[:3])
    assert not report.packet_in_mismatches, "\n".join(report.packet_in_mismatches[:3])
    assert report.expected_by_port[OFPP_LOCAL] > 0  # LOCAL really receives (FLOOD, ALL, output:LOCAL)
