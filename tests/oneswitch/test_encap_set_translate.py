"""The SFC encap pair split between apply-actions and the action set, translated
(rules/encap_set.py): the whole pipeline and its action set run on the ingress switch,
so the written encap(ethernet) runs there once, before the flow id's set_field and the
PCIe output of a written output to another switch; the far switch only delivers. The
OVS oracle item ``write:encap`` (a bounded run here; ``tandem bench of13_oracle --items
write:encap`` for the full count)."""

import pytest

from tandem.oneswitch.translate import translate
from tandem.rules.ir import ApplyActions, EncapEthernet, EncapNsh, Output, SetField, WriteActions
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS, assert_item_runs_as_ovs


def _count(actions, kind) -> int:
    return sum(type(a) is kind for a in actions)


def test_a_written_output_to_another_switch_closes_the_pair_on_the_ingress_switch():
    topo = TOPOS["k3"]  # virtual port 1 on the host, 3 on snic0
    tr = translate([parse_rule("in_port=1,actions=encap(nsh),set_field:0x55->nsh_spi,"
                               "write_actions(encap(ethernet),output:3)")], topo)
    for kind in (EncapNsh, EncapEthernet):
        where = {sw: sum(_count(i.actions, kind) for r in rules for i in r.instructions
                         if isinstance(i, (ApplyActions, WriteActions))) for sw, rules in tr.per_switch.items()}
        assert where == {"host": 1, "snic0": 0, "snic1": 0}, kind
    (copy,) = [r for r in tr.per_switch["host"] if any(isinstance(i, WriteActions) for i in r.instructions)]
    (written,) = [i.actions for i in copy.instructions if isinstance(i, WriteActions)]
    # the set runs encap(ethernet) before its set-fields (the flow id's among them) and the PCIe output
    assert type(written[0]) is EncapEthernet and isinstance(written[-1], Output)
    assert any(isinstance(a, SetField) for a in written)


@pytest.mark.ovs
def test_write_encap_item_runs_as_open_vswitch():
    assert_item_runs_as_ovs("write:encap", per_item=300)
