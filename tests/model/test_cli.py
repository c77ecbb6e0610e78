"""`tandem validate` and `tandem demo`: exit codes, one line per problem, no tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from tandem.cli import app

ROOT = Path(__file__).resolve().parents[2]
BROKEN = Path(__file__).parent / "fixtures" / "broken-sdwan.yaml"
runner = CliRunner()


def test_validate_ok_one_line_per_file():
    files = [str(p) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    r = runner.invoke(app, ["validate", *files])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(files)
    assert all(line.startswith("OK ") for line in lines)


def test_validate_broken_lists_each_problem_on_stderr():
    r = runner.invoke(app, ["validate", str(BROKEN)])
    assert r.exit_code == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 4
    for path in ("devices.snic0.cores: -4", "links.pcie0.bandwidth: '32ms'", "nf_types.l7fw.colour", "instances.fw1.type"):
        assert sum(path in line for line in lines) == 1, (path, lines)
    assert "Traceback" not in r.stderr


def test_validate_missing_file_exits_2_even_with_other_errors():
    r = runner.invoke(app, ["validate", str(BROKEN), "no/such/file.yaml", str(ROOT / "examples" / "uno-sdwan.yaml")])
    assert r.exit_code == 2
    assert "no/such/file.yaml: no such file" in r.stderr
    assert r.stdout.startswith("OK ")


def test_demo_default_summarises_sdwan():
    r = runner.invoke(app, ["demo"], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    for needle in ("uno-sdwan", "Devices", "snic0", "PCIe links", "32 Gbps", "NF types", "secgw", "l7fw",
                   "Chains", "snic0.eth0 → secgw1 → l7fw1 → vm1.eth0", "Traffic", "6.0 cores", "8.0 cores"):
        assert needle in out, needle


def test_demo_other_scenario_and_broken():
    r = runner.invoke(app, ["demo", str(ROOT / "examples" / "smartchain-ids.yaml")], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "classifier→analyzer (20%)" in r.stdout
    r = runner.invoke(app, ["demo", str(BROKEN)])
    assert r.exit_code == 2 and "devices.snic0.cores" in r.stderr


def test_real_entry_point_has_no_traceback():
    exe = Path(sys.executable).with_name("tandem")
    p = subprocess.run([str(exe), "validate", str(BROKEN)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert len(p.stderr.splitlines()) == 4 and "Traceback" not in p.stderr
