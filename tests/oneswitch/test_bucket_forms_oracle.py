"""``clone``, ``check_pkt_larger`` and ``output(port=P,max_len=N)`` in a group bucket
against Open vSwitch 3.1, which runs a bucket as an action set, where the three do
nothing: dp-core against one bridge, and the translation against the virtual switch,
on chosen groups and on random rule sets whose groups hold them (a bounded run of
``tandem bench of13_oracle -- --items group_clone,group_check_trunc``)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_group, parse_rule
from tandem.testing.dataplane_oracle import OvsOracle
from tandem.testing.of13_oracle import GROUP_FORM_ITEMS, run_dp, run_translation

from test_of13_translation import TOPOS

pytestmark = pytest.mark.ovs
ITEMS = tuple(GROUP_FORM_ITEMS)
FRAME = bytes.fromhex("020000000002020000000006080045000014000000004006b5e70a0000010a000002") + bytes(26)
GROUPS = [
    # each would send a frame out of port 2 (or change eth_src) if it ran; only output:3 runs
    ("group_id=1,type=all,bucket=clone(output:2),output:3", {3: [FRAME]}),
    ("group_id=1,type=all,bucket=output:3,check_pkt_larger(0)->NXM_OF_ETH_SRC[0]", {3: [FRAME]}),
    ("group_id=1,type=all,bucket=output(port=2,max_len=20),output:3", {3: [FRAME]}),
    ("group_id=1,type=all,bucket=clone(set_field:02:00:00:00:00:09->eth_dst,output:2),bucket=output(port=2,max_len=14)", {}),
    # the bit check_pkt_larger would write is not set for the resubmitted lookup
    ("group_id=1,type=indirect,bucket=check_pkt_larger(0)->NXM_NX_REG0[0],resubmit(,1)", {4: [FRAME]}),
]
RULES = ["priority=1,in_port=1,actions=group:1", "table=1,priority=2,reg0=0x1/0x1,actions=output:2",
         "table=1,priority=1,actions=output:4"]


@pytest.mark.parametrize("group, want", GROUPS)
def test_the_forms_do_nothing_in_a_bucket_in_dp_core_as_in_open_vswitch(group, want):
    rules, groups = [parse_rule(r) for r in RULES], [parse_group(group)]
    sw = Switch([1, 2, 3, 4], 2, drop_malformed=False)
    sw.add_groups(groups)
    sw.add_rules(rules)
    got: dict[int, list[bytes]] = {}
    for port, frame in sw.process(1, FRAME):
        got.setdefault(port, []).append(frame)
    assert got == want
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        out = OvsOracle(sb).compare(rules, groups, [(1, FRAME)], 2)
    assert not out.mismatches, out.mismatches[0]


@pytest.mark.parametrize("group, want", GROUPS)
def test_the_forms_in_a_bucket_translate_as_the_virtual_switch_runs_them(group, want):
    from tandem.oneswitch.translate import translate
    from tandem.testing.oneswitch_oracle import Oracle

    topo = TOPOS["k3"]
    rules, groups = [parse_rule(r) for r in RULES], [parse_group(group)]
    tr = translate(rules, topo, groups)
    assert not any(type(a).__name__ in ("Clone", "CheckPktLarger", "OutputTrunc")
                   for gs in tr.groups.values() for g in gs for b in g.buckets for a in b.actions)
    with OvsSandbox() as sb:
        with Oracle(sb, topo) as o:
            o.load_virtual(rules, groups)
            o.load_translation(tr)
            rep = o.compare([(1, FRAME), (3, FRAME)])
    assert rep.outputs == len(want.get(3, want.get(4, []))) and not rep.mismatches, rep.mismatches[:1]


def test_dp_core_runs_random_groups_holding_the_forms_as_open_vswitch():
    with OvsSandbox() as sb:
        res = run_dp(sb, ITEMS, per_item=150, seed=5, set_size=75, packets_per_set=60)
    for item, r in res.items():
        assert r.item_rules >= 150 and r.frames > 40, item
        assert not r.mismatches, "\n".join(r.mismatches[:3])


def test_translation_of_random_groups_holding_the_forms_forwards_like_the_virtual_switch():
    with OvsSandbox() as sb:
        res = run_translation(sb, TOPOS, ITEMS, per_item=150, seed=5, set_size=75, per_port=12)
    for item, r in res.items():
        assert r.item_rules >= 150 and r.frames > 40, item
        assert not r.mismatches, "\n".join(r.mismatches[:3])
