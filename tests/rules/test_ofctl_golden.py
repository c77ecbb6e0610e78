"""Golden files: tests/rules/golden/*.flows and *.groups (as typed) -> *.expected (canonical).

To accept an intentional printer change, regenerate with
``TANDEM_UPDATE_GOLDEN=1 pytest tests/rules/test_ofctl_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tandem.rules.ofctl import format_group, format_rule, parse_flows, parse_group, parse_rule

GOLDEN = Path(__file__).parent / "golden"
INPUTS = sorted(GOLDEN.glob("*.flows"))
GROUP_INPUTS = sorted(GOLDEN.glob("*.groups"))


def test_there_are_golden_inputs() -> None:
    assert INPUTS and GROUP_INPUTS


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


@pytest.mark.parametrize("path", GROUP_INPUTS, ids=lambda p: p.name)
def test_golden_groups(path: Path) -> None:
    lines = [ln.split("#", 1)[0] for ln in path.read_text().splitlines()]
    printed = "".join(format_group(parse_group(ln, path.name, n)) + "\n" for n, ln in enumerate(lines, 1) if ln.strip())
    expected_path = path.with_suffix(".expected")
    if os.environ.get("TANDEM_UPDATE_GOLDEN"):
        expected_path.write_text(printed)
    assert printed == expected_path.read_text()
    for line in printed.splitlines():
        assert format_group(parse_group(line)) == line
