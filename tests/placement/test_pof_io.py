"""POF input files: each method answers through PlacementResult; bad input gets
an error naming the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.placement.pof.engine import METHODS, solve_fp_file, solve_fr_file
from tandem.placement.pof.model import PofInputError

FP = """\
params: {capacity: 2, tau_add_us: 100}
flows:
  - {id: a, rate_mbps: 1000, packet_bytes: 64}
  - {id: b, rate_mbps: 200, packet_bytes: 64}
  - {id: c, rate_mbps: 5000, kernel_mbps: 6000}
  - {id: d, rate_mbps: 9000, packet_bytes: 1024}
"""

FR = """\
params: {capacity: 2, tau_add_us: 100, tau_del_us: 100}
existing:
  - {id: a, rate_mbps: 100, packet_bytes: 64, offloaded: true}
  - {id: b, rate_mbps: 200, packet_bytes: 64, offloaded: true}
new:
  - {id: c, rate_mbps: 5000, packet_bytes: 64}
  - {id: d, rate_mbps: 9000, packet_bytes: 1024}
"""


def write(tmp_path: Path, text: str, name: str = "in.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("method", METHODS)
def test_fp_file_every_method(tmp_path: Path, method: str) -> None:
    r = solve_fp_file(write(tmp_path, FP), method)
    # a (64 B at 1 Gbps) and d (1 KiB at 9 Gbps) overload the kernel path; c does not
    if method == "milp-printed":
        assert set(r.assignment.values()) == {"kernel"}
    else:
        assert r.assignment == {"a": "snic", "b": "kernel", "c": "kernel", "d": "snic"}
        assert r.objective == pytest.approx(100 + 4 + 4 + 50 + 50)
    assert r.problem == "pof-fp" and r.method == method


def test_fr_file_exact_swaps_idle_flows_for_overloaded_new_ones(tmp_path: Path) -> None:
    r = solve_fr_file(write(tmp_path, FR))
    assert r.assignment == {"a": "kernel", "b": "kernel", "c": "snic", "d": "snic"}
    assert r.objective == pytest.approx(100 + 100 + 50 + 50 + 4 + 4)
    assert r.details["fixed_costs"] == "add+del" and r.gap == 0.0
    h = solve_fr_file(write(tmp_path, FR), "heuristic")
    assert h.objective >= r.objective


def test_json_and_generate_inputs(tmp_path: Path) -> None:
    r = solve_fp_file(write(tmp_path, '{"generate": {"flows": 5000, "seed": 3}}', "g.json"))
    assert r.details["flows"] == 5000 and r.details["offloaded"] == 4800
    r = solve_fr_file(write(tmp_path, "generate: {existing: 600, new: 400, seed: 1}\n"))
    assert r.details["existing"] == 600 and r.details["new"] == 400


@pytest.mark.parametrize("text, where, words", [
    ("flows:\n  - {id: a, rate_mbps: -5, packet_bytes: 64}\n", ":2:", ["flows[0].rate_mbps", "greater than 0"]),
    ("flows:\n  - {id: a, rate_mbps: 5}\n", ":2:", ["flows[0]", "packet_bytes", "kernel_mbps"]),
    ("flows:\n  - {id: a, rate_mbps: 5, packet_bytes: 64}\n  - {id: a, rate_mbps: 5, packet_bytes: 64}\n",
     ":3:", ["flows[1].id", "used twice"]),
    ("params: {capacity: -1}\nflows: []\n", ":1:", ["params.capacity"]),
    ("flows: [\n", ":", ["not valid YAML"]),
    ("generate: {flows: 3}\nflows: []\n", ":1:", ["either `flows` or `generate`"]),
])
def test_fp_errors_name_the_place(tmp_path: Path, text: str, where: str, words: list[str]) -> None:
    p = write(tmp_path, text)
    with pytest.raises(PofInputError) as e:
        solve_fp_file(p)
    msg = str(e.value)
    assert msg.startswith(str(p) + where)
    for w in words:
        assert w in msg


def test_fr_rejects_more_offloaded_flows_than_capacity(tmp_path: Path) -> None:
    text = "params: {capacity: 1}\nexisting:\n" + "".join(
        f"  - {{id: e{i}, rate_mbps: 100, packet_bytes: 64, offloaded: true}}\n" for i in range(2)) + "new: []\n"
    with pytest.raises(PofInputError, match=r"in\.yaml:3:\d+: existing: 2 existing flows are marked offloaded .*capacity = 1"):
        solve_fr_file(write(tmp_path, text))


def test_unknown_method(tmp_path: Path) -> None:
    with pytest.raises(PofInputError, match="unknown POF method 'fast'"):
        solve_fp_file(write(tmp_path, FP), "fast")
