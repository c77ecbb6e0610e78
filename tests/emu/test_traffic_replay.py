"""`tandem run` with pcap replay and flow-size distributions, end to end.

Replay: the VM at the end of the chain receives exactly the recorded frames, and
with the recorded gaps (modelled time, read back from the run's own captures).
Flow sizes: packets per 5-tuple at the sink average the configured mean. Same
seed, same metrics.json. Bad inputs are user errors, never tracebacks.
"""

import json
import random
from decimal import Decimal
import struct
from collections import Counter
from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap
from typer.testing import CliRunner

from tandem.cli import app
from tandem.emu.machine import EmuError, Machine

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

SCENARIO = """
name: replay-test
devices:
  host: {kind: host, cores: 4, clock: 2GHz}
  snic0: {kind: snic, cores: 4, clock: 1GHz}
links:
  pcie0: {snic: snic0, bandwidth: 32Gbps, round_trip: 10us}
nf_types:
  mon: {cost: {host: {cycles_per_packet: 100}, snic: {cycles_per_packet: 100}}}
instances:
  m0: {kind: nf, type: mon, pin: snic0}
  m1: {kind: nf, type: mon, pin: snic0}
  m2: {kind: nf, type: mon, pin: snic0}
  vm0: {kind: vm}
  vm1: {kind: vm}
  vm2: {kind: vm}
chains:
  c0: {nfs: [m0], ingress: snic0.eth0, egress: vm0}
  c1: {nfs: [m1], ingress: snic0.eth1, egress: vm1}
  c2: {nfs: [m2], ingress: snic0.eth2, egress: vm2}
traffic:
"""


