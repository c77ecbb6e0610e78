"""One loader, one error shape: a typo in any input file - scenario, OneSwitch
topology, UNO placement problem, SmartChain placement problem, rules file -
gives `FILE:LINE:COL: PATH: message` on stderr and exit code 2 from the command
that reads it, never a traceback."""

import re
from pathlib import Path

from typer.testing import CliRunner

from tandem.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def check(r, f: Path, line: int, path: str, words: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    m = re.search(rf"{re.escape(str(f))}:{line}:(\d+): {re.escape(path)}: ", r.output)
    assert m, r.output
    assert words in r.output, r.output


def test_scenario_typo(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text((ROOT / "examples" / "uno-sdwan.yaml").read_text().replace("    cores: 36 ", "    coress: 36 "))
    line = f.read_text().splitlines().index(next(ln for ln in f.read_text().splitlines() if "coress:" in ln)) + 1
    for cmd in (["run", str(f), "--out", str(tmp_path / "o")], ["validate", str(f)], ["rules", "from-chains", str(f)],
                ["translate", "--scenario", str(f), "--out", str(tmp_path / "t")], ["place", "uno", "--scenario", str(f)]):
        check(runner.invoke(app, cmd), f, line, "devices.snic0.coress", "unknown key (did you mean 'cores'?)")


def test_topology_typo(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text((ROOT / "examples" / "oneswitch" / "topology.yaml").read_text().replace("snic1: {kind: snic}", "snic1: {kind: snik}"))
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "snik" in ln)
    r = runner.invoke(app, ["translate", "--topology", str(f), "--rules", str(ROOT / "examples" / "oneswitch" / "rules.flows"),
                            "--out", str(tmp_path / "o")])
    check(r, f, line, "switches.snic1.kind", "expected host or snic")
    r = runner.invoke(app, ["serve", "--topology", str(f), "--listen", "ptcp:0", "--backend", "fake"])
    check(r, f, line, "switches.snic1.kind", "expected host or snic")


def test_uno_problem_typo(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("snics: {snic0: {pcie_gbps: 2, capacity: {cores: 10}}}\nnodes:\n  eth0: {kind: port}\n  vm1: {kind: vmm}\n"
                 "edges: [[eth0, vm1, 1]]\n")
    check(runner.invoke(app, ["place", "uno", str(f)]), f, 4, "nodes.vm1.kind", "vmm")


def test_smartchain_problem_typo(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("graphs:\n  - name: g\n    throughput_mbps: 100\n    elements:\n      - {name: a, kind: header_classifier}\n"
                 "      - {name: b, kind: header_classifer}\n")
    check(runner.invoke(app, ["place", "smartchain", str(f)]), f, 6, "graphs[0].elements[1].kind", "unknown kind")


def test_rules_file_typo(tmp_path):
    f = tmp_path / "v.flows"
    f.write_text("priority=1,in_port=1,actions=output:2\n\npriority=2,ip,nw_dts=10.0.0.1,actions=drop\n")
    check(runner.invoke(app, ["rules", "check", str(f)]), f, 3, "nw_dts", "unknown field 'nw_dts'")
    # and as the scenario's rules file
    s = tmp_path / "s.yaml"
    s.write_text((ROOT / "examples" / "uno-sdwan.yaml").read_text() + "rules: v.flows\n")
    check(runner.invoke(app, ["run", str(s), "--out", str(tmp_path / "o")]), f, 3, "rules", "unknown field 'nw_dts'")
