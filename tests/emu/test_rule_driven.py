"""`tandem run` with rule-driven switches: virtual rules from the scenario (chains
compiled, or `rules:`), OneSwitch-translated into dp-core pipelines on every
device; the port-map fast path proven equivalent where it applies; the
placement decided in the run equal to `tandem place` on the same derived problem."""

import json
import struct
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.emu.machine import EmuError
from tandem.emu.run import run_scenario
from tandem.emu.scenario import build_from_scenario, portmap_refusal
from tandem.model.load import ScenarioError, load_scenario, parse_scenario_text
from tandem.oneswitch.scenario import chain_rules_text, derive_topology, virtual_ports, virtual_rules
from tandem.placement.from_scenario import decide

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
runner = CliRunner()


def frames(path: Path) -> list[bytes]:
    data = path.read_bytes() if path.exists() else b""
    out, off = [], 24
    while off + 16 <= len(data):
        n = struct.unpack("<I", data[off + 8: off + 12])[0]
        out.append(data[off + 16: off + 16 + n])
        off += 16 + n
    return out


@pytest.mark.parametrize("name, placement", [
    ("uno-sdwan", None), ("uno-sdwan", {"secgw1": "host", "l7fw1": "host"}), ("uno-sdwan", {"secgw1": "snic0", "l7fw1": "host"}),
    ("fairnic-isolation", None), ("replay-pcap", None),
])
def test_port_map_fast_path_sends_the_same_frames_as_the_rules(tmp_path, name, placement):
    sc = load_scenario(EX / f"{name}.yaml")
    assert portmap_refusal(sc) is None
    out = {}
    for sw in ("rules", "portmap"):
        m = run_scenario(sc, tmp_path / sw, duration=0.003, pcap=True, placement=placement, switching=sw)
        out[sw] = (m, {p.name: Counter(frames(p)) for p in sorted((tmp_path / sw / "pcap").glob("*.pcap"))})
    (mr, fr), (mp, fp) = out["rules"], out["portmap"]
    assert fr == fp  # every port sent (and received) the same frames, as multisets
    assert sum(sum(c.values()) for n, c in fr.items() if not n.endswith(".in.pcap")) > 50
    assert {k: v["rx_packets"] for k, v in mr["flows"].items()} == {k: v["rx_packets"] for k, v in mp["flows"].items()}


def test_the_port_map_refuses_what_only_rules_express():
    ids = load_scenario(EX / "smartchain-ids.yaml")
    assert "branches" in portmap_refusal(ids)
    with pytest.raises(EmuError, match="port-map fast path cannot run this scenario"):
        build_from_scenario(ids, switching="portmap")


def test_chains_compile_to_one_rule_per_hop_and_the_table_names_every_port():
    sc = load_scenario(EX / "uno-sdwan.yaml")
    vp = virtual_ports(sc)
    assert vp.number["snic0.eth0"] == 1 and vp.number["vm1.eth0"] == 5 and vp.nf["secgw1"] == (6, 7)
    assert [ln.split("  #")[0] for ln in chain_rules_text(sc)] == [
        "priority=100,in_port=1,actions=output:6", "priority=100,in_port=7,actions=output:8",
        "priority=100,in_port=9,actions=output:5"]
    topo = derive_topology(sc, {"secgw1": "snic0", "l7fw1": "host"})
    assert str(topo.port_map[6]) == "snic0:6" and str(topo.port_map[8]) == "host:8" and str(topo.port_map[1]) == "snic0:1"
    r = runner.invoke(app, ["rules", "from-chains", str(EX / "uno-sdwan.yaml")])
    assert r.exit_code == 0 and "priority=100,in_port=7,actions=output:8" in r.stdout and "6  secgw1.in" in r.stdout


def test_branches_split_flows_by_fraction_and_independently():
    ids = load_scenario(EX / "smartchain-ids.yaml")
    m, b = build_from_scenario(ids, placement={n: "snic0" for n in ids.nfs()})
    met = m.run(0.02)
    tx = met["flows"]["west-east"]["tx_packets"]
    assert met["nfs"]["analyzer"]["packets"] / tx == pytest.approx(0.2, abs=0.03)
    assert met["nfs"]["alert"]["packets"] / tx == pytest.approx(0.02, abs=0.012)  # 0.1 of the 0.2, not 0.5 of it


SCN = """
name: two-chains
devices:
  host: {kind: host, cores: 4}
  snic0: {kind: snic, cores: 8, ports: {eth0: {rate: 10Gbps}, eth1: {rate: 10Gbps}}}
links: {pcie0: {snic: snic0}}
nf_types:
  fw: {cost: {host: {cycles_per_packet: 200, cores_per_gbps: 0.1}, snic: {cycles_per_packet: 400, cores_per_gbps: 0.2}}}
instances:
  a: {kind: nf, type: fw}
  b: {kind: nf, type: fw}
  vm1: {kind: vm}
  vm2: {kind: vm}
chains:
  c1: {nfs: [a], ingress: snic0.eth0, egress: vm1}
  c2: {nfs: [a, b], ingress: snic0.eth0, egress: vm2}
traffic:
  t1: {target: c1, packet_rate: 100Kpps, packet_size: 128B}
  t2: {target: c2, packet_rate: 50Kpps, packet_size: 128B}
run: {placement: pinned}
"""


