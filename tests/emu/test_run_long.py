"""`tandem run` on long work: Ctrl-C stops within a slice and keeps partial results,
progress is shown, and --pcap warns about its size and can be cut (snaplen, limit)."""

import json
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.emu.run import estimate_pcap_bytes
from tandem.model.load import load_scenario

REPO = Path(__file__).resolve().parents[2]
SDWAN = REPO / "examples" / "uno-sdwan.yaml"
runner = CliRunner()


def _read_lines(stream, into: list, seen: threading.Event | None = None, marker: str = "") -> None:
    """Collect a child's output lines as they come (so its pipe never fills); set `seen` at `marker`."""
    for line in stream:
        into.append(line)
        if seen is not None and marker in line:
            seen.set()


def test_ctrl_c_stops_a_long_run_quickly_and_writes_partial_metrics(tmp_path):
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "tandem.cli", "run", str(SDWAN), "--duration", "100000s", "--out", str(out),
                          "--pcap", "--pcap-limit", "200KB"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout_lines: list[str] = []
    stderr_lines: list[str] = []
    progress = threading.Event()
    readers = [threading.Thread(target=_read_lines, args=(p.stdout, stdout_lines), daemon=True),
               threading.Thread(target=_read_lines, args=(p.stderr, stderr_lines, progress, "emulating:"), daemon=True)]
    for r in readers:
        r.start()
    try:
        # Start-up (imports, scenario, build) takes however long the machine's load makes it:
        # wait for the first progress line (the ticker prints after 5 s of emulation), not a fixed time.
        assert progress.wait(timeout=180), "no 'emulating:' progress line in 180 s:\n" + "".join(stderr_lines)
        assert p.poll() is None
        t = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
        took = time.monotonic() - t  # from Ctrl-C to exit only
    finally:
        if p.poll() is None:
            p.kill()
        for r in readers:
            r.join(timeout=10)
    stderr = "".join(stderr_lines)
    assert p.returncode == 130, stderr
    assert took < 0.5, took  # one ~20 ms slice, the metrics, the tables; no interpreter teardown
    assert "Traceback" not in stderr
    m = json.loads((out / "metrics.json").read_text())
    assert m["partial"] is True and m["requested_duration_s"] == 100000
    assert 0 < m["duration_s"] < 100000
    assert m["flows"]["wan-in"]["throughput_gbps"] == pytest.approx(4.0, rel=0.05)  # rates over the time done
    assert "interrupted:" in stderr and "partial" in stderr
    assert "emulating:" in stderr and "s simulated in" in stderr and "left" in stderr  # progress without a terminal
    captures = sorted((out / "pcap").glob("*.pcap"))
    assert captures and all(_records(f) is not None for f in captures)  # each closed on whole records (no teardown needed)
    assert sum(len(_records(f)) for f in captures) > 0


def test_slicing_does_not_change_the_result(tmp_path):
    from tandem.emu.run import run_scenario

    sc = load_scenario(SDWAN)
    a = run_scenario(sc, tmp_path / "a", duration=0.005)
    b = run_scenario(sc, tmp_path / "b", duration=0.005, wall_step_s=1e-5, progress=lambda s: None)
    assert a == b


def test_pcap_estimate_scales_with_rate_time_and_snaplen():
    sc = load_scenario(SDWAN)
    one = estimate_pcap_bytes(sc, 1.0)
    pps = 4e9 / (1280 * 8)
    assert one == pytest.approx(2 * pps * (16 + 1280), rel=1e-6)  # ~1 GB per simulated second at 4 Gb/s
    assert estimate_pcap_bytes(sc, 10.0) == pytest.approx(10 * one, rel=1e-6)
    assert estimate_pcap_bytes(sc, 1.0, snaplen=64) == pytest.approx(2 * pps * 80, rel=1e-6)
    assert estimate_pcap_bytes(sc, 10.0, limit=1000, files=10) == 10000


def test_pcap_warns_above_the_threshold(tmp_path, monkeypatch):
    import tandem.emu.cli as emu_cli

    monkeypatch.setattr(emu_cli, "PCAP_WARN_BYTES", 1_000_000)
    r = runner.invoke(app, ["run", str(SDWAN), "--duration", "5ms", "--pcap", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "warning: --pcap will write about 5.1 MB" in r.output and "--pcap-snaplen" in r.output and "--pcap-limit" in r.output
    r = runner.invoke(app, ["run", str(SDWAN), "--duration", "5ms", "--pcap", "--pcap-limit", "10KB", "--out", str(tmp_path)])
    assert "warning" not in r.output  # the limit bounds what is written


def _records(path: Path) -> list[tuple[int, int]] | None:
    """(captured, original) length of each record; None if the file ends inside a record."""
    data = path.read_bytes()
    if len(data) < 24:
        return None
    out, off = [], 24
    while off < len(data):
        if off + 16 > len(data):
            return None
        incl, orig = struct.unpack("<II", data[off + 8: off + 16])
        out.append((incl, orig))
        off += 16 + incl
    return out if off == len(data) else None


def test_pcap_snaplen_and_limit_cut_the_files(tmp_path):
    r = runner.invoke(app, ["run", str(SDWAN), "--duration", "5ms", "--pcap", "--pcap-snaplen", "64",
                            "--pcap-limit", "20KB", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    f = tmp_path / "pcap" / "vm1.eth0.pcap"
    assert f.stat().st_size <= 20_000
    recs = _records(f)
    assert recs and all(incl == 64 and orig == 1280 for incl, orig in recs)
    assert len(recs) == (20_000 - 24) // 80
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["pcap_frames_skipped"] > 0
    assert "frames not written (files reached --pcap-limit)" in r.output


@pytest.mark.parametrize("args,needle", [(["--pcap-limit", "10"], "--pcap-limit"), (["--pcap-limit", "2B"], "at least"),
                                         (["--pcap-snaplen", "0"], "--pcap-snaplen")])
def test_bad_pcap_flags_are_usage_errors(tmp_path, args, needle):
    r = runner.invoke(app, ["run", str(SDWAN), "--duration", "1ms", "--pcap", *args, "--out", str(tmp_path)])
    assert r.exit_code == 2 and needle in r.output


def test_an_output_that_cannot_be_written_is_exit_3(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = runner.invoke(app, ["run", str(SDWAN), "--duration", "1ms", "--out", str(blocker / "sub")])
    last = r.output.strip().splitlines()[-1]  # after the printed placement decision
    assert r.exit_code == 3 and last.startswith("error:") and "Not a directory" in last and "Traceback" not in r.output
