"""Golden files: tests/rules/golden/*.flows (as typed) -> *.expected (canonical).

To accept an intentional printer change, regenerate with
``TANDEM_UPDATE_GOLDEN=1 pytest tests/rules/test_ofctl_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tandem.rules.ofctl import format_rule, parse_flows, parse_rule

GOLDEN = Path(__file__).parent / "golden"
INPUTS = sorted(GOLDEN.glob("*.flows"))


def test_there_are_golden_inputs() -> None:
    assert INPUTS


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_golden_canonical_output(path: Path) -> None:
    printed = "".join(format_rule(r) + "\n" for r in parse_flows(path.read_text(), path.name))
    expected_path = path.with_suffix(".expected")
    if os.environ.get("TANDEM_UPDATE_GOLDEN"):
        expected_path.write_text(printed)
    assert printed == expected_path.read_text()


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_canonical_output_is_a_fixed_point(path: Path) -> None:
    for line in path.with_suffix(".expected").read_text().splitlines():
        assert format_rule(parse_rule(line)) == line