def test_chains_sharing_ports_are_told_apart_by_their_sources():
    sc = parse_scenario_text(SCN)
    lines = chain_rules_text(sc)
    assert any("nw_src=10.1.0.0/16" in ln and "output:" in ln for ln in lines)
    met = build_from_scenario(sc)[0].run(0.01)
    assert met["flows"]["t1"]["rx_packets"] > 900 and met["flows"]["t2"]["rx_packets"] > 450
    assert met["nfs"]["b"]["packets"] == pytest.approx(met["flows"]["t2"]["tx_packets"], abs=5)  # only c2 visits b
    with pytest.raises(EmuError, match="port map cannot tell their packets apart|both send"):
        build_from_scenario(sc, switching="portmap")


def test_scenario_rules_replace_the_chains(tmp_path):
    # the controller's own rules: straight from the wire to vm2, bypassing every NF
    text = SCN + "rules: |\n  priority=10,in_port=1,actions=output:4\n"
    sc = parse_scenario_text(text)
    assert [r.match.get("in_port").value for r in virtual_rules(sc)] == [1]
    met = build_from_scenario(sc)[0].run(0.01)
    assert met["nfs"]["a"]["packets"] == 0 and met["nfs"]["b"]["packets"] == 0
    assert met["sinks"]["vm2.eth0"]["rx_packets"] > 1400 and met["sinks"]["vm1.eth0"]["rx_packets"] == 0
    # a rules file next to the scenario
    (tmp_path / "v.flows").write_text("priority=10,in_port=1,actions=output:3\n")
    f = tmp_path / "s.yaml"
    f.write_text(SCN + "rules: v.flows\n")
    assert [r.match.get("in_port").value for r in virtual_rules(load_scenario(f))] == [1]


def test_a_typo_in_inline_rules_is_reported_at_its_line_and_column(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SCN + "rules: |\n  priority=10,in_port=1,actions=output:4\n  priority=5,in_prot=2,actions=drop\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(f)
    line = f.read_text().splitlines().index("  priority=5,in_prot=2,actions=drop") + 1
    assert str(e.value).startswith(f"{f}:{line}:14: rules: flow 2: unknown field 'in_prot'")
    r = runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and f"{f}:{line}:14: rules:" in r.output


@pytest.mark.parametrize("name, engine", [("uno-sdwan", "uno"), ("uno-fig15-dpi", "uno"), ("smartchain-ids", "smartchain")])
def test_the_run_places_as_tandem_place_does_on_the_derived_problem(name, engine):
    sc = load_scenario(EX / f"{name}.yaml")
    d = decide(sc, engine)
    r = runner.invoke(app, ["place", engine, "--scenario", str(EX / f"{name}.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout[r.stdout.index("{"):])
    if engine == "uno":
        placed = {k: (sc.host_id if v == "host" else v) for k, v in res["assignment"].items() if k in sc.nfs()}
        assert res["objective"] == pytest.approx(d.objective)
    else:
        snic = next(iter(sc.snics))
        placed = {k.split("/")[1]: sc.host_id if v == "C" else snic for k, v in res["assignment"].items()}
    assert placed == d.placement


def test_run_prints_and_records_the_decision(tmp_path):
    r = runner.invoke(app, ["run", str(EX / "uno-sdwan.yaml"), "--duration", "2ms", "--out", str(tmp_path)],
                      env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "placement (uno, fast): l7fw1, secgw1 -> snic0" in r.output
    assert "objective: 0 host cores" in r.output and "host cores 0 | sNIC cores snic0 8 | PCIe pcie0 4 Gbps" in r.output
    assert "all NFs on the host would need 6 host cores" in r.output
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["decision"]["placement"] == {"l7fw1": "snic0", "secgw1": "snic0"} and m["switching"] == "rules"
    # --place still pins; the engine places the rest around the pin
    r = runner.invoke(app, ["run", str(EX / "uno-sdwan.yaml"), "--duration", "2ms", "--out", str(tmp_path), "--place", "l7fw1=host"])
    assert r.exit_code == 0 and json.loads((tmp_path / "metrics.json").read_text())["placement"] == {"l7fw1": "host", "secgw1": "snic0"}


def test_translate_from_a_scenario_writes_the_switches_rules(tmp_path):
    r = runner.invoke(app, ["translate", "--scenario", str(EX / "uno-sdwan.yaml"), "--out", str(tmp_path), "--json",
                            "--place", "l7fw1=host"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout[r.stdout.index("{"):])
    assert s["placement"] == {"l7fw1": "host", "secgw1": "snic0"} and s["virtual"] == 3
    host = (tmp_path / "host.flows").read_text()
    assert "in_port=9,actions=output:5" in host  # l7fw1.out -> vm1 on the host itself
