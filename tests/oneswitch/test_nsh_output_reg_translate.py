"""output_reg of an NSH field, translated (rule_analysis.output_reg_port): where the rule
fixes the number (its match pins the bits, or a set_field before it writes them) the
action becomes the output to that virtual port on its switch; a number only known at
run time is refused (the per-value split takes registers only: output_reg_split.py).
The OVS oracle item ``nsh_output_reg`` (a bounded run here; ``tandem bench of13_oracle --
--items nsh_output_reg`` for the full count)."""

import pytest

from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.translate import translate
from tandem.rules.ir import ApplyActions, OutputReg
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS, assert_item_runs_as_ovs


def _output_regs(rules) -> list:
    return [a for r in rules for i in r.instructions if isinstance(i, ApplyActions) for a in i.actions
            if type(a) is OutputReg]


@pytest.mark.parametrize("text", ["in_port=1,eth_type=0x894f,nsh_si=3,actions=output:NXOXM_NSH_SI[]",
                                  "in_port=1,eth_type=0x894f,actions=set_field:0x30000->nsh_c1,output:NXOXM_NSH_C1[16..31]"])
def test_a_fixed_number_becomes_the_output(text):
    tr = translate([parse_rule(text)], TOPOS["k3"])  # (virtual port 3 on snic0)
    assert not any(_output_regs(rules) for rules in tr.per_switch.values())
    assert tr.per_switch["snic0"]  # (the frame crosses PCIe to port 3's switch)


def test_a_number_known_at_run_time_is_refused():
    with pytest.raises(TranslationError, match="only a register.s .* is split into per-value copies"):
        translate([parse_rule("in_port=1,eth_type=0x894f,actions=output:NXOXM_NSH_C1[0..15]")], TOPOS["k3"])


@pytest.mark.ovs
def test_random_nsh_output_regs_run_as_ovs():
    assert_item_runs_as_ovs("nsh_output_reg")
