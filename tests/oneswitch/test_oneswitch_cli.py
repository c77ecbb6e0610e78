"""Topology loading errors and the `tandem translate` CLI contract (files, summary, --json, errors)."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.oneswitch.topology import PortRef, TopologyError, load_topology
from tandem.rules.ofctl import parse_flows
from tandem.backends.ovs_sandbox import OvsSandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "oneswitch"
runner = CliRunner()

GOOD = """switches:
  host:  {kind: host}
  snic0: {kind: snic}
links:
  - {a: "host:100", b: "snic0:100"}
ports:
  1: "host:1"
  2: "snic0:1"
"""


def test_example_topology_loads_with_paths_through_the_host():
    t = load_topology(EXAMPLES / "topology.yaml")
    assert t.switch_names == ("host", "snic0", "snic1") and t.host == "host"
    assert t.port_map[3] == PortRef("snic0", 1)
    assert t.path("snic0", "snic1") == ["snic0", "host", "snic1"]
    assert t.next_hop("snic0", "snic1") == ("host", 100)


@pytest.mark.parametrize("text, message", [
    (GOOD.replace('b: "snic0:100"', 'b: "snic9:100"'), r":5:\d+: links\[0\]\.b: unknown switch 'snic9'"),
    (GOOD.replace('2: "snic0:1"', '2: "host:1"'), r":8:\d+: ports\.2: physical port host:1 is already used by ports\.1"),
    (GOOD.replace('2: "snic0:1"', '2: "snic0:100"'), r"ports\.2: physical port snic0:100 is already used by links\[0\]\.b"),
    (GOOD.replace("links:\n  - {a: \"host:100\", b: \"snic0:100\"}\n", "links: []\n"),
     r"switches\.snic0: not connected to host 'host'"),
    (GOOD.replace("{kind: host}", "{kind: snic}"), r"need exactly one switch of kind host"),
    (GOOD.replace('1: "host:1"', '1: "host-1"'), r"ports\.1: expected \"switch:port\""),
    (GOOD.replace("{kind: snic}", "{kind: fpga}"), r"switches\.snic0\.kind: expected host or snic"),
    ("switches: [oops", r":\d+:\d+: YAML syntax"),
    (GOOD + "ports: {}\n", r":\d+:1: ports: duplicate key"),
])
def test_topology_errors_name_file_line_col_and_yaml_path(tmp_path, text, message):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    with pytest.raises(TopologyError, match=message) as e:
        load_topology(p)
    assert str(e.value).startswith(str(p))


def test_translate_writes_loadable_files_and_prints_counts(tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, ["translate", "--topology", str(EXAMPLES / "topology.yaml"),
                              "--rules", str(EXAMPLES / "rules.flows"), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    n_virtual = len(parse_flows((EXAMPLES / "rules.flows").read_text()))
    assert summary["virtual"] == n_virtual
    for sw in ("host", "snic0", "snic1"):
        lines = (out / f"{sw}.flows").read_text().splitlines()
        assert len(lines) == summary["physical"][sw] and parse_flows("\n".join(lines))
    assert summary["ratio"] == pytest.approx(summary["physical_total"] / n_virtual, abs=1e-3)
    res = runner.invoke(app, ["translate", "--topology", str(EXAMPLES / "topology.yaml"),
                              "--rules", str(EXAMPLES / "rules.flows"), "--out", str(out)])
    assert res.exit_code == 0 and "ratio" in res.output and "snic1" in res.output


@pytest.mark.ovs
@pytest.mark.ovs
def test_translated_files_load_into_ovs(tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, ["translate", "--topology", str(EXAMPLES / "topology.yaml"),
                              "--rules", str(EXAMPLES / "rules.flows"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    with OvsSandbox() as sb:
        for sw in ("host", "snic0", "snic1"):
            sb.add_bridge(sw)
            if (out / f"{sw}.groups").exists():
                sb.ofctl("add-groups", sw, str(out / f"{sw}.groups"))
            sb.ofctl("add-flows", sw, str(out / f"{sw}.flows"))
            assert len(sb.dump_flows(sw)) == len((out / f"{sw}.flows").read_text().splitlines())


@pytest.mark.parametrize("rules, message", [
    ("in_port=1,actions=output:3\nin_port=2,actions=output:70000\n", r"rules\.flows:2: .*output:0x11170 is outside 0..0xfeff"),
    ("in_port=1,actions=outptu:3\n", r"rules\.flows:1"),
])
def test_translate_user_errors_exit_2_with_file_and_line(tmp_path, rules, message):
    p = tmp_path / "rules.flows"
    p.write_text(rules)
    res = runner.invoke(app, ["translate", "--topology", str(EXAMPLES / "topology.yaml"), "--rules", str(p),
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    import re
    assert re.search(message, " ".join(res.output.split())), res.output


def test_translate_bad_topology_exit_2(tmp_path):
    t = tmp_path / "t.yaml"
    t.write_text(GOOD.replace('b: "snic0:100"', 'b: "snic7:100"'))
    res = runner.invoke(app, ["translate", "--topology", str(t), "--rules", str(EXAMPLES / "rules.flows"),
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "unknown switch 'snic7'" in res.output


def test_translate_unreadable_rules_exit_2(tmp_path):
    res = runner.invoke(app, ["translate", "--topology", str(EXAMPLES / "topology.yaml"), "--rules", str(tmp_path / "nope.flows"),
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "cannot read" in res.output
