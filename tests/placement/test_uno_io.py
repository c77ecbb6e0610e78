"""Loading UNO problems: the placement YAML/JSON format and Tandem scenarios;
bad input names file, line:column and path."""

import json
from pathlib import Path

import pytest

from tandem.placement.uno.engine import solve, solve_file
from tandem.placement.uno.model import UnoInputError
from tandem.placement.uno.io import load_problem

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
pcie_accounting: shared
resources: [cores, mem]
snics:
  snic0: {pcie_gbps: 10, capacity: {cores: 8, mem: 4}}
nf_types:
  dpi: {host: {cores: 0.5, mem: 0.1}, snic: {cores: 1.0, mem: 0.2}}
nodes:
  eth0: {kind: port}
  vm1: {kind: vm}
  dpi1: {kind: nf, type: dpi}
  aes: {kind: nf, accelerated: true, host_use: {cores: 3}, snic_use: {cores: 0.5}}
edges:
  - {from: eth0, to: aes, gbps: 4}
  - [aes, dpi1, 4]
  - {from: dpi1, to: vm1, gbps: 4}
incremental:
  current: {dpi1: host}
  move_cost: 0.1
"""


def test_placement_yaml_loads_and_solves(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(GOOD)
    p = load_problem(f)
    dpi = next(n for n in p.nodes if n.name == "dpi1")
    assert dpi.host_use == {"cores": 2.0, "mem": 0.4}  # 0.5 cores/Gbps × 4 Gbps incoming
    assert next(n for n in p.nodes if n.name == "aes").pin == "snic0"
    r = solve_file(f)
    assert r.status == "optimal"
    assert r.assignment["dpi1"] == "snic0"  # 2 host cores saved for 0.1 move cost
    assert r.objective == pytest.approx(0.1)


def test_json_input(tmp_path):
    import yaml
    f = tmp_path / "p.json"
    f.write_text(json.dumps(yaml.safe_load(GOOD)))
    assert solve_file(f, "milp").objective == pytest.approx(0.1)


@pytest.mark.parametrize("old,new,expect", [
    ("type: dpi}", "type: dpx}", r"p.yaml:10:\d+: nodes.dpi1.type: unknown NF type 'dpx'"),
    ("gbps: 4}\n  - [aes", "gbps: -4}\n  - [aes", r"p.yaml:13:\d+: edges\[0\].gbps: -4 must be a finite number"),
    ("{kind: vm}", "{kind: vmm}", r"p.yaml:9:\d+: nodes.vm1.kind: 'vmm' is not one of nf, vm, port"),
    ("pcie_gbps: 10,", "pcie_gbsp: 10,", r"snics.snic0.pcie_gbsp: unknown key"),
    ("to: vm1,", "to: vm9,", r"edges\[2\].to: unknown node 'vm9'"),
])
def test_bad_input_names_place(tmp_path, old, new, expect):
    f = tmp_path / "p.yaml"
    assert old in GOOD
    f.write_text(GOOD.replace(old, new))
    with pytest.raises(UnoInputError, match=expect):
        load_problem(f)


def test_fig15_scenario_is_an_input():
    p = load_problem(ROOT / "examples" / "uno-fig15-dpi.yaml")
    assert p.pcie == "shared"
    assert p.snics[0].pcie_gbps == pytest.approx(10.0)
    r = solve(p)
    assert r.details["pcie_up_gbps"]["snic0"] + r.details["pcie_down_gbps"]["snic0"] <= 10.0 + 1e-9


def test_sdwan_scenario_is_an_input():
    r = solve_file(ROOT / "examples" / "uno-sdwan.yaml")
    assert r.status == "optimal"
    assert set(r.assignment) >= {"secgw1", "l7fw1", "vm1", "snic0.eth0"}
