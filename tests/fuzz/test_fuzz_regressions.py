"""Inputs the fuzzers found that once escaped as internal errors (exit 4); each is now one
line with exit 2."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.testing.fuzz import UNO_PROBLEM

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _one_error(r, needle: str) -> None:
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_smartchain_capacity_zero(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text((REPO / "examples" / "smartchain-ids.yaml").read_text().replace(
        "host: {capacity: 200Mbps, latency: 800us}", "host: {capacity: 000Mbps, latency: 800us}"))
    _one_error(runner.invoke(app, ["place", "smartchain", str(f)]), "capacity: '000Mbps' — must be > 0")


def test_uno_edge_of_1e30_gbps(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(UNO_PROBLEM.replace("[aes1, dpi1, 4]", "[aes1, dpi1, 999999999999999999999999999999]"))
    _one_error(runner.invoke(app, ["place", "uno", str(f)]), "is too large (at most 1e+09)")


@pytest.mark.parametrize("rule,needle", [("eth_src=-2:00:00:00:00:06,actions=drop", "not a MAC address"),
                                         ("priority=1_0,actions=drop", "not an integer")])
def test_rule_values_int_would_take(tmp_path, rule, needle):
    f = tmp_path / "r.flows"
    f.write_text(rule + "\n")
    _one_error(runner.invoke(app, ["rules", "check", str(f)]), needle)


@pytest.mark.parametrize("text,needle", [
    ('switches: {host: {kind: host}}\nlinks: []\nports: {1: "host:1"}\n4: "host:2"\n', "4: unknown key"),
    ("switches: {host: {kind: host, 1: x, a: y}}\nports: {}\nlinks: []\n", "switches.host.1: unknown key"),
])
def test_topology_keys_of_mixed_types(tmp_path, text, needle):
    f = tmp_path / "t.yaml"
    f.write_text(text)
    r = runner.invoke(app, ["translate", "--topology", str(f), "--rules", str(REPO / "examples" / "oneswitch" / "rules.flows"),
                            "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and needle in r.output and "internal error" not in r.output, r.output


def test_uno_fast_with_no_free_nf_component(tmp_path):
    """Every NF without traffic (edges cut away): nothing to choose; fast and MILP agree on 0."""
    f = tmp_path / "p.yaml"
    f.write_text("snics: {snic0: {pcie_gbps: 32, capacity: {cores: 36}}}\n"
                 "nodes: {eth0: {kind: port}, vm1: {kind: vm}, aes1: {kind: nf, accelerated: true,"
                 " host_use: {cores: 3}, snic_use: {cores: 0.5}}}\n"
                 "edges: [[eth0, aes1, 4], [aes1, vm1, 4]]\n")
    import json

    out = {}
    for method in ("fast", "milp"):
        r = runner.invoke(app, ["place", "uno", str(f), "--method", method, "--json"])
        assert r.exit_code == 0, r.output
        out[method] = json.loads(r.stdout[r.stdout.index("{"):])
    assert out["fast"]["objective"] == pytest.approx(out["milp"]["objective"])
    assert out["fast"]["assignment"] == out["milp"]["assignment"]