def read_pcap(path: Path) -> list[tuple[int, bytes]]:
    """(ns timestamp, frame) of every record of a pcap the emulator wrote (ns, little-endian)."""
    data = path.read_bytes()
    assert struct.unpack("<I", data[:4])[0] == 0xA1B23C4D
    out, off = [], 24
    while off < len(data):
        sec, ns, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        out.append((sec * 10**9 + ns, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def recording(path: Path, n: int, *, sizes: list[int], nano: bool, seed: int = 3) -> list[tuple[int, bytes]]:
    """Write `n` UDP/TCP frames of several flows with irregular gaps (≥ 2 µs, so no
    frame waits for another anywhere on the path) at wall-clock times; returns
    (ns since the first, frame bytes)."""
    rng = random.Random(seed)
    t0 = 1_795_435_200  # seconds since 1970, as a real capture has
    pkts, at = [], 0
    for k in range(n):
        size = sizes[k % len(sizes)]
        l4 = TCP(sport=40000 + k % 5, dport=443) if k % 3 else UDP(sport=5000 + k % 4, dport=53)
        head = Ether(src="02:00:00:00:00:07", dst="02:00:00:00:00:08") / IP(src=f"10.9.0.{1 + k % 7}", dst="192.0.2.1") / l4
        p = head / Raw(bytes([k % 256]) * (size - len(head)))
        at += rng.choice((2_000, 3_000, 17_000, 250_000)) if k else 0
        at_ns = at if nano else at // 1000 * 1000
        p.time = Decimal(t0) + Decimal(at_ns) / 10**9  # exact: a float has no ns left at 1.8e9 s
        pkts.append((at_ns, p))
    wrpcap(str(path), [p for _, p in pkts], nano=nano)
    return [(t, bytes(p)) for t, p in pkts]


def run(scenario: Path, out: Path, *args) -> dict:
    r = runner.invoke(app, ["run", str(scenario), "--out", str(out), *map(str, args)])
    assert r.exit_code == 0, r.output
    return json.loads((out / "metrics.json").read_text())


def write_scenario(tmp_path: Path, traffic: str) -> Path:
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO + traffic)
    return f


def test_replay_delivers_the_recording_byte_for_byte(tmp_path):
    (tmp_path / "rec").mkdir()
    rec = recording(tmp_path / "rec" / "trace.pcap", 40, sizes=[60, 1514, 333, 98, 1200], nano=False)
    f = write_scenario(tmp_path, "  r: {target: c0, pattern: replay, pcap: rec/trace.pcap, start: 1ms}\n")
    m = run(f, tmp_path / "out", "--duration", "20ms", "--pcap")
    assert m["flows"]["r"]["tx_packets"] == m["flows"]["r"]["rx_packets"] == len(rec)
    got = read_pcap(tmp_path / "out" / "pcap" / "vm0.eth0.pcap")  # what the VM received
    assert [fr for _, fr in got] == [fr for _, fr in rec]
    sent = read_pcap(tmp_path / "out" / "pcap" / "snic0.eth0.in.pcap")  # what entered the sNIC port, and when
    assert [fr for _, fr in sent] == [fr for _, fr in rec]
    assert [t for t, _ in sent] == [1_000_000 + t for t, _ in rec]  # start + recorded offset, to the ns


def test_replay_keeps_the_recorded_gaps_at_the_sink(tmp_path):
    # equal sizes: every frame spends the same time on the path, so the VM sees the recorded gaps exactly
    rec = recording(tmp_path / "trace.pcap", 60, sizes=[512], nano=True)
    f = write_scenario(tmp_path, "  r: {target: c0, pattern: replay, pcap: trace.pcap}\n")
    run(f, tmp_path / "out", "--duration", "50ms", "--pcap")
    got = read_pcap(tmp_path / "out" / "pcap" / "vm0.eth0.pcap")
    assert [fr for _, fr in got] == [fr for _, fr in rec]
    gaps = lambda ts: [b - a for a, b in zip(ts, ts[1:])]  # noqa: E731
    assert gaps([t for t, _ in got]) == gaps([t for t, _ in rec])
    assert len(set(gaps([t for t, _ in rec]))) > 2  # the gaps really are irregular


def test_repeat_loops_the_recording_at_its_mean_gap(tmp_path):
    rec = recording(tmp_path / "trace.pcap", 5, sizes=[200], nano=True)
    span = rec[-1][0]
    period = span + span // 4  # span plus one mean gap
    f = write_scenario(tmp_path, "  r: {target: c0, pattern: replay, pcap: trace.pcap, repeat: true}\n")
    m = run(f, tmp_path / "out", "--duration", f"{(3 * period + 1) / 1e6}ms", "--pcap")
    sent = read_pcap(tmp_path / "out" / "pcap" / "snic0.eth0.in.pcap")
    assert [t for t, _ in sent] == [p * period + t for p in range(4) for t, _ in rec][:16]  # 3 passes + the 4th's first
    assert [fr for _, fr in sent] == ([fr for _, fr in rec] * 4)[:16]
    assert m["flows"]["r"]["tx_packets"] == 16


def flow_sizes(frames: list[bytes], concurrent: int) -> list[int]:
    """Packets per flow (IPv4 source + L4 source port) of the flows that ended:
    the flows of the last `concurrent` frames may still have been running."""
    key = lambda fr: fr[26:30] + fr[34:36]  # noqa: E731
    counts = Counter(key(fr) for fr in frames)
    for fr in frames[-concurrent:]:
        counts.pop(key(fr), None)
    return list(counts.values())


GENERATED = """\
  fixed: {target: c0, packet_rate: 1Mpps, flows: 4, flow_size: {dist: fixed, mean_packets: 25}}
  exp: {target: c1, packet_rate: 1Mpps, flows: 4, flow_size: {dist: exponential, mean_packets: 25}}
  pareto: {target: c2, packet_rate: 1Mpps, flows: 4, flow_size: {dist: pareto, mean_packets: 25, shape: 2.5}}
"""


def test_flow_sizes_average_the_configured_mean(tmp_path):
    f = write_scenario(tmp_path, GENERATED)
    m = run(f, tmp_path / "out", "--duration", "100ms", "--seed", "1", "--pcap")
    sizes = {}
    for name, vm in (("fixed", "vm0"), ("exp", "vm1"), ("pareto", "vm2")):
        frames = [fr for _, fr in read_pcap(tmp_path / "out" / "pcap" / f"{vm}.eth0.pcap")]
        f = m["flows"][name]
        assert len(frames) == f["rx_packets"] > 99_900 and 0 <= f["tx_packets"] - f["rx_packets"] < 10  # a few in flight
        sizes[name] = flow_sizes(frames, 4)
    assert set(sizes["fixed"]) == {25}
    for name, tol in (("exp", 0.05), ("pareto", 0.08)):  # ~4,000 flows each: standard errors ~1.6 % and ~2.3 %
        mean = sum(sizes[name]) / len(sizes[name])
        assert mean == pytest.approx(25, rel=tol), name
        assert min(sizes[name]) >= 1
    assert min(sizes["exp"]) == 1  # geometric: single-packet flows are the most common size
    assert max(sizes["pareto"]) > max(sizes["exp"])  # the heavy tail


def test_same_seed_same_metrics_json(tmp_path):
    example = REPO / "examples" / "replay-pcap.yaml"
    runs = {}
    for name, seed in (("a", 4), ("b", 4), ("c", 9)):
        run(example, tmp_path / name, "--duration", "84ms", "--seed", seed)
        runs[name] = (tmp_path / name / "metrics.json").read_text()
    assert runs["a"] == runs["b"]
    assert runs["a"] != runs["c"]  # the Poisson/Pareto background draws differently
    m = json.loads(runs["a"])
    # the looped recording: a pass lasts 40.4 ms + one mean gap (40.4 / 22 ms) = 42.24 ms, so 84 ms
    # holds two whole passes of 23 frames and stops just before the third begins (84.47 ms)
    assert m["flows"]["office"]["tx_packets"] == 2 * 23
    assert m["flows"]["office"]["rx_packets"] == 2 * 23


def test_run_reports_a_bad_pcap_as_a_scenario_error(tmp_path):
    recording(tmp_path / "trace.pcap", 3, sizes=[100], nano=False)
    data = (tmp_path / "trace.pcap").read_bytes()
    (tmp_path / "trace.pcap").write_bytes(data[:-10])
    f = write_scenario(tmp_path, "  r: {target: c0, pattern: replay, pcap: trace.pcap}\n")
    r = runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    line = f.read_text().splitlines().index("  r: {target: c0, pattern: replay, pcap: trace.pcap}") + 1
    # one line, never wrapped, whatever the path's length: FILE:LINE:COL: PATH: PCAP FILE: RECORD
    assert f"{f}:{line}:42: traffic.r.pcap: {tmp_path / 'trace.pcap'}: record 3 at byte {24 + 2 * (16 + 100)}:" \
           " claims 100 bytes but only 90 remain (truncated file)" in r.output.splitlines()


def test_machine_replay_errors_name_file_and_record(tmp_path):
    # the emulator reads the file itself too (for callers that skip the scenario model)
    recording(tmp_path / "t.pcap", 4, sizes=[80], nano=True)
    data = (tmp_path / "t.pcap").read_bytes()
    cases = {
        "cut.pcap": (data[:-90], "record 4 at byte 312: truncated header (6 of 16 bytes)"),
        "junk.pcap": (b"GET / HTTP/1.1\r\n" * 3, "not a pcap file: bad magic"),
        "empty.pcap": (data[:24], "the recording holds no frames"),
        "one.pcap": (data[:24 + 96], "cannot repeat a recording that spans no time"),
    }
    for name, (content, needle) in cases.items():
        (tmp_path / name).write_bytes(content)
        m = Machine()
        m.device("d", 1, 1e9)
        with pytest.raises(EmuError) as e:
            m.source("s", m.sw("d", 1), pattern="pcap", pcap=str(tmp_path / name), repeat=name == "one.pcap")
        assert str(tmp_path / name) in str(e.value) and needle in str(e.value), str(e.value)
        assert str(e.value).startswith("source s: ")
    m = Machine()
    m.device("d", 1, 1e9)
    with pytest.raises(EmuError, match=r"source s: .*nope\.pcap: cannot read"):
        m.source("s", m.sw("d", 1), pattern="pcap", pcap=str(tmp_path / "nope.pcap"))
