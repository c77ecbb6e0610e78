"""Resubmits with another in_port, and hrw bundles / bundle_load of the host's ports,
homed on the host (``oneswitch/cross_port.py``): which ports move for such a rule or group (``extension.ports_to_extend``), what the
host's copies then hold, the ports going back when the last such rule or group goes,
and a bounded run of the OVS oracle (``tandem bench of13_oracle -- --items
resubmit_cross,group_resubmit_cross,bundle_host``: dp-core, and the translation in the endpoint's
order, before and after the releases, against one plain bridge).

Topology: virtual ports 1, 2 on the host, 3 on snic0, 4 on snic1."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.extension import EXT_PORT_BASE, ports_to_extend, release
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.translate import TranslationError
from tandem.rules.ofctl import parse_rule
from tandem.rules.ir import OFPP_IN_PORT, Bucket, FlowMod, Group, GroupAction, Output, Resubmit
from tandem.testing.ct_oracle import translate_as_endpoint
from tandem.testing.of13_oracle import run_dp, run_translation

from test_of13_translation import TOPOS
from test_resubmit_output_reg_translate import TOPO, rule

ITEMS = ("resubmit_cross", "group_resubmit_cross", "bundle_host")


@pytest.mark.parametrize("r, moved", [
    (rule(Resubmit(4, 1), in_port=3), [3, 4]),  # two sNICs: both to the host
    (rule(Resubmit(3, 1), in_port=1), [3]),  # the rule's own port is on the host already
    (rule(Resubmit(2, 1), in_port=1), []),  # one switch: nothing moves
    (rule(Resubmit(1, 1)), [3, 4]),  # a wildcard rule's copies run everywhere
    (rule(Resubmit(OFPP_IN_PORT, 1)), []),  # the packet's own in_port
    (rule(Resubmit(77, 1), in_port=3), []),  # no port has 77: still refused (below)
])
def test_the_ports_a_rule_resubmitting_with_another_in_port_moves(r, moved):
    assert ports_to_extend(OneSwitchState(TOPO), r) == moved


@pytest.mark.parametrize("text, moved", [
    ("in_port=3,actions=bundle(eth_src,0,hrw,ofport,members:1,2)", [3]),  # the host's members: the rule's port moves
    ("actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:1,LOCAL),output:1", [3, 4]),
    ("in_port=3,actions=bundle(eth_src,0,hrw,ofport,members:1,3)", []),  # a member on an sNIC: still refused (below)
    ("in_port=3,actions=bundle(eth_src,0,active_backup,ofport,members:1,4)", []),  # a fast-failover group: no move
])
def test_the_ports_a_bundle_of_the_hosts_ports_moves(text, moved):
    assert ports_to_extend(OneSwitchState(TOPO), parse_rule("priority=5," + text)) == moved


def test_a_bundle_with_a_member_on_an_snic_stays_refused():
    with pytest.raises(TranslationError, match="bundle.hrw. with member"):
        translate_as_endpoint(TOPO, [parse_rule("priority=5,in_port=4,actions=bundle(eth_src,0,hrw,ofport,members:1,3)")])


def test_a_group_resubmitting_with_another_in_port_moves_every_port():
    g = Group(1, "all", (Bucket((Resubmit(3, 2),)),))
    assert ports_to_extend(OneSwitchState(TOPO), None, [g]) == [3, 4]


def test_the_host_copy_names_the_host_end_and_the_ports_go_back_with_the_rule():
    r = rule(Resubmit(4, 1), in_port=3)
    state, _ = translate_as_endpoint(TOPO, [r, rule(table=1, in_port=4)])
    assert sorted(state.extensions) == [3, 4]
    end = state.extensions[4].hosted.port
    assert end >= EXT_PORT_BASE
    (copy,) = [c for c in state.translation().per_switch["host"] if c.table == 0 and c.priority == 100]
    assert Resubmit(end, 1) in copy.instructions[0].actions
    state.apply(FlowMod("delete_strict", r))
    release(state)
    assert state.extensions == {}


def _found_with_another_in_port():
    """Port 3 (snic0) resubmits with in_port 1 (host) into table 1, whose rule matching
    ``in_port=1`` then runs with the packet's own in_port (Open vSwitch restores it after
    the lookup) and resubmits with in_port 1 into table 2: the lookup sees 1 (output:2),
    not the packet's 3 (output:4). Measured on one OVS 3.1 bridge (below)."""
    return [rule(Resubmit(1, 1), in_port=3), rule(Resubmit(1, 2), table=1, in_port=1),
            rule(Output(2), table=2, in_port=1), rule(Output(4), table=2, priority=50)]


def test_a_rule_matching_the_port_it_resubmits_with_keeps_that_port_on_its_copy():
    state, _ = translate_as_endpoint(TOPO, _found_with_another_in_port())
    (copy,) = [c for c in state.translation().per_switch["host"] if c.table == 1 and c.priority == 100]
    assert Resubmit(TOPO.port_map[1].port, 2) in copy.instructions[0].actions  # (not resubmit(,2): in_port may be 3's)


@pytest.mark.ovs
def test_a_rule_found_with_another_in_port_resubmits_with_the_port_it_matches_as_open_vswitch():
    from tandem.rules.packets import build_frame
    from tandem.testing.ct_oracle import translation_vs_ovs

    frame = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1, udp_dst=2, payload=b"abcd")
    _, report = translation_vs_ovs(TOPO, _found_with_another_in_port(), [[(3, frame)]])
    assert not report.mismatches, "\n".join(map(str, report.mismatches))
    assert report.outputs == 1 and set(report.expected_by_port) == {2}


def test_a_bucket_resubmit_names_the_host_end_there_and_is_left_out_where_no_pipeline_runs():
    g = Group(1, "all", (Bucket((Resubmit(3, 2),)),))
    state, _ = translate_as_endpoint(TOPO, [rule(GroupAction(1))], [g])
    tr = state.translation()
    (host,) = [x for x in tr.groups["host"] if x.group_id == 1]
    assert host.buckets[0].actions == (Resubmit(state.extensions[3].hosted.port, 2),)
    for sw in ("snic0", "snic1"):  # (no virtual port's pipeline there: nothing applies the group)
        assert all(not b.actions for x in tr.groups[sw] if x.group_id == 1 for b in x.buckets)


def test_a_resubmit_naming_no_port_stays_refused():
    with pytest.raises(TranslationError, match="no port has that number"):
        translate_as_endpoint(TOPO, [rule(Resubmit(77, 1), in_port=3)])
    with pytest.raises(TranslationError, match="another in_port"):
        translate_as_endpoint(TOPO, [], [Group(1, "all", (Bucket((Resubmit(77, 2),)),))])


@pytest.mark.ovs
def test_dp_core_runs_resubmits_with_another_in_port_as_open_vswitch():
    with OvsSandbox() as sb:
        res = run_dp(sb, ITEMS, per_item=40, seed=5, set_size=40, packets_per_set=40)
    for item, r in res.items():
        assert r.item_rules >= 40 and r.frames > 10, item
        assert not r.mismatches, "\n".join(r.mismatches[:3])


@pytest.mark.ovs
def test_the_homed_translation_and_the_releases_forward_like_the_virtual_switch():
    with OvsSandbox() as sb:
        res = run_translation(sb, TOPOS, ITEMS, per_item=40, seed=5, set_size=40, per_port=6)
    for item, r in res.items():
        assert r.item_rules >= 40 and r.frames > 10, item
        assert not r.mismatches, "\n".join(r.mismatches[:3])
