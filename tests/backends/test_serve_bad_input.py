"""`tandem serve`: a busy port and a missing interface are one line with their exit code."""

from __future__ import annotations

import socket
from pathlib import Path

from typer.testing import CliRunner

from tandem.cli import app

TOPO = Path(__file__).resolve().parents[1] / "endpoint" / "three_switches.yaml"
runner = CliRunner()


def test_listen_on_a_port_in_use_is_exit_3_one_line():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = runner.invoke(app, ["serve", "--topology", str(TOPO), "--backend", "fake", "--listen", f"ptcp:{port}:127.0.0.1"])
    assert r.exit_code == 3, r.output
    err = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert err == [f"error: --listen ptcp:{port}:127.0.0.1: cannot listen: the port is already in use"
                   " (another switch or controller listens there)"]
    assert "Traceback" not in r.output


def test_port_iface_naming_no_interface_is_refused_for_ovs():
    r = runner.invoke(app, ["serve", "--topology", str(TOPO), "--backend", "ovs", "--listen", "ptcp:0",
                            "--port-iface", "1=nosuchif"])
    assert r.exit_code == 2
    assert r.output.strip() == "error: --port-iface: no network interface named 'nosuchif' on this machine (`ip link` lists them)"


def test_port_iface_on_a_backend_that_ignores_it_warns():
    with socket.socket() as busy:  # stop right after the warning: the port is taken
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = runner.invoke(app, ["serve", "--topology", str(TOPO), "--backend", "fake", "--listen", f"ptcp:{port}:127.0.0.1",
                                "--port-iface", "1=lo"])
    assert "warning: --port-iface lo: only the ovs backend attaches interfaces; the fake backend ignores it" in r.output
