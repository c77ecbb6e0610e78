"""`tandem run`: determinism, outputs, pcaps, and precise errors."""

import json
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app

REPO = Path(__file__).resolve().parents[2]
SDWAN = REPO / "examples" / "uno-sdwan.yaml"

runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["run", *map(str, args)])


def test_same_seed_gives_identical_metrics_json(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in ((a, 7), (b, 7), (c, 8)):
        r = run(SDWAN, "--duration", "20ms", "--seed", seed, "--out", out)
        assert r.exit_code == 0, r.output
    ja, jb, jc = ((d / "metrics.json").read_text() for d in (a, b, c))
    assert ja == jb
    assert ja != jc  # the Poisson source draws differently


def test_metrics_have_what_the_run_promises(tmp_path):
    r = run(SDWAN, "--duration", "20ms", "--out", tmp_path)
    assert r.exit_code == 0, r.output
    assert "wan-in" in r.output and "cores used" in r.output
    m = json.loads((tmp_path / "metrics.json").read_text())
    f = m["flows"]["wan-in"]
    assert f["throughput_gbps"] == pytest.approx(4.0, rel=0.05)  # the scenario offers 4 Gb/s
    assert 0 < f["latency_ns"]["p50"] <= f["latency_ns"]["p99"] <= f["latency_ns"]["p999"]
    assert m["devices"]["host"]["cores_used"] > 0
    assert m["devices"]["host"]["energy_j"] > 0
    link = m["pcie"]["pcie0"]
    assert link["b_to_a_gbps"] == pytest.approx(f["throughput_gbps"], rel=0.05)  # sNIC -> host once
    assert m["placement"] == {"l7fw1": "host", "secgw1": "host"}
    assert isinstance(m["drops"], dict)


def _pcap_frames(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert struct.unpack("<I", data[:4])[0] == 0xA1B23C4D
    frames, off = [], 24
    while off < len(data):
        incl = struct.unpack("<I", data[off + 8: off + 12])[0]
        frames.append(data[off + 16: off + 16 + incl])
        off += 16 + incl
    return frames


def test_pcap_on_request_holds_the_frames_the_vm_received(tmp_path):
    r = run(SDWAN, "--duration", "2ms", "--out", tmp_path, "--pcap")
    assert r.exit_code == 0, r.output
    frames = _pcap_frames(tmp_path / "pcap" / "vm1.eth0.pcap")
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert len(frames) >= m["flows"]["wan-in"]["rx_packets"]
    assert len(frames[0]) == 1280  # the scenario's packet size
    assert frames[0][12:14] == b"\x08\x00"  # IPv4
    ingress = _pcap_frames(tmp_path / "pcap" / "snic0.eth0.in.pcap")  # what the source sent in
    assert len(ingress) == m["flows"]["wan-in"]["tx_packets"]
    assert _pcap_frames(tmp_path / "pcap" / "snic0.eth0.pcap") == []  # nothing leaves through eth0


def test_scenario_errors_name_file_line_and_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SDWAN.read_text().replace("cores: 24 ", "cores: -4 "))
    r = run(bad, "--out", tmp_path / "o")
    assert r.exit_code == 2
    assert "bad.yaml:" in r.output and "devices.host.cores" in r.output
    assert "Traceback" not in r.output


def test_missing_file_and_bad_duration_are_user_errors(tmp_path):
    r = run(tmp_path / "nope.yaml", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = run(SDWAN, "--duration", "5", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "--duration" in r.output and "bare number" in r.output


def test_place_moves_an_nf_and_bad_placements_are_user_errors(tmp_path):
    r = run(SDWAN, "--duration", "5ms", "--out", tmp_path, "--place", "l7fw1=snic0", "--place", "secgw1=snic0")
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["placement"] == {"l7fw1": "snic0", "secgw1": "snic0"}
    assert m["devices"]["snic0"]["cores_used"] > 0
    assert m["pcie"]["pcie0"]["b_to_a_gbps"] == pytest.approx(m["flows"]["wan-in"]["throughput_gbps"], rel=0.05)
    r = run(SDWAN, "--out", tmp_path, "--place", "l7fw1")
    assert r.exit_code == 2 and "NF=DEVICE" in r.output and "Traceback" not in r.output
