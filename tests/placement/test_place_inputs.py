"""`tandem place` on inputs of the wrong kind or with a mistake the schema alone
does not catch: one line naming the file (and line:col) and what is wrong,
exit 1; never a traceback, never a MemoryError."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.placement.errors import PlacementError, PlacementInfeasible, PlacementInputError
from tandem.placement.kinds import guess_kind

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

FILES = {
    "uno": "snics: {snic0: {pcie_gbps: 10, capacity: {cores: 10}}}\nnodes: {eth0: {kind: port}, vm1: {kind: vm}}\n"
           "edges: [[eth0, vm1, 1]]\n",
    "smartchain": "graphs:\n  - {name: g, throughput_mbps: 100, elements: [{name: a, kind: monitor}]}\n",
    "pof-fp": "params: {capacity: 2}\nflows:\n  - {id: a, rate_mbps: 1000, packet_bytes: 64}\n",
    "pof-fr": "params: {capacity: 2}\nexisting: []\nnew:\n  - {id: a, rate_mbps: 1000, packet_bytes: 64}\n",
}


def place(tmp_path: Path, kind: str, text: str, *extra: str):
    f = tmp_path / "in.yaml"
    f.write_text(text)
    return runner.invoke(app, ["place", kind, str(f), *extra])


@pytest.mark.parametrize("actual", sorted(FILES))
@pytest.mark.parametrize("asked", sorted(FILES))
def test_wrong_kind_names_the_kind_it_looks_like(tmp_path, actual, asked):
    assert guess_kind(__import__("yaml").safe_load(FILES[actual])) == actual
    r = place(tmp_path, asked, FILES[actual])
    if asked == actual:
        assert r.exit_code == 0, r.output
        return
    assert r.exit_code == 2, r.output
    assert f"looks like a {actual} problem" in r.output and f"tandem place {actual}" in r.output
    assert "Traceback" not in r.output and "Extra inputs" not in r.output


def test_a_scenario_given_to_pof_says_it_is_a_scenario(tmp_path):
    r = runner.invoke(app, ["place", "pof-fp", str(ROOT / "examples" / "uno-fig15-dpi.yaml")])
    assert r.exit_code == 2 and "looks like a Tandem scenario" in r.output


def test_empty_snics_says_no_snic(tmp_path):
    r = place(tmp_path, "uno", "snics: {}\nnodes: {eth0: {kind: port}, vm1: {kind: vm}}\nedges: [[eth0, vm1, 5]]\n")
    assert r.exit_code == 2
    assert "in.yaml:1:8: snics: no sNIC is given" in r.output and "several sNICs" not in r.output


def test_declared_resource_no_node_uses_is_reported(tmp_path):
    r = place(tmp_path, "uno", "resources: [cores, mem]\nsnics: {snic0: {pcie_gbps: 10, capacity: {cores: 10}}}\n"
              "nodes: {eth0: {kind: port}, vm1: {kind: vm}, f: {kind: nf, host_use: {cores: 1}, snic_use: {cores: 2}}}\n"
              "edges: [[eth0, f, 5], [f, vm1, 5]]\n")
    assert r.exit_code == 2
    assert "in.yaml:1:20: resources[1]: resource 'mem' is declared but no node uses it" in r.output


@pytest.mark.parametrize("kind,gen,where", [("pof-fp", "generate:\n  flows: 1000000000000\n", "in.yaml:3:10: generate.flows"),
                                            ("pof-fr", "generate:\n  existing: 10\n  new: 1000000000000\n",
                                             "in.yaml:4:8: generate.new")])
def test_huge_generated_pof_instance_is_refused_at_its_line(tmp_path, kind, gen, where):
    r = place(tmp_path, kind, "params: {capacity: 2}\n" + gen)
    assert r.exit_code == 2
    assert where in r.output and "less than or equal to" in r.output
    assert "MemoryError" not in r.output and "Traceback" not in r.output


def test_exit_codes_follow_the_error_hierarchy(tmp_path):
    assert issubclass(PlacementInfeasible, PlacementError) and issubclass(PlacementInputError, PlacementError)
    r = runner.invoke(app, ["place", "uno", str(tmp_path / "missing.yaml")])
    assert r.exit_code == 2
    r = place(tmp_path, "uno", FILES["uno"], "--gap", "2")
    assert r.exit_code == 2 and "--gap" in r.output
    r = place(tmp_path, "uno", FILES["uno"].replace("pcie_gbps: 10", "pcie_gbps: 0.5"))
    assert r.exit_code == 1 and "pcie[snic0" in r.output


def test_table_states_the_certified_gap(tmp_path):
    r = place(tmp_path, "uno", FILES["uno"])
    assert r.exit_code == 0 and "certified gap" in r.output
