"""Every class of scenario error: the YAML path, the value and the expectation, with line numbers."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tandem.model import ScenarioError, ScenarioFileError, load_scenario, parse_scenario_text

FIXTURES = Path(__file__).parent / "fixtures"

BASE = {
    "name": "t",
    "devices": {
        "host": {"kind": "host"},
        "snic0": {"kind": "snic", "accelerators": {"mica": {"kind": "crypto", "throughput": "40Gbps"}}},
    },
    "links": {"pcie0": {"snic": "snic0"}},
    "nf_types": {
        "fw": {"cost": {"host": {"cycles_per_packet": 100}, "snic": {"cycles_per_packet": 300}}, "reads": ["ipv4_src"]},
        "gw": {"cost": {"snic": {"accelerator": {"kind": "crypto"}}}},
    },
    "instances": {
        "fw1": {"kind": "nf", "type": "fw"},
        "fw2": {"kind": "nf", "type": "fw"},
        "gw1": {"kind": "nf", "type": "gw", "pin": "snic0"},
        "vm1": {"kind": "vm"},
    },
    "tenants": {"a": {"cores": {"snic0": 10}, "cache_share": 0.5}},
    "chains": {"c": {"nfs": ["fw1", "fw2"], "ingress": "snic0.eth0", "egress": "vm1.eth0"}},
    "element_graphs": {
        "g": {"nodes": ["fw1", "fw2", "gw1"], "edges": [{"from": "fw1", "to": "fw2", "fraction": 0.5}, {"from": "fw1", "to": "gw1", "fraction": 0.5}]}
    },
    "traffic": {"s": {"target": "c", "bandwidth": "1Gbps"}},
    "placement": {"uno": {"edges": [{"from": "snic0.eth0", "to": "fw1", "traffic": "1Gbps"}]}},
}


def problems_of(data) -> list[tuple[str, str]]:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(text, "x.yaml")
    return e.value.problems


def mutate(path: str | tuple, value=None, delete=False):
    """A copy of BASE with the value at a dotted path (or tuple of keys) replaced or deleted."""
    data = copy.deepcopy(BASE)
    *parents, last = path.split(".") if isinstance(path, str) else path
    node = data
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    if delete:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


def test_base_is_valid():
    scn = parse_scenario_text(yaml.safe_dump(BASE), "x.yaml")
    assert scn.host_id == "host" and list(scn.snics) == ["snic0"]


CASES = [
    # (mutation, expected path, expected text in message)
    (("devices.snic0.cores", -4), "devices.snic0.cores", "-4 — must be ≥ 1"),
    (("devices.snic0.cores", "many"), "devices.snic0.cores", "expected a whole number"),
    (("devices.snic0.cores", True), "devices.snic0.cores", "true — expected a whole number"),
    (("devices.snic0.cores", "36"), "devices.snic0.cores", "'36' — expected a whole number"),
    (("devices.snic0.cores", 36.5), "devices.snic0.cores", "36.5 — expected a whole number"),
    (("devices.snic0.speed", False), "devices.snic0.speed", "false — expected a number"),
    (("devices.host", {"kind": "host", "idle_power": "100W", "busy_power": "50W"}), "devices.host", "busy_power must be ≥ idle_power"),
    (("devices.snic0.ports", {"eth0": {"rate": "10GHz"}}), "devices.snic0.ports.eth0.rate", "'10GHz' — a frequency, expected a bandwidth"),
    (("devices.host.clock", 2.7), "devices.host.clock", "2.7 — ambiguous: write 2.7GHz (a bare number has no unit)"),
    (("links.pcie0.bandwidth", "32ms"), "links.pcie0.bandwidth", "'32ms' — a time, expected a bandwidth"),
    (("links.pcie0.round_trip", "26 parsecs"), "links.pcie0.round_trip", "unknown time unit 'parsecs'; use one of ns, us"),
    (("devices.snic0.colour", "blue"), "devices.snic0.colour", "unknown key"),
    (("devices.snic0.core", 4), "devices.snic0.core", "did you mean 'cores'?"),
    (("instances.fw1.type", None, True), "instances.fw1.type", "required field is missing"),
    (("devices.snic0.kind", None, True), "devices.snic0.kind", "required field is missing"),
    (("devices.snic0.kind", "fpga"), "devices.snic0.kind", "'fpga' — kind must be 'host' or 'snic'"),
    (("instances.vm1.kind", "container"), "instances.vm1.kind", "kind must be 'nf' or 'vm'"),
    (("devices.snic0", 5), "devices.snic0", "5 — expected a mapping with kind: host or kind: snic"),
    (("instances.vm1.pin", "host"), "instances.vm1.pin", "unknown key"),
    (("devices.snic0.accelerators.mica.kind", "quantum"), "devices.snic0.accelerators.mica.kind", "expected one of"),
    ((("devices", "bad.name"), {"kind": "snic"}), "devices.bad.name", "'bad.name' is not a valid name"),
    (("instances.fw1.type", "nat"), "instances.fw1.type", "unknown NF type 'nat' (nf_types: fw, gw)"),
    (("instances.fw1.pin", "snic9"), "instances.fw1.pin", "unknown device 'snic9'"),
    (("instances.gw1.pin", "host"), "instances.gw1.pin", "no cost profile for host"),
    (("chains.c.nfs", ["fw1", "ghost"]), "chains.c.nfs[1]", "unknown instance 'ghost'"),
    (("chains.c.nfs", ["fw1", "vm1"]), "chains.c.nfs[1]", "vm1 is a VM"),
    (("chains.c.nfs", []), "chains.c.nfs", "at least 1"),
    (("chains.c.ingress", "snic0.eth9"), "chains.c.ingress", "sNIC snic0 has no port 'eth9'"),
    (("chains.c.egress", "vm1.eth7"), "chains.c.egress", "instance vm1 has no port 'eth7'"),
    (("chains.c.egress", "a.b.c"), "chains.c.egress", "is not an endpoint"),
    (("chains.c.tenant", "zed"), "chains.c.tenant", "unknown tenant 'zed'"),
    (("links.pcie0.snic", "host"), "links.pcie0.snic", "'host' is not an sNIC"),
    (("links", {}), "devices.snic0", "has no PCIe link"),
    (("devices.host2", {"kind": "host"}), "devices.host2.kind", "exactly one host"),
    (("devices.host", None, True), "devices", "no host"),
    (("links.pcie0.round_trip_breakdown", {"a": "5us", "b": "15us"}), "links.pcie0", "adds up to 20 µs but round_trip is 26 µs"),
    (("nf_types.fw.cost.gpu", {}), "nf_types.fw.cost.gpu", "neither a device kind"),
    (("nf_types.fw.cost.host.accelerator", {"kind": "crypto"}), "nf_types.fw.cost.host.accelerator", "the host has no accelerators"),
    (("nf_types.fw.cost.snic.accelerator", {"kind": "regex"}), "nf_types.fw.cost.snic.accelerator.kind", "no sNIC has a regex accelerator"),
    (("nf_types.fw.cost.snic.accelerator", {"kind": "crypto", "bytes_fraction": 1.5}), "nf_types.fw.cost.snic.accelerator.bytes_fraction", "must be ≤ 1"),
    (("nf_types.fw.reads", ["ipv4_source"]), "nf_types.fw", "unknown packet field 'ipv4_source'"),
    (("nf_types.fw.cost", {}), "nf_types.fw.cost", "at least 1"),
    (("nf_types.fw.preset", "uno.nat"), "nf_types.fw.preset", "unknown preset 'uno.nat'; known: smartchain.alert"),
    (("tenants.a.cores", {"snic0": 40}), "tenants", "reserve 40 cores on snic0, which has 36"),
    (("tenants.a.cores", {"snic0": 0}), "tenants.a.cores.snic0", "must be ≥ 1"),
    (("tenants.a.cache_share", 1.5), "tenants.a.cache_share", "must be ≤ 1"),
    (("tenants.b", {"cache_share": 0.6}), "tenants", "cache_share values add up to 1.1"),
    (("element_graphs.g.edges.0.to", "nope"), "element_graphs.g.edges[0].to", "'nope' is not a node"),
    (("element_graphs.g.edges.1.fraction", 0.4), "element_graphs.g.edges", "leaving fw1 add up to 0.9"),
    (("element_graphs.g.edges.1", {"from": "fw2", "to": "fw1"}), "element_graphs.g.edges", "cycle"),
    (("element_graphs.g.nodes", ["fw1", "fw2", "gw1", "fw1"]), "element_graphs.g.nodes[3]", "listed twice"),
    (("traffic.s.target", "nowhere"), "traffic.s.target", "unknown chain or element graph 'nowhere'"),
    (("traffic.s.packet_rate", "1Mpps"), "traffic.s", "exactly one of bandwidth"),
    (("traffic.s.pattern", "onoff"), "traffic.s", "needs both on_time and off_time"),
    (("traffic.s.packet_size", "8B"), "traffic.s", "smaller than an Ethernet header"),
    (("traffic.s.flows", 0), "traffic.s.flows", "must be ≥ 1"),
    (("placement.uno.edges.0.traffic", 3), "placement.uno.edges[0].traffic", "3 — ambiguous: write 3Gbps"),
    (("placement.uno.edges.0.to", "fw1.in"), "placement.uno.edges[0].to", "not instance ports"),
    (("placement.uno.pcie_budget", {"snic7": "10Gbps"}), "placement.uno.pcie_budget.snic7", "not an sNIC"),
    (("run.seed", "x"), "run.seed", "expected a whole number"),
    (("run.isolation", "maybe"), "run.isolation", "expected true or false"),
]


@pytest.mark.parametrize("mutation,path,text", CASES, ids=[c[1] + ":" + c[2][:24] for c in CASES])
def test_error_names_path_value_and_expectation(mutation, path, text):
    probs = problems_of(mutate(*mutation))
    assert any(p == path and text in m for p, m in probs), probs


def test_acceptance_fixture_has_one_line_per_problem_with_lines():
    with pytest.raises(ScenarioError) as e:
        load_scenario(FIXTURES / "broken-sdwan.yaml")
    lines = str(e.value).splitlines()
    assert [p for p, _ in e.value.problems] == [
        "devices.snic0.cores",
        "links.pcie0.bandwidth",
        "nf_types.l7fw.colour",
        "instances.fw1.type",
    ]
    assert len(lines) == 4
    # file:line:column of the offending key or value
    assert lines[0].startswith(f"{FIXTURES / 'broken-sdwan.yaml'}:8:12: devices.snic0.cores: -4 — must be ≥ 1")
    assert ":18:5: nf_types.l7fw.colour: unknown key" in lines[2]


def test_yaml_syntax_error_has_line_and_column():
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text("name: x\ndevices: {host: {kind: host}\n", "bad.yaml")
    (line,) = str(e.value).splitlines()
    assert line.startswith("bad.yaml:3:1: YAML syntax")


def test_duplicate_keys_are_errors():
    text = "name: a\ndevices:\n  host: {kind: host}\n  host: {kind: host, cores: 2}\n"
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(text, "d.yaml")
    assert e.value.problems == [("devices.host", "duplicate key (a later value would silently win)")]
    assert str(e.value).startswith("d.yaml:4:3:")


@pytest.mark.parametrize("text,needle", [("", "empty"), ("- a\n- b\n", "must be a mapping"), ("42\n", "must be a mapping")])
def test_document_shape(text, needle):
    with pytest.raises(ScenarioError, match=needle):
        parse_scenario_text(text, "s.yaml")


def test_yaml_1_2_booleans_keep_on_and_no_as_text():
    data = mutate("traffic.s.pattern", "onoff")
    text = yaml.safe_dump(data, sort_keys=False).replace("pattern: onoff", "pattern: onoff\n    on: 10ms")
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(text, "b.yaml")
    assert ("traffic.s.on", "unknown key (did you mean 'on_time'?); allowed: target, pattern, bandwidth, packet_rate, "
            "packet_size, packet_size_mix, flows, flow_size, on_time, off_time, pcap, repeat, schedule, interpolate, esp, start, ingress") in e.value.problems


def test_yaml_1_2_exponent_floats():
    text = yaml.safe_dump(BASE, sort_keys=False).replace("kind: host", "kind: host\n    speed: 1e0\n    cores: 4", 1)
    host = parse_scenario_text(text, "e.yaml").host
    assert (host.speed, host.cores) == (1.0, 4)


def test_yes_no_stay_text():
    text = yaml.safe_dump(BASE, sort_keys=False).replace("name: t", "name: t\ndescription: no")
    assert parse_scenario_text(text, "n.yaml").description == "no"


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ScenarioFileError, match="no such file"):
        load_scenario(tmp_path / "nope.yaml")
    with pytest.raises(ScenarioFileError, match="is a directory"):
        load_scenario(tmp_path)


def test_every_problem_is_reported_not_only_the_first():
    data = mutate("devices.snic0.cores", -1)
    data["links"]["pcie0"]["bandwidth"] = "7"
    data["instances"]["fw1"]["extra"] = 1
    paths = [p for p, _ in problems_of(data)]
    assert set(paths) == {"devices.snic0.cores", "links.pcie0.bandwidth", "instances.fw1.extra"}
