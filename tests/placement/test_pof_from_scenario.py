"""`tandem place pof-fp|pof-fr --scenario S.yaml`: the POF problem derived from a
scenario's traffic (flows, rates, packet sizes), sNIC flow table and
`placement.pof` taus is solved; a scenario without what POF needs fails with
one line naming the missing field, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.model.load import load_scenario
from tandem.placement.from_scenario import DecisionError, pof_fp_problem, pof_fr_problem
from tandem.placement.pof.engine import solve_fp

ROOT = Path(__file__).resolve().parents[2]
SDWAN = ROOT / "examples" / "uno-sdwan.yaml"
runner = CliRunner()

BASE = """name: pof
devices:
  host: {kind: host}
  snic0: {kind: snic, flow_table_entries: %(ft)d}
links:
  pcie0: {snic: snic0, bandwidth: 32Gbps}
nf_types:
  mon: {cost: {host: {cycles_per_packet: 100}, snic: {cycles_per_packet: 100}}}
instances:
  m1: {kind: nf, type: mon}
  vm1: {kind: vm}
chains:
  c: {nfs: [m1], ingress: snic0.eth0, egress: vm1}
%(traffic)s
placement:
  pof: {max_offloaded_entries: 4800, tau_add: 1us}
"""

TRAFFIC = """traffic:
  big: {target: c, bandwidth: 4Gbps, packet_size: 64B, flows: 2}
  small: {target: c, bandwidth: 10Mbps, packet_size: 1024B, flows: 3}
  late: {target: c, bandwidth: 2Gbps, packet_size: 64B, start: 0.5s}
"""


def write(tmp_path: Path, ft: int = 65536, traffic: str = TRAFFIC) -> Path:
    f = tmp_path / "s.yaml"
    f.write_text(BASE % {"ft": ft, "traffic": traffic})
    return f


def test_fp_flows_come_from_the_traffic_sources(tmp_path):
    inst = pof_fp_problem(load_scenario(write(tmp_path, ft=2)))
    assert inst.flows.ids == ("big#0", "big#1", "small#0", "small#1", "small#2", "late")
    assert list(inst.flows.rate_mbps[:2]) == pytest.approx([2000.0, 2000.0])
    assert inst.flows.kernel_mbps[0] == pytest.approx(0.534e6 * 64 * 8 / 1e6)
    assert inst.flows.kernel_mbps[2] == pytest.approx(0.534e6 * 1024 * 8 / 1e6)
    assert inst.params.capacity == 2  # the sNIC's flow table caps max_offloaded_entries
    assert inst.params.tau_add_us == pytest.approx(1.0)
    r = solve_fp(inst)
    assert r.status == "optimal"
    # the overloaded flows (2 Gbps of 64B > 273 Mbps kernel path) win the two entries
    assert sorted(k for k, v in r.assignment.items() if v == "snic") == ["big#0", "big#1"]


def test_cli_pof_fp_on_a_scenario(tmp_path):
    r = runner.invoke(app, ["place", "pof-fp", "--scenario", str(write(tmp_path)), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["status"] == "optimal" and len(out["assignment"]) == 6
    assert set(out["assignment"].values()) == {"snic"}  # capacity 4800 holds all six


def test_cli_pof_fp_on_an_example(tmp_path):
    r = runner.invoke(app, ["place", "pof-fp", "--scenario", str(SDWAN), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["details"]["flows"] == 10000 and out["details"]["offloaded"] == 4800


def test_cli_pof_fr_new_flows_are_the_later_sources(tmp_path):
    inst = pof_fr_problem(load_scenario(write(tmp_path, ft=2)))
    assert inst.new.ids == ("late",) and list(inst.offloaded) == [True, True, False, False, False]
    r = runner.invoke(app, ["place", "pof-fr", "--scenario", str(write(tmp_path, ft=2)), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["status"] == "optimal"


@pytest.mark.parametrize("problem,text,field", [
    ("pof-fp", "", "traffic"),
    ("pof-fr", "", "traffic"),
    ("pof-fr", "traffic:\n  big: {target: c, bandwidth: 4Gbps}\n", "start > 0"),
])
def test_missing_input_is_one_line_naming_the_field(tmp_path, problem, text, field):
    r = runner.invoke(app, ["place", problem, "--scenario", str(write(tmp_path, traffic=text))])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0], r.output
    assert "Traceback" not in r.output


def test_no_snic_names_devices(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("name: x\ndevices:\n  host: {kind: host}\n")
    with pytest.raises(DecisionError, match="devices"):
        pof_fp_problem(load_scenario(f))
    r = runner.invoke(app, ["place", "pof-fp", "--scenario", str(f)])
    assert r.exit_code == 2 and "devices" in r.output and len(r.output.strip().splitlines()) == 1, r.output
