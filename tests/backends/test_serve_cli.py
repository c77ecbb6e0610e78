"""`tandem serve` refuses bad input with one precise line (exit 2), never a traceback,
and serves a controller on the fake backend until SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M

TOPO = Path(__file__).resolve().parents[1] / "endpoint" / "three_switches.yaml"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["serve", *args])


@pytest.mark.parametrize("args, message", [
    (["--topology", "nope.yaml", "--listen", "ptcp:0"], "--topology nope.yaml: no such file"),
    (["--topology", str(TOPO)], "give --controller tcp:HOST:PORT and/or --listen ptcp:PORT"),
    (["--topology", str(TOPO), "--controller", "127.0.0.1:6653"], "--controller '127.0.0.1:6653': expected tcp:HOST:PORT"),
    (["--topology", str(TOPO), "--listen", "tcp:6633"], "--listen 'tcp:6633': expected ptcp:PORT"),
    (["--topology", str(TOPO), "--listen", "ptcp:0", "--backend", "p4"], "--backend 'p4': expected ovs, emu or fake"),
    (["--topology", str(TOPO), "--listen", "ptcp:0", "--dpid", "xyz"], "--dpid 'xyz': expected hexadecimal digits"),
    (["--topology", str(TOPO), "--listen", "ptcp:0", "--backend", "fake", "--port-iface", "9=veth9"], "virtual port 9 is not in the topology"),
])
def test_user_errors_are_one_line(args, message):
    r = run(*args)
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


def test_bad_topology_names_file_and_line(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("switches:\n  host: {kind: host}\nports:\n  1: \"host:0\"\n")
    r = run("--topology", str(bad), "--listen", "ptcp:0", "--backend", "fake")
    assert r.exit_code == 2 and f"{bad}:4: ports.1: physical port 0 outside" in r.output and "Traceback" not in r.output


def test_serves_until_sigterm(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ready = tmp_path / "ready"
    p = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve", "--topology", str(TOPO), "--backend", "fake",
                          "--listen", f"ptcp:{port}:127.0.0.1", "--ready-file", str(ready), "--dpid", "abc"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert p.poll() is None and time.monotonic() < deadline, p.stdout.read() if p.stdout else ""
            time.sleep(0.05)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(M.encode_hello() + M.encode_features_request(9))
            buf = bytearray()
            while True:
                buf += c.recv(4096)
                msgs = M.split_messages(buf)
                if any(m.type == W.OFPT_FEATURES_REPLY for m in msgs):
                    break
            [feat] = [m for m in msgs if m.type == W.OFPT_FEATURES_REPLY]
            assert M.decode_features_reply(feat.body)[0] == 0xABC
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0 and "stopped; removed what was created" in out
    finally:
        if p.poll() is None:
            p.kill()
