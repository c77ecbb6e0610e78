"""docs/scenario-format.md documents every field of the schema (one source of truth, no drift)."""

from __future__ import annotations

import inspect
from pathlib import Path

from pydantic import BaseModel

from tandem.model import scenario

DOC = (Path(__file__).resolve().parents[2] / "docs" / "scenario-format.md").read_text(encoding="utf-8")


def test_every_schema_key_is_documented():
    models = [m for _, m in inspect.getmembers(scenario, inspect.isclass) if issubclass(m, BaseModel) and m.__module__ == scenario.__name__]
    assert len(models) > 15
    missing = [
        f"{m.__name__}.{f.alias or n}"
        for m in models
        for n, f in m.model_fields.items()
        if f"`{f.alias or n}`" not in DOC
    ]
    assert missing == []


def test_documented_error_lines_are_real():
    from tandem.model import ScenarioError, load_scenario

    fixture = Path(__file__).parent / "fixtures" / "broken-sdwan.yaml"
    try:
        load_scenario(fixture)
    except ScenarioError as e:
        for line in str(e).splitlines():
            rel = line.replace(str(fixture), "tests/model/fixtures/broken-sdwan.yaml")
            assert rel in DOC, rel
    else:  # pragma: no cover
        raise AssertionError("fixture should be invalid")
