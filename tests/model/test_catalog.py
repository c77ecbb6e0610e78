"""NF presets: the papers' calibration, identical to the examples, overridable key by key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.model import load_scenario
from tandem.model.catalog import PRESETS, deep_merge
from tandem.model.scenario import NfType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_preset_is_a_valid_nf_type():
    for name in PRESETS:
        t = NfType.model_validate({"preset": name})
        assert set(t.cost) == {"host", "snic"}


@pytest.mark.parametrize(
    "example,type_id,preset",
    [
        ("uno-sdwan.yaml", "l7fw", "uno.l7fw"),
        ("uno-sdwan.yaml", "secgw", "uno.secgw"),
        ("uno-fig15-dpi.yaml", "dpi", "uno.dpi"),
        *[("smartchain-ids.yaml", n, f"smartchain.{n}") for n in
          ("header_classifier", "logger", "monitor", "payload_analyzer", "alert", "load_balancer")],
    ],
)
def test_presets_match_the_examples(example, type_id, preset):
    written = load_scenario(EXAMPLES / example).nf_types[type_id]
    from_preset = NfType.model_validate({"preset": preset})
    for field in ("cost", "reads", "writes", "state", "effective_actions"):
        assert getattr(from_preset, field) == getattr(written, field), field


def test_override_is_key_by_key():
    t = NfType.model_validate({"preset": "smartchain.monitor", "cost": {"snic": {"latency": "1us"}}, "state": "none"})
    assert t.cost["snic"].latency == 1e-6
    assert t.cost["snic"].capacity == 3.2e9  # kept from Table I
    assert t.cost["host"].latency == pytest.approx(4e-6)
    assert t.state == "none"


def test_deep_merge():
    assert deep_merge({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"c": 3}, "l": [2]}) == {"a": {"b": 1, "c": 3}, "l": [2]}
