"""`tandem bench uno`: it times placement files given with --problem (not only
generated graphs), and checks both answers from their placements — a MILP
answer over a budget by HiGHS's tolerance is reported, not called a mismatch."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from tandem.placement.result import PlacementResult
from tandem.placement.uno.generate import random_graph_problem
from tandem.placement.uno.io import load_problem

BENCH = Path(__file__).resolve().parents[2] / "benches" / "uno.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_uno", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(p, path: Path) -> None:
    nodes = {}
    for n in p.nodes:
        d = {"kind": n.kind}
        if n.kind == "nf":
            d.update(host_use=dict(n.host_use), snic_use=dict(n.nic_use))
            if n.pin is not None:
                d["accelerated"] = n.pin
        elif n.kind == "port":
            d["snic"] = n.pin
        nodes[n.name] = d
    data = {"snics": {s.name: {"pcie_gbps": s.pcie_gbps, "capacity": dict(s.capacity)} for s in p.snics},
            "nodes": nodes, "edges": [{"from": e.src, "to": e.dst, "gbps": e.gbps} for e in p.edges]}
    path.write_text(json.dumps(data))


def test_bench_times_a_problem_file(tmp_path):
    f = tmp_path / "g.json"
    _write(random_graph_problem(60, seed=4), f)
    assert len(load_problem(f).nodes) == 60
    out = subprocess.run([sys.executable, str(BENCH), "--problem", str(f), "--milp-limit", "30"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "family files" in out.stdout and str(f) in out.stdout and "crashes: 0" in out.stdout
    assert "MISMATCH" not in out.stderr


def test_violations_are_exact_beyond_float_noise():
    bench = _bench()
    p = random_graph_problem(40, seed=2)
    a = p.arrays
    cap = p.snics[0].capacity["cores"]
    free = [a.names[i] for i in a.free]
    base = {n: ("host" if a.pin[i] < 0 else p.locations[a.pin[i]]) for i, n in enumerate(a.names)}
    # fill the sNIC node by node until the capacity is exceeded: the first overflow is reported
    used = sum(n.nic_use.get("cores", 0.0) for n in p.nodes if n.pin == p.snics[0].name)
    assign = dict(base)
    for name in free:
        assign[name] = p.snics[0].name
        used += next(n for n in p.nodes if n.name == name).nic_use["cores"]
        if used > cap:
            break
    r = PlacementResult("uno", "x", "optimal", 1.0, assign, 0.0, 0.0, {})
    v = bench.violations(p, r)
    assert "capacity[snic0,cores]" in v and "by " in v["capacity[snic0,cores]"]
    r_ok = PlacementResult("uno", "x", "optimal", 1.0, base, 0.0, 0.0, {})
    assert not any(k.startswith("capacity") for k in bench.violations(p, r_ok))


def test_place_warns_with_the_certified_gap_when_not_proven(monkeypatch):
    """A result stopped before its proof (time limit) prints a warning line
    with the certified gap on stderr, in table and JSON mode."""
    from typer.testing import CliRunner

    import tandem.placement.cli as pcli
    from tandem.cli import app

    stopped = PlacementResult("uno", "fast", "time_limit", 12.5, {"a": "host"}, 1.0, 3.2e-4, {})
    monkeypatch.setattr(pcli, "resolve", lambda problem: (lambda *a, **k: stopped))
    fig15 = str(Path(__file__).resolve().parents[2] / "examples" / "uno-fig15-dpi.yaml")
    for extra in ([], ["--json"]):
        r = CliRunner().invoke(app, ["place", "uno", fig15, *extra])
        assert r.exit_code == 0, r.output
        assert "warning: not proven optimal (time_limit); certified relative gap 3.20e-04" in r.output
