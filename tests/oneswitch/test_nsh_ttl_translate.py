"""dec_nsh_ttl written into the action set and in group buckets, translated (issue 15):
the action set (and a group's buckets) run on the packet's ingress switch, so the
decrement runs there once, before the flow id's set_field and the PCIe output of a
written output to another switch; the far switch only delivers. The OVS oracle items
``write:dec_nsh_ttl`` and ``bucket:dec_nsh_ttl`` (a bounded run here; ``tandem bench
of13_oracle --items write:dec_nsh_ttl,bucket:dec_nsh_ttl`` for the full count)."""

import pytest

from tandem.oneswitch.translate import translate
from tandem.rules.ir import ApplyActions, DecNshTtl, GroupAction, Output, SetField, WriteActions
from tandem.rules.ofctl import parse_group, parse_rule

from test_of13_translation import TOPOS, assert_item_runs_as_ovs


def _dec_nsh_ttls(actions) -> int:
    return sum(type(a) is DecNshTtl for a in actions)


def test_a_written_output_to_another_switch_decrements_once_on_the_ingress_switch():
    topo = TOPOS["k3"]  # virtual port 1 on the host, 3 on snic0
    tr = translate([parse_rule("in_port=1,eth_type=0x894f,actions=write_actions(dec_nsh_ttl,output:3)")], topo)
    where = {sw: sum(_dec_nsh_ttls(i.actions) for r in rules for i in r.instructions
                     if isinstance(i, (ApplyActions, WriteActions))) for sw, rules in tr.per_switch.items()}
    assert where == {"host": 1, "snic0": 0, "snic1": 0}
    (copy,) = [r for r in tr.per_switch["host"] if any(isinstance(i, WriteActions) for i in r.instructions)]
    (written,) = [i.actions for i in copy.instructions if isinstance(i, WriteActions)]
    # the set runs dec_nsh_ttl before its set-fields (the flow id's among them) and the PCIe output
    assert type(written[0]) is DecNshTtl and isinstance(written[-1], Output)
    assert any(isinstance(a, SetField) for a in written)


def test_a_bucket_keeps_its_dec_nsh_ttl_on_the_ingress_switch():
    topo = TOPOS["k3"]
    g = parse_group("group_id=1,type=all,bucket=dec_nsh_ttl,output:3,bucket=output:4,dec_nsh_ttl")
    tr = translate([parse_rule("in_port=1,eth_type=0x894f,actions=group:1")], topo, [g])
    host_groups = [x for x in tr.groups["host"] if x.group_id == 1]
    assert [_dec_nsh_ttls(b.actions) for b in host_groups[0].buckets] == [1, 1]
    assert not any(_dec_nsh_ttls(b.actions) for sw in ("snic0", "snic1") for x in tr.groups[sw] for b in x.buckets)
    assert any(isinstance(a, GroupAction) for r in tr.per_switch["host"] for i in r.instructions
               if isinstance(i, ApplyActions) for a in i.actions)


@pytest.mark.ovs
@pytest.mark.parametrize("item", ["write:dec_nsh_ttl", "bucket:dec_nsh_ttl"])
def test_dec_nsh_ttl_item_runs_as_open_vswitch(item):
    # (seed 2 for the written form: drawn without groups since the merge, seed 4's sets sent 75 frames)
    assert_item_runs_as_ovs(item, seed=2 if item == "write:dec_nsh_ttl" else 4)
