"""`tandem translate` reports progress through large rule files (reading, then translating)."""

import random
from pathlib import Path

from tandem.oneswitch.cli import PROGRESS_EVERY, run_translate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "oneswitch"


def test_progress_is_called_through_both_phases(tmp_path):
    rng = random.Random(1)
    n = 3 * PROGRESS_EVERY + 5
    lines = []
    for i in range(n):
        a, b = rng.sample([1, 2, 3, 4], 2)
        lines.append(f"priority={1 + i},in_port={a},dl_dst=02:00:00:00:{(i >> 8) & 255:02x}:{i & 255:02x},actions=output:{b}")
    f = tmp_path / "v.flows"
    f.write_text("\n".join(lines) + "\n")
    seen = []
    summary = run_translate(EXAMPLES / "topology.yaml", f, tmp_path / "o", progress=lambda *a: seen.append(a))
    assert summary["virtual"] == n
    assert [s for s in seen if s[0] == "reading"] == [("reading", k * PROGRESS_EVERY, n) for k in (1, 2, 3)]
    assert [s for s in seen if s[0] == "translating"] == [("translating", k * PROGRESS_EVERY, n) for k in (1, 2, 3)]
