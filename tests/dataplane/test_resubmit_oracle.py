"""Open vSwitch's resubmit, case by case: dp-core (the emulator's switch) and one
OVS 3.1 bridge must send the same frames, and both must send what each case
says OVS does (docs/rule-syntax.md "resubmit"): the in_port is changed for the
lookup only; the resubmitted rule's write-actions, clear-actions and goto act on
the packet's one action set and pipeline; a miss goes on with the next action;
a TTL exception ends the resubmitted rule only, ``exit`` everything; past 64
nested resubmits (to the same or an earlier table) or 4,096 lookups after the
first (resubmits and gotos, hit or miss) the packet is dropped whole, the
frames already sent included. Random rule sets: ``tandem bench of13_oracle --
--items resubmit``."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame, checksum16
from tandem.testing.dataplane_oracle import OvsOracle

pytestmark = pytest.mark.ovs

MAC = "set_field:02:00:00:00:00:99->eth_dst"


@pytest.fixture(scope="module")
def oracle():
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        yield OvsOracle(sb)


def _frame(ttl: int = 64) -> bytes:
    f = bytearray(build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1, udp_dst=2))
    f[22] = ttl
    f[24:26] = b"\0\0"
    f[24:26] = checksum16(bytes(f[14:34])).to_bytes(2, "big")
    return bytes(f)


# Sent after each case's frame, from port 4: when its copy is out, OVS is done with the case's frame
# (so a case that sends nothing is not judged before OVS has run it).
PROBE_RULE = "table=0,priority=65535,in_port=4,udp,tp_src=9,actions=output:2"
PROBE = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=9, udp_dst=2)


def _run(oracle, lines: list[str], frame: bytes, n_tables: int) -> dict[int, int]:
    """Frames out per port: dp-core's, checked equal to OVS's."""
    rules = [parse_rule(t) for t in lines]
    sw = Switch(oracle.ports, n_tables, drop_malformed=False)
    sw.add_rules(rules)
    ours: dict[int, list[bytes]] = {p: [] for p in oracle.ports}
    for port, out in sw.process(1, frame):
        ours[port].append(out)
    oracle._load([*rules, parse_rule(PROBE_RULE)], [])
    oracle.sb.appctl("revalidator/purge")
    theirs = oracle._send([(1, frame), (4, PROBE)], sum(len(v) for v in ours.values()) + 1)
    assert PROBE in theirs[2], "OVS did not run the probe frame"
    theirs[2].remove(PROBE)
    for p in oracle.ports:
        assert sorted(theirs[p]) == sorted(ours[p]), (p, lines[:3], theirs, ours)
    return {p: len(v) for p, v in ours.items() if v}


def test_in_port_changes_for_the_lookup_only(oracle):
    # the table-1 rule is found with in_port=3, but its output:IN_PORT goes back to port 1
    got = _run(oracle, ["in_port=1,actions=resubmit(3,1)", "table=1,in_port=3,actions=IN_PORT",
                        "table=1,in_port=1,actions=output:4"], _frame(), 2)
    assert got == {1: 1}


def test_resubmitted_rules_write_the_one_action_set_and_follow_their_gotos(oracle):
    got = _run(oracle, ["actions=resubmit(,1),output:2", "table=1,actions=write_actions(output:3),goto_table:2",
                        f"table=2,actions=write_actions({MAC})"], _frame(), 3)
    assert got == {2: 1, 3: 1}


def test_clear_actions_in_a_resubmitted_rule_empties_the_action_set(oracle):
    got = _run(oracle, ["actions=write_actions(output:2),goto_table:1", "table=1,actions=resubmit(,2),output:4",
                        "table=2,actions=clear_actions"], _frame(), 3)
    assert got == {4: 1}


def test_a_miss_goes_on_with_the_next_action(oracle):
    assert _run(oracle, ["actions=resubmit(,3),output:2"], _frame(), 4) == {2: 1}


def test_a_ttl_exception_ends_the_resubmitted_rule_only(oracle):
    got = _run(oracle, ["ip,actions=resubmit(,1),output:2", "table=1,ip,actions=dec_ttl,output:3"], _frame(ttl=1), 2)
    assert got == {2: 1}


def test_exit_in_a_resubmitted_rule_stops_the_caller_and_the_action_set(oracle):
    got = _run(oracle, ["actions=write_actions(output:4),goto_table:1", "table=1,actions=resubmit(,2),output:2",
                        "table=2,actions=output:3,exit"], _frame(), 3)
    assert got == {3: 1}


def _nested(n: int) -> list[str]:
    """n resubmits into table 0, each one level deeper (reg0 counts them), an output at each level."""
    return [f"reg0={k},actions=load:{k + 1}->NXM_NX_REG0[],output:2,resubmit(,0)" for k in range(n)] + \
        [f"reg0={n},actions=output:3"]


@pytest.mark.parametrize("n, sent", [(64, {2: 64, 3: 1}), (65, {})])
def test_64_nested_resubmits_run_and_the_65th_drops_the_packet_whole(oracle, n, sent):
    assert _run(oracle, _nested(n), _frame(), 1) == sent


def test_resubmits_to_later_tables_do_not_nest(oracle):
    lines = [f"table={t},actions=output:2,resubmit(,{t + 1})" for t in range(100)] + ["table=100,actions=output:3"]
    assert _run(oracle, lines, _frame(), 101) == {2: 100, 3: 1}


@pytest.mark.parametrize("b, goto, sent", [(63, False, {3: 1}), (63, True, {}), (64, False, {})])
def test_4096_lookups_run_and_the_next_drops_the_packet_whole(oracle, b, goto, sent):
    # 64 resubmits into table 1, each of whose rule resubmits b times into table 2 (empty: misses count too);
    # 64 + 64 * 63 = 4096 lookups after the first; a goto is one more lookup
    t0 = "actions=" + ",".join(["resubmit(,1)"] * 64) + (",goto_table:3" if goto else ",output:3")
    lines = [t0, "table=1,actions=" + ",".join(["resubmit(,2)"] * b), "table=3,actions=output:3"]
    assert _run(oracle, lines, _frame(), 4) == sent


@pytest.mark.parametrize("lines, sent", [
    # a written resubmit runs when neither group nor output is written ...
    (["actions=write_actions(resubmit(,1))", "table=1,actions=output:3"], {3: 1}),
    (["actions=write_actions(resubmit(,1),output:2)", "table=1,actions=output:3"], {2: 1}),
    # ... the last one written counts, and what the rule it finds writes never runs
    (["in_port=1,actions=write_actions(resubmit(,1)),goto_table:1", "table=1,in_port=1,actions=write_actions(resubmit(,2))",
      "table=2,actions=output:4,write_actions(output:3)"], {4: 1}),
    # ... and "its own table" is table 0, whatever table wrote it
    (["in_port=1,actions=goto_table:1", "in_port=2,actions=output:4", "table=1,in_port=1,actions=write_actions(resubmit:2)",
      "table=1,in_port=2,actions=output:3"], {4: 1}),
])
def test_a_written_resubmit_runs_as_open_vswitch_runs_it(oracle, lines, sent):
    assert _run(oracle, lines, _frame(), 3) == sent


def test_output_table_in_a_rule_is_a_nested_lookup_in_table_0(oracle):
    lines = ["reg0=0,actions=load:1->NXM_NX_REG0[],output:2,TABLE,output:4", "reg0=1,actions=output:3"]
    assert _run(oracle, lines, _frame(), 1) == {2: 1, 3: 1, 4: 1}
    # and it nests: a rule that outputs to TABLE and meets itself again runs into the limit
    assert _run(oracle, ["actions=output:2,TABLE"], _frame(), 1) == {}
