"""`tandem place`: table and JSON output, and one-line errors with exit codes."""

import json
from pathlib import Path

from typer.testing import CliRunner

from tandem.cli import app

ROOT = Path(__file__).resolve().parents[2]
FIG15 = str(ROOT / "examples" / "uno-fig15-dpi.yaml")
runner = CliRunner()


def test_table_output():
    r = runner.invoke(app, ["place", "uno", FIG15])
    assert r.exit_code == 0, r.output
    for word in ("objective", "status", "optimal", "solve time", "gap", "fast", "dpi1"):
        assert word in r.output


def test_json_output_and_method():
    r = runner.invoke(app, ["place", "uno", FIG15, "--json", "--method", "milp", "--time-limit", "30"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["method"] == "milp" and d["status"] == "optimal"
    assert d["objective"] > 0 and len(d["assignment"]) == 29


def test_infeasible_names_binding_constraint(tmp_path):
    f = tmp_path / "tight.yaml"
    f.write_text("""\
snics: {snic0: {pcie_gbps: 2, capacity: {cores: 10}}}
nodes: {eth0: {kind: port}, vm1: {kind: vm}}
edges: [[eth0, vm1, 5]]
""")
    r = runner.invoke(app, ["place", "uno", str(f)])
    assert r.exit_code == 1
    assert "pcie[snic0,up]" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) <= 3  # one message (may wrap)


def test_bad_input_and_usage_errors(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("snics: {snic0: {pcie_gbps: 2}}\nnodes: {x: {kind: nf}}\nedges: []\n")
    r = runner.invoke(app, ["place", "uno", str(f)])
    assert r.exit_code == 2 and "nodes.x" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["place", "uno", str(tmp_path / "missing.yaml")])
    assert r.exit_code == 2 and "no such file" in r.output
    r = runner.invoke(app, ["place", "nosuch", FIG15])
    assert r.exit_code == 2 and "unknown problem" in r.output
    r = runner.invoke(app, ["place", "uno", FIG15, "--method", "magic"])
    assert r.exit_code == 2 and "unknown UNO method" in r.output
