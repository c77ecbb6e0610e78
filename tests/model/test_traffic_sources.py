"""Traffic sources in the scenario model: pcap replay and flow-size distributions.

Every bad input is a validation problem on the field it concerns (file, line,
YAML path), never a crash; pcap problems name the file and the record.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.model import ScenarioError, load_scenario, parse_scenario_text
from tandem.model.pcap_file import parse_recording
from tandem.model.scenario import Scenario
from tandem.model.summary import traffic_table

HEAD = """
name: t
devices:
  host: {kind: host}
  snic0: {kind: snic}
links:
  pcie0: {snic: snic0}
nf_types:
  mon: {cost: {host: {cycles_per_packet: 100}, snic: {cycles_per_packet: 100}}}
instances:
  m1: {kind: nf, type: mon}
  vm1: {kind: vm}
chains:
  c: {nfs: [m1], ingress: snic0.eth0, egress: vm1}
traffic:
"""


def pcap_bytes(records: list[tuple[int, int, bytes]], *, ns: bool = False, big_endian: bool = False, linktype: int = 1) -> bytes:
    """A classic pcap file: records are (seconds, fraction, frame)."""
    e = ">" if big_endian else "<"
    out = struct.pack(e + "IHHiIII", 0xA1B23C4D if ns else 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)
    for sec, frac, frame in records:
        out += struct.pack(e + "IIII", sec, frac, len(frame), len(frame)) + frame
    return out


T0 = 1_795_435_200  # wall-clock seconds, as real captures carry
GOOD = [(T0, 0, b"\x02" * 60), (T0, 250, b"\x03" * 100), (T0 + 1, 0, b"\x04" * 1500)]  # µs: gaps 250 µs, 999.75 ms


def scenario(tmp_path: Path, source: str, pcap: bytes | None = None, name: str = "trace.pcap") -> Path:
    if pcap is not None:
        (tmp_path / name).write_bytes(pcap)
    f = tmp_path / "s.yaml"
    f.write_text(HEAD + "  rec: " + source + "\n")
    return f


def problems(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    return e.value.problems


# --------------------------------------------------------------------------- replay: what a good file gives


def test_replay_path_is_relative_to_the_scenario_file_and_stored_resolved(tmp_path, monkeypatch):
    (tmp_path / "rec").mkdir()
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: rec/trace.pcap, repeat: true, start: 1ms}")
    (tmp_path / "rec" / "trace.pcap").write_bytes(pcap_bytes(GOOD))
    monkeypatch.chdir("/")
    src = load_scenario(f).traffic["rec"]
    assert src.pcap == str(tmp_path / "rec" / "trace.pcap")
    assert (src.repeat, src.start) == (True, 1e-3)
    rec = src.recording
    assert (rec.frames, rec.bytes, rec.span_ns) == (3, 1660, 1_000_000_000)
    # one frame per mean gap (0.5 s), at the mean frame size
    assert src.offered_pps() == pytest.approx(2.0)
    assert src.offered_bps() == pytest.approx(2.0 * 1660 / 3 * 8)


def test_replay_scenario_round_trips_from_any_directory(tmp_path, monkeypatch):
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: trace.pcap}", pcap_bytes(GOOD))
    sc = load_scenario(f)
    monkeypatch.chdir("/")
    again = Scenario.model_validate(sc.model_dump(by_alias=True))
    assert again == sc and again.traffic["rec"].recording == sc.traffic["rec"].recording


@pytest.mark.parametrize("ns,big_endian", [(False, False), (True, True)])
def test_ns_and_big_endian_files_read_the_same(ns, big_endian):
    recs = [(T0, 0, b"a" * 20), (T0, 3000 if ns else 3, b"b" * 30)]
    rec = parse_recording(pcap_bytes(recs, ns=ns, big_endian=big_endian))
    assert (rec.frames, rec.bytes, rec.span_ns) == (2, 50, 3000)


def test_summary_shows_the_recording_and_flow_sizes(tmp_path):
    from rich.console import Console

    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: trace.pcap, repeat: true}", pcap_bytes(GOOD))
    text = f.read_text() + "  gen: {target: c, packet_rate: 1Mpps, flows: 8, flow_size: {dist: pareto, mean_packets: 40, shape: 1.5}}\n"
    sc = parse_scenario_text(text, scenario_dir=tmp_path)
    console = Console(width=200, record=True)
    console.print(traffic_table(sc))
    out = console.export_text()
    assert "trace.pcap: 3 frames, mean 553 B" in out and "looped" in out and "as recorded" in out
    assert "8 at once, pareto, mean 40 pkts, shape 1.5" in out


# --------------------------------------------------------------------------- replay: bad files


BAD_FILES = {
    "bad magic": (b"hello, this is not a capture file", "not a pcap file: bad magic 0x6c6c6568 at byte 0"),
    "pcapng": (b"\x0a\x0d\x0d\x0a" + bytes(40), "a pcapng file, not pcap: convert it with `editcap -F pcap IN OUT`"),
    "short header": (b"\xd4\xc3\xb2\xa1\x02\x00", "not a pcap file: 6 bytes is shorter than the 24-byte file header"),
    "truncated record header": (pcap_bytes(GOOD)[:-1500 - 16 + 5], "record 3 at byte 216: truncated header (5 of 16 bytes)"),
    "truncated record": (pcap_bytes(GOOD)[:-1], "record 3 at byte 216: claims 1500 bytes but only 1499 remain (truncated file)"),
    "out of order": (pcap_bytes([(T0, 10, b"x" * 60), (T0, 50, b"y" * 60), (T0, 20, b"z" * 60)]),
                     "record 3 at byte 176: timestamp is 30000 ns before record 2's; replay needs records in time order"),
    "not ethernet": (pcap_bytes(GOOD, linktype=101), "link type 101 at byte 20 is not Ethernet (1)"),
    "empty": (pcap_bytes([]), "the recording holds no frames"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_pcap_files_are_problems_on_the_pcap_line(tmp_path, case):
    data, expected = BAD_FILES[case]
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: trace.pcap}", data)
    ((path, message),) = problems(f)
    assert path == "traffic.rec.pcap"
    assert message.startswith(str(tmp_path / "trace.pcap") + ": ")  # names the file …
    assert expected in message  # … and, inside it, the record and byte


def test_missing_and_unreadable_pcap_files(tmp_path):
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: nope.pcap}")
    assert problems(f) == [("traffic.rec.pcap", f"{tmp_path / 'nope.pcap'}: no such file")]
    (tmp_path / "dir.pcap").mkdir()
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: dir.pcap}")
    assert problems(f) == [("traffic.rec.pcap", f"{tmp_path / 'dir.pcap'}: is a directory, expected a pcap file")]


def test_validate_prints_file_line_and_path_for_a_bad_pcap(tmp_path):
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: trace.pcap}", pcap_bytes(GOOD)[:-1])
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    line = f.read_text().splitlines().index("  rec: {target: c, pattern: replay, pcap: trace.pcap}") + 1
    assert f"s.yaml:{line}:" in r.output and "traffic.rec.pcap:" in r.output and "record 3 at byte 216" in r.output


def test_repeat_needs_a_recording_that_spans_time(tmp_path):
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: trace.pcap, repeat: true}", pcap_bytes([(T0, 5, b"x" * 60)]))
    assert problems(f) == [("traffic.rec.repeat", f"{tmp_path / 'trace.pcap'}: cannot repeat a recording that spans no time (1 frame at one timestamp)")]
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: trace.pcap}")
    assert load_scenario(f).traffic["rec"].recording.frames == 1  # played once, it is fine


# --------------------------------------------------------------------------- replay: fields that do not fit


def test_replay_refuses_rate_size_and_flow_fields_one_problem_each(tmp_path):
    f = scenario(tmp_path, "{target: c, pattern: replay, pcap: trace.pcap, bandwidth: 1Gbps, packet_size: 100B, flows: 4,"
                           " flow_size: {dist: fixed, mean_packets: 3}, on_time: 1ms}", pcap_bytes(GOOD))
    got = problems(f)
    assert [p for p, _ in got] == ["traffic.rec.bandwidth", "traffic.rec.packet_size", "traffic.rec.flows",
                                   "traffic.rec.flow_size", "traffic.rec.on_time"]
    assert all("not allowed with pattern replay" in m for _, m in got)


def test_replay_needs_pcap_and_pcap_needs_replay(tmp_path):
    f = scenario(tmp_path, "{target: c, pattern: replay}")
    assert problems(f) == [("traffic.rec.pcap", "pattern replay needs pcap: FILE (a pcap file, relative to the scenario file)")]
    f = scenario(tmp_path, "{target: c, packet_rate: 1Mpps, pcap: trace.pcap, repeat: true}", pcap_bytes(GOOD))
    got = problems(f)
    assert [p for p, _ in got] == ["traffic.rec.pcap", "traffic.rec.repeat"]
    assert all(m.endswith("applies only to pattern replay") for _, m in got)


# --------------------------------------------------------------------------- flow sizes


@pytest.mark.parametrize("fs,expected", [
    ("{dist: fixed, mean_packets: 10}", ("fixed", 10)),
    ("{dist: exponential, mean_packets: 12.5}", ("exponential", 12.5)),
    ("{dist: pareto, mean_packets: 50, shape: 1.2}", ("pareto", 50.0, 1.2)),
])
def test_flow_size_distributions_parse(tmp_path, fs, expected):
    sc = parse_scenario_text(HEAD + f"  g: {{target: c, packet_rate: 1Mpps, flows: 16, flow_size: {fs}}}\n")
    assert sc.traffic["g"].flow_size.emulator_spec() == expected


@pytest.mark.parametrize("fs,path,message", [
    ("{dist: pareto, mean_packets: 50}", "traffic.g.flow_size", "dist pareto needs shape (> 1, e.g. shape: 1.5)"),
    ("{dist: pareto, mean_packets: 50, shape: 1}", "traffic.g.flow_size.shape", "1 — must be > 1.0"),
    ("{dist: exponential, mean_packets: 5, shape: 2}", "traffic.g.flow_size", "shape applies only to dist pareto, not exponential"),
    ("{dist: fixed, mean_packets: 2.5}", "traffic.g.flow_size", "dist fixed needs a whole number of packets, got 2.5"),
    ("{dist: fixed, mean_packets: 0}", "traffic.g.flow_size.mean_packets", "0 — must be ≥ 1.0"),
    ("{dist: lognormal, mean_packets: 5}", "traffic.g.flow_size.dist", "'lognormal' — expected one of 'fixed', 'exponential' or 'pareto'"),
    ("{dist: fixed}", "traffic.g.flow_size.mean_packets", "required field is missing"),
    ("{dist: fixed, mean_packets: 5, mean: 3}", "traffic.g.flow_size.mean", "unknown key (did you mean 'mean_packets'?); allowed: dist, mean_packets, shape"),
])
def test_flow_size_errors_name_the_field(fs, path, message):
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(HEAD + f"  g: {{target: c, packet_rate: 1Mpps, flow_size: {fs}}}\n")
    assert e.value.problems == [(path, message)]


# --------------------------------------------------------------------------- the documented messages are real


def test_documented_pcap_error_lines_are_real(tmp_path):
    """Rebuild each example line of docs/scenario-format.md ("Replaying a pcap") from a real file."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "scenario-format.md").read_text(encoding="utf-8")
    block = doc[doc.index("### Replaying a pcap"):doc.index("### Captures")]
    documented = [line for line in block.splitlines() if line.startswith("s.yaml:")]
    seven = [(T0, 10 * k, b"f" * 200) for k in range(5)] + [(T0, 100, b"f" * 286), (T0, 60, b"f" * 60)]
    files = {  # in the order of the documented lines
        "no such file": None,
        "bad magic": b"hello, this is not a capture file",
        "pcapng": b"\x0a\x0d\x0d\x0a" + bytes(40),
        "truncated": pcap_bytes([(T0, 0, b"a" * 60), (T0, 1, b"b" * 54), (T0, 2, b"c" * 1502)])[:170 + 16 + 800],
        "out of order": pcap_bytes(seven),
        "repeat": pcap_bytes([(T0, 0, b"x" * 60)]),
    }
    assert len(documented) == len(files)
    d = tmp_path / "s"
    d.mkdir()
    prefix = (HEAD.replace("traffic:\n", "") + "#\n" * 40).splitlines()[:25]  # comments pad it to 25 lines
    text = "\n".join(prefix + ["traffic:", "  office:", "    target: c", "    pattern: replay",
                               "    pcap: office.pcap", "    repeat: true"]) + "\n"
    assert text.splitlines()[29] == "    pcap: office.pcap"  # line 30, its value at column 11, as documented
    (d / "s.yaml").write_text(text)
    for (case, data), want in zip(files.items(), documented):
        (d / "office.pcap").unlink(missing_ok=True)
        if data is not None:
            (d / "office.pcap").write_bytes(data)
        with pytest.raises(ScenarioError) as e:
            load_scenario(d / "s.yaml")
        got = str(e.value).replace(str(d / "s.yaml"), "s.yaml").replace(str(d), "/srv/s")
        assert got == want, case
