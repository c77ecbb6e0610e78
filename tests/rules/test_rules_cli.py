"""`tandem rules check|fmt|gen`: exit codes, error lines, no tracebacks."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tandem.cli import app
from tandem.rules.ofctl import parse_flows, parse_group

runner = CliRunner()
GOLDEN = Path(__file__).parent / "golden"


def test_check_reports_every_bad_line(tmp_path: Path) -> None:
    bad = tmp_path / "v.flows"
    bad.write_text("actions=drop\nip,nw_srcc=1,actions=drop\n# comment\ntp_dst=80,actions=drop\n")
    res = runner.invoke(app, ["rules", "check", str(bad), str(GOLDEN / "ofctl-basics.flows")])
    assert res.exit_code == 2
    assert f"{bad}:2:4: unknown field 'nw_srcc' (did you mean nw_src?)" in res.stderr
    assert f"{bad}:4:1: tp_dst needs a transport protocol" in res.stderr
    n = len((GOLDEN / "ofctl-basics.expected").read_text().splitlines())
    assert f"ofctl-basics.flows: {n} rules OK" in res.stdout
    assert "Traceback" not in res.output


def test_check_missing_file_exits_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["rules", "check", str(tmp_path / "none.flows")])
    assert res.exit_code == 2 and "cannot read" in res.stderr


def test_fmt_prints_the_golden_canonical_form() -> None:
    res = runner.invoke(app, ["rules", "fmt", str(GOLDEN / "ofctl-basics.flows")])
    assert res.exit_code == 0
    assert res.stdout == (GOLDEN / "ofctl-basics.expected").read_text()


def test_gen_is_seeded_and_writes_groups(tmp_path: Path) -> None:
    out = tmp_path / "g.groups"
    args = ["rules", "gen", "--count", "50", "--seed", "3", "--tables", "3", "--groups", "2", "--groups-out", str(out)]
    first, second = runner.invoke(app, args), runner.invoke(app, args)
    assert first.exit_code == 0 and first.stdout == second.stdout
    assert len(parse_flows(first.stdout)) == 50
    assert [parse_group(line).group_id for line in out.read_text().splitlines()] == [1, 2]
    assert runner.invoke(app, ["rules", "fmt", str(out)]).stdout == out.read_text()


def test_gen_rejects_unknown_feature() -> None:
    res = runner.invoke(app, ["rules", "gen", "--without", "colour"])
    assert res.exit_code == 2 and "unknown feature 'colour'" in res.stderr
