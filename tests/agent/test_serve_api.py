"""`tandem serve --scenario … --api`: the NF agent's REST API beside the OpenFlow endpoint,
on the same OneSwitch state. A controller's FLOW_MOD (over OpenFlow) and a rule written
through the API carry the scenario's traffic through the NF, and both reach the database;
an NF moves; after `kill -9` and a restart on the same --state-db the NFs sit where they
were, the rules are back once, traffic flows."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule
from test_rest_api import SCENARIO, metric, nf_packets, wait_migration, wait_more_packets

TANDEM = [sys.executable, "-m", "tandem.cli"]


class Serve:
    def __init__(self, tmp: Path, db: Path) -> None:
        self.logpath = tmp / f"serve-{time.monotonic_ns()}.log"
        self.log = open(self.logpath, "wb")
        self.proc = subprocess.Popen(
            [*TANDEM, "serve", "--scenario", str(SCENARIO), "--backend", "emu", "--listen", "ptcp:0:127.0.0.1",
             "--api", "127.0.0.1:0", "--state-db", str(db)], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while True:
            m = re.search(r"REST API on (http://\S+)", self.logpath.read_text())
            if m:
                break
            assert self.proc.poll() is None, self.logpath.read_text()
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.05)
        self.http = httpx.Client(base_url=m.group(1), timeout=30)
        self.of_port = int(re.search(r"listening on ptcp:(\d+)", self.logpath.read_text()).group(1))

    def kill(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.log.close()


def test_serve_api_kill9_restart(tmp_path):
    db = tmp_path / "serve.db"
    s = Serve(tmp_path, db)
    ctl = None
    try:
        h = s.http
        assert h.get("/v1/rules").json()["rules"] == []  # in serve, the controller (or the API) writes the rules
        # a controller's FLOW_MOD over OpenFlow, and one rule through the API
        ctl = controller_flow_mods(s.of_port, [FlowMod("add", Rule(Match.of(in_port=1), (ApplyActions((Output(4),)),),
                                                                    priority=100))])
        assert h.post("/v1/rules", json={"rule": "priority=100,in_port=5,actions=output:3"}).status_code == 201
        deadline = time.monotonic() + 10
        while len(h.get("/v1/rules").json()["rules"]) < 2:  # the controller's rule reaches the database
            assert time.monotonic() < deadline, h.get("/v1/rules").json()
            time.sleep(0.1)
        assert any("in_port=1," in x["rule"] for x in h.get("/v1/rules").json()["rules"])
        wait_more_packets(h, "m1", 0)
        assert h.post("/v1/nfs", json={"name": "mon2", "type": "monitor", "ports": 1, "device": "host"}).status_code == 201
        here = h.get("/v1/nfs/m1").json()["nf"]["device"]
        there = "host" if here == "snic0" else "snic0"
        mid = h.post("/v1/migrations", json={"nf": "m1", "destination": there}).json()["migration"]["id"]
        assert wait_migration(h, mid)["status"] == "done"
        wait_more_packets(h, "m1", nf_packets(h, "m1"))
        snap = (h.get("/v1/nfs").json(), h.get("/v1/rules").json(), h.get("/v1/placements").json()["placement"])
        text = h.get("/metrics").text
        phys = [metric(text, "tandem_agent_physical_rules", switch=sw) for sw in ("host", "snic0")]
    finally:
        s.kill(signal.SIGKILL)
        if ctl is not None:
            ctl.close()
    s = Serve(tmp_path, db)
    try:
        h = s.http
        assert (h.get("/v1/nfs").json(), h.get("/v1/rules").json(), h.get("/v1/placements").json()["placement"]) == snap
        assert snap[2]["m1"] == there
        text = h.get("/metrics").text
        assert [metric(text, "tandem_agent_physical_rules", switch=sw) for sw in ("host", "snic0")] == phys
        wait_more_packets(h, "m1", 0)
    finally:
        s.kill(signal.SIGTERM)
    assert s.proc.returncode == 0, s.logpath.read_text()


def controller_flow_mods(port: int, mods: list) -> socket.socket:
    """A minimal controller: HELLO, the FLOW_MODs, a BARRIER; waits for the barrier reply."""
    from tandem.rules import ofwire_msgs as M

    c = socket.create_connection(("127.0.0.1", port), timeout=30)
    c.sendall(M.encode_hello(1) + b"".join(M.encode_flow_mod(10 + i, m) for i, m in enumerate(mods))
              + M.encode_barrier_request(99))
    buf = bytearray()
    while True:
        data = c.recv(65536)
        assert data, "switch closed the connection"
        buf += data
        if any(m.type == 21 and m.xid == 99 for m in M.split_messages(bytearray(buf))):  # OFPT_BARRIER_REPLY
            return c


def test_serve_api_needs_a_scenario(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text("switches: {h: {kind: host}}\nports: {1: 'h:1'}\n")
    r = subprocess.run([*TANDEM, "serve", "--topology", str(topo), "--backend", "fake", "--listen", "ptcp:0",
                        "--api", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--api" in r.stderr and "--scenario" in r.stderr and r.stderr.count("\n") == 1
    r = subprocess.run([*TANDEM, "serve", "--scenario", str(SCENARIO), "--backend", "emu", "--listen", "ptcp:0",
                        "--api", "localhost"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr and r.stderr.count("\n") == 1
