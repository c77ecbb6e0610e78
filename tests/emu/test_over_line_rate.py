"""A source offering more than its ingress port carries: validate warns, run counts the excess as drops."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _scenario(tmp_path: Path, bw: str) -> Path:
    text = (REPO / "examples" / "uno-sdwan.yaml").read_text()
    f = tmp_path / "s.yaml"
    f.write_text(text.replace("bandwidth: 4Gbps     # the largest", f"bandwidth: {bw}     # the largest"))
    return f


def test_validate_warns_and_still_passes(tmp_path):
    f = _scenario(tmp_path, "1Tbps")
    r = runner.invoke(app, ["validate", str(f)])
    assert r.exit_code == 0
    assert (f"warning: {f}: traffic.wan-in: offers 1 Tbps into snic0.eth0, which carries 10 Gbps;"
            " `tandem run` counts the excess as drops (over_line_rate)") in r.output


def test_run_reports_offered_and_counts_the_excess_as_drops(tmp_path):
    f = _scenario(tmp_path, "1Tbps")
    r = runner.invoke(app, ["run", str(f), "--duration", "2ms", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    fl = m["flows"]["wan-in"]
    assert fl["requested_gbps"] == pytest.approx(1000) and fl["port_gbps"] == pytest.approx(10)
    offered_packets = round(1e12 / (1280 * 8) * 0.002)
    assert fl["tx_packets"] + fl["dropped_over_line_rate"] == offered_packets
    assert fl["dropped"] >= fl["dropped_over_line_rate"] > 0.98 * offered_packets
    assert m["drops"]["over_line_rate"] == fl["dropped_over_line_rate"]
    assert "offered 1000 Gb/s, its ingress port carries 10 Gb/s" in " ".join(r.output.split())


def test_within_line_rate_nothing_changes(tmp_path):
    f = _scenario(tmp_path, "4Gbps")
    r = runner.invoke(app, ["validate", str(f)])
    assert "warning" not in r.output
    r = runner.invoke(app, ["run", str(f), "--duration", "2ms", "--out", str(tmp_path / "o")])
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert "requested_gbps" not in m["flows"]["wan-in"] and "over_line_rate" not in m["drops"]


def _two_sources(tmp_path: Path, bw: str) -> Path:
    """uno-sdwan with a second source into the same 10 GbE port (snic0.eth0)."""
    text = (REPO / "examples" / "uno-sdwan.yaml").read_text()
    text = text.replace("bandwidth: 4Gbps     # the largest", f"bandwidth: {bw}     # the largest")
    second = (f"  wan-in-2:\n    target: sdwan\n    pattern: constant\n    bandwidth: {bw}\n"
              "    packet_size: 1280B\n    flows: 1000\n\nplacement:")
    f = tmp_path / "s2.yaml"
    f.write_text(text.replace("\nplacement:", "\n" + second, 1))
    return f


def test_sources_into_one_port_share_its_line_rate(tmp_path):
    # 7 + 7 Gb/s into one 10 GbE port: each alone fits, together they do not
    f = _two_sources(tmp_path, "7Gbps")
    r = runner.invoke(app, ["validate", str(f)])
    assert r.exit_code == 0
    assert ("traffic.wan-in: offers 7 Gbps into snic0.eth0 (with traffic.wan-in-2: 14 Gbps in all), which carries"
            " 10 Gbps") in r.output
    r = runner.invoke(app, ["run", str(f), "--duration", "2ms", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    a, b = m["flows"]["wan-in"], m["flows"]["wan-in-2"]
    # 10 Gb/s on the wire is 10e9 / ((1280 + 20) * 8) frames/s
    wire_packets = 10e9 / (1300 * 8) * 0.002
    assert a["tx_packets"] + b["tx_packets"] == pytest.approx(wire_packets, abs=3)
    asked = round(7e9 / (1280 * 8) * 0.002)
    for fl in (a, b):
        assert fl["port_requested_gbps"] == pytest.approx(14) and fl["port_gbps"] == pytest.approx(10)
        assert fl["tx_packets"] + fl["dropped_over_line_rate"] == asked
    assert m["drops"]["over_line_rate"] == a["dropped_over_line_rate"] + b["dropped_over_line_rate"] > 0


def test_sources_into_one_port_within_its_line_rate_are_untouched(tmp_path):
    f = _two_sources(tmp_path, "4Gbps")
    r = runner.invoke(app, ["validate", str(f)])
    assert "warning" not in r.output
    r = runner.invoke(app, ["run", str(f), "--duration", "2ms", "--out", str(tmp_path / "o")])
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert "over_line_rate" not in m["drops"]
    asked = round(4e9 / (1280 * 8) * 0.002)
    assert all(abs(m["flows"][s]["tx_packets"] - asked) <= 1 for s in ("wan-in", "wan-in-2"))
