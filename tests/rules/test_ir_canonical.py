"""ir.canonical_rule: one representation across text and wire forms."""

from tandem.rules.ir import (
    OFPP_CONTROLLER, ApplyActions, GotoTable, Match, Output, Rule, WriteActions, canonical_rule,
)
from tandem.rules.ofctl import format_rule, parse_rule


def test_wire_style_max_len_and_empty_apply_normalize_to_the_text_form() -> None:
    wire_like = Rule(Match.of(in_port=1), (ApplyActions((Output(2, 0), Output(OFPP_CONTROLLER, 128))),
                                           WriteActions((Output(3, 0xFFE5),)), GotoTable(1)))
    text_form = parse_rule(format_rule(wire_like))
    assert text_form != wire_like
    assert canonical_rule(wire_like) == text_form
    assert canonical_rule(text_form) == text_form
    assert canonical_rule(Rule(instructions=(ApplyActions(()),))) == Rule()
    # CONTROLLER keeps its max_len
    assert canonical_rule(wire_like).apply_actions[1] == Output(OFPP_CONTROLLER, 128)
