"""The SFC decap pair split between apply-actions and the action set, translated
(rules/decap_set.py): the whole pipeline and its action set run on the ingress switch,
so the written decap() runs there once, before the flow id's set_field and the PCIe
output of a written output to another switch; the far switch only delivers the inner
frame. The OVS oracle item ``write:decap`` (a bounded run here; ``tandem bench
of13_oracle --items write:decap`` for the full count)."""

import pytest

from tandem.oneswitch.translate import translate
from tandem.rules.ir import ApplyActions, Decap, Output, SetField, WriteActions
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS, assert_item_runs_as_ovs


def test_a_written_output_to_another_switch_runs_the_pair_on_the_ingress_switch():
    topo = TOPOS["k3"]  # virtual port 1 on the host, 3 on snic0
    tr = translate([parse_rule("in_port=1,eth_type=0x894f,nsh_np=3,actions=decap(),write_actions(decap(),output:3)")],
                   topo)
    where = {sw: sum(type(a) is Decap for r in rules for i in r.instructions
                     if isinstance(i, (ApplyActions, WriteActions)) for a in i.actions)
             for sw, rules in tr.per_switch.items()}
    assert where == {"host": 2, "snic0": 0, "snic1": 0}
    (copy,) = [r for r in tr.per_switch["host"] if any(isinstance(i, WriteActions) for i in r.instructions)]
    (written,) = [i.actions for i in copy.instructions if isinstance(i, WriteActions)]
    # the set runs decap() before its set-fields (the flow id's among them) and the PCIe output
    assert any(type(a) is Decap for a in written) and isinstance(written[-1], Output)
    assert any(isinstance(a, SetField) for a in written)


@pytest.mark.ovs
def test_write_decap_item_runs_as_open_vswitch():
    assert_item_runs_as_ovs("write:decap", per_item=400)
