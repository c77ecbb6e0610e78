"""The NF agent's REST API over real HTTP: `tandem agent` (uvicorn on 127.0.0.1, a free
port) driven with httpx through every resource; invalid bodies are 4xx naming the field;
the OpenAPI document validates; `kill -9` and a restart on the same --state-db give the
same instances, rules and placements, nothing duplicated, and traffic flowing again.
The CLI talks to the same server, and to a dead one (exit 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

SCENARIO = Path(__file__).with_name("agent-scenario.yaml")
TANDEM = [sys.executable, "-m", "tandem.cli"]
START_TIMEOUT_S = 90
STEPS = ["provision", "buffer", "remap", "drain", "transfer", "release", "retire", "cleanup"]


class Agent:
    def __init__(self, tmp: Path, db: Path, extra: tuple[str, ...] = ()) -> None:
        self.ready = tmp / f"ready-{time.monotonic_ns()}"
        self.log = open(tmp / "agent.log", "ab")
        self.proc = subprocess.Popen(
            [*TANDEM, "agent", "--scenario", str(SCENARIO), "--api", "127.0.0.1:0", "--state-db", str(db),
             "--ready-file", str(self.ready), *extra], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.ready.exists() or not self.ready.read_text().strip():
            if self.proc.poll() is not None:
                raise AssertionError(f"agent exited {self.proc.returncode}: {(tmp / 'agent.log').read_text()}")
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("agent did not start")
            time.sleep(0.05)
        self.url = self.ready.read_text().strip()
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture
def agent(tmp_path):
    a = Agent(tmp_path, tmp_path / "agent.db")
    yield a
    a.kill(signal.SIGTERM)
    assert a.proc.returncode == 0, (tmp_path / "agent.log").read_text()  # SIGTERM is a clean stop
    assert "agent stopped" in (tmp_path / "agent.log").read_text()


@pytest.fixture(scope="module")
def shared_agent(tmp_path_factory):
    """One agent for the tests that change nothing (refused requests, documents)."""
    tmp = tmp_path_factory.mktemp("shared-agent")
    a = Agent(tmp, tmp / "agent.db")
    yield a
    a.kill(signal.SIGTERM)


def metric(text: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    raise KeyError(f"{name} {labels}")


def wait_migration(http: httpx.Client, mid: str) -> dict:
    deadline = time.monotonic() + 30
    while True:
        m = http.get(f"/v1/migrations/{mid}").json()["migration"]
        if m["status"] in ("done", "failed") or time.monotonic() > deadline:
            return m
        time.sleep(0.02)


def nf_packets(http: httpx.Client, nf: str) -> float:
    return metric(http.get("/metrics").text, "tandem_nf_counter_total", nf=nf, counter="packets")


def wait_more_packets(http: httpx.Client, nf: str, than: float, timeout_s: float = 20) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        n = nf_packets(http, nf)
        if n > than:
            return n
        time.sleep(0.1)
    raise AssertionError(f"no new packets at {nf} in {timeout_s}s (still {than})")


def test_every_resource(agent):
    h = agent.http
    assert h.get("/healthz").json()["status"] == "ok"
    nfs = h.get("/v1/nfs").json()["nfs"]
    assert [n["name"] for n in nfs] == ["m1"]
    r = h.post("/v1/nfs", json={"name": "mon2", "type": "monitor", "config": {"depth": 3}, "ports": 2, "device": "snic0"})
    assert r.status_code == 201, r.text
    nf = r.json()["nf"]
    assert nf["device"] == "snic0" and nf["ports"] == [1000, 1001] and nf["config"] == {"depth": 3}
    assert h.get(f"/v1/nfs/{nf['id']}").json()["nf"]["name"] == "mon2"
    assert h.get("/v1/nfs/mon2").json()["nf"]["id"] == nf["id"]
    assert {n["name"] for n in h.get("/v1/nfs").json()["nfs"]} == {"m1", "mon2"}
    # rules: put mon2 behind m1 on the way to the VM
    rules = h.get("/v1/rules").json()["rules"]
    assert len(rules) == 2
    m1_to_vm = next(x for x in rules if "in_port=5" in x["rule"])
    r = h.post("/v1/rules", json={"rule": "priority=300,in_port=5,actions=output:1000"})
    assert r.status_code == 201, r.text
    r2 = h.post("/v1/rules", json={"rule": "priority=300,in_port=1001,actions=output:3"})
    assert r2.status_code == 201
    assert len(h.get("/v1/rules").json()["rules"]) == 4
    assert wait_more_packets(h, "mon2", 0) > 0  # the scenario's traffic now crosses mon2
    # state: export, import back, garbage refused
    blob = h.get("/v1/nfs/mon2/state")
    assert blob.status_code == 200 and blob.headers["content-type"] == "application/octet-stream" and len(blob.content) > 0
    assert h.put("/v1/nfs/mon2/state", content=blob.content, headers={"content-type": "application/octet-stream"}).status_code == 204
    bad = h.put("/v1/nfs/mon2/state", content=b"garbage", headers={"content-type": "application/octet-stream"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "body"
    # placements
    pl = h.get("/v1/placements").json()
    assert pl["placement"] == {"m1": pl["placement"]["m1"], "mon2": "snic0"}
    assert pl["decision"]["placement"]["m1"] == pl["placement"]["m1"]
    opt = h.post("/v1/placements:optimize", json={}).json()["placement"]
    assert set(opt["placement"]) == {"m1"} and opt["applied"] is False and opt["mode"] == "uno"
    # migrations: move m1 to the other device, then back
    here = pl["placement"]["m1"]
    there = "host" if here == "snic0" else "snic0"
    r = h.post("/v1/migrations", json={"nf": "m1", "destination": there})
    assert r.status_code == 202, r.text
    m = wait_migration(h, r.json()["migration"]["id"])
    assert m["status"] == "done", m
    assert [s["step"] for s in m["steps"]] == STEPS
    assert m["state_bytes"] > 0
    assert h.get("/v1/placements").json()["placement"]["m1"] == there
    assert any(x["id"] == m["id"] for x in h.get("/v1/migrations").json()["migrations"])
    before = nf_packets(h, "m1")
    wait_more_packets(h, "m1", before)  # the moved NF keeps receiving
    text = h.get("/metrics").text
    assert metric(text, "tandem_agent_nfs") == 2
    assert metric(text, "tandem_agent_migrations_total", outcome="done") == 1
    assert metric(text, "tandem_agent_nf_device", nf="m1", device=there) == 1
    # delete: refused while rules use it, then allowed
    assert h.delete("/v1/nfs/mon2").status_code == 409
    for x in h.get("/v1/rules").json()["rules"]:
        if "1000" in x["rule"] or "1001" in x["rule"]:
            assert h.delete(f"/v1/rules/{x['id']}").status_code == 204
    assert h.delete("/v1/nfs/mon2").status_code == 204
    gone = h.get("/v1/nfs/mon2")
    assert gone.status_code == 404 and gone.json()["error"]["field"] == "path.id"
    assert {x["rule"] for x in h.get("/v1/rules").json()["rules"]} >= {m1_to_vm["rule"]}


@pytest.mark.parametrize("body, field, words", [
    ({"type": "monitor"}, "body.name", "required"),
    ({"name": "x", "type": "nosuch"}, "body.type", "l7fw"),
    ({"name": "x", "type": "monitor", "config": {"depth": "deep"}}, "body.config.depth", ""),
    ({"name": "x", "type": "monitor", "ports": 3}, "body.ports", "2"),
    ({"name": "x", "type": "monitor", "device": "snic9"}, "body.device", "snic0"),
    ({"name": "x", "type": "monitor", "colour": "red"}, "body.colour", ""),
    ({"name": "x", "type": "monitor", "cost": {"cycles_per_packet": -1}}, "body.cost.cycles_per_packet", ""),
])
def test_invalid_nf_bodies_name_the_field(shared_agent, body, field, words):
    agent = shared_agent
    r = agent.http.post("/v1/nfs", json=body)
    assert 400 <= r.status_code < 500, r.text
    err = r.json()["error"]
    assert err["field"].startswith(field), err
    assert words in err["message"]
    assert [n["name"] for n in agent.http.get("/v1/nfs").json()["nfs"]] == ["m1"]  # nothing created


def test_other_refusals(shared_agent):
    h = shared_agent.http
    assert h.post("/v1/nfs", json={"name": "m1", "type": "monitor"}).status_code == 409
    r = h.post("/v1/migrations", json={"nf": "m1", "destination": "nowhere"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "body.destination"
    r = h.post("/v1/migrations", json={"nf": "zz", "destination": "host"})
    assert r.status_code == 404
    r = h.post("/v1/migrations", json={"destination": "host"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "body.nf"
    r = h.post("/v1/rules", json={"rule": "priority=1,actions=frobnicate"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "body.rule"
    r = h.post("/v1/placements:optimize", json={"pins": {"m1": "snic9"}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "body.pins.m1"
    r = h.post("/v1/nfs", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["field"].startswith("body")
    assert h.get("/v1/migrations/nope").status_code == 404
    assert h.get("/healthz").json()["status"] == "ok"  # the agent lives on


def test_openapi_document_validates(shared_agent):
    agent = shared_agent
    from openapi_spec_validator import validate

    doc = agent.http.get("/openapi.json").json()
    validate(doc)
    paths = set(doc["paths"])
    assert {"/v1/nfs", "/v1/nfs/{nf_id}", "/v1/nfs/{nf_id}/state", "/v1/placements", "/v1/placements:optimize",
            "/v1/migrations", "/v1/migrations/{mig_id}", "/healthz", "/metrics"} <= paths
    docs = agent.http.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_kill9_and_restart_on_the_same_state_db(tmp_path):
    db = tmp_path / "agent.db"
    a = Agent(tmp_path, db)
    h = a.http
    assert h.post("/v1/nfs", json={"name": "mon2", "type": "monitor", "device": "snic0"}).status_code == 201
    assert h.post("/v1/rules", json={"rule": "priority=300,in_port=5,actions=output:1000"}).status_code == 201
    assert h.post("/v1/rules", json={"rule": "priority=300,in_port=1001,actions=output:3"}).status_code == 201
    here = h.get("/v1/placements").json()["placement"]["m1"]
    mid = h.post("/v1/migrations", json={"nf": "m1", "destination": "host" if here == "snic0" else "snic0"}).json()
    assert wait_migration(h, mid["migration"]["id"])["status"] == "done"
    wait_more_packets(h, "mon2", nf_packets(h, "mon2"))  # steady state: traffic flows through both NFs
    time.sleep(0.7)  # past one rule-sync period
    snap = {"nfs": h.get("/v1/nfs").json(), "rules": h.get("/v1/rules").json(),
            "placement": h.get("/v1/placements").json()["placement"]}
    text = h.get("/metrics").text
    ops = (metric(text, "tandem_agent_virtual_rules"), metric(text, "tandem_agent_physical_rules", switch="host"),
           metric(text, "tandem_agent_physical_rules", switch="snic0"))
    assert ops[1] > 0 and ops[2] > 0
    a.kill(signal.SIGKILL)
    assert a.proc.returncode == -signal.SIGKILL

    b = Agent(tmp_path, db)
    try:
        h = b.http
        assert h.get("/v1/nfs").json() == snap["nfs"]
        assert h.get("/v1/rules").json() == snap["rules"]
        assert h.get("/v1/placements").json()["placement"] == snap["placement"]
        text = h.get("/metrics").text
        assert (metric(text, "tandem_agent_virtual_rules"), metric(text, "tandem_agent_physical_rules", switch="host"),
                metric(text, "tandem_agent_physical_rules", switch="snic0")) == ops  # nothing duplicated
        # traffic flows again through both NFs (counters of the restarted emulator start at 0)
        wait_more_packets(h, "m1", 0)
        wait_more_packets(h, "mon2", 0)
        vm_port = "3"  # vm1.eth0 (sNIC ports 1, 2 come first)
        text = h.get("/metrics").text
        assert metric(text, "tandem_switch_port_packets_total", switch="host", port=vm_port, direction="tx") > 0
    finally:
        b.kill(signal.SIGTERM)
    import sqlite3

    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT COUNT(*) FROM nfs").fetchone()[0] == 2
    con.close()


def test_cli_against_the_server(agent):
    env = dict(os.environ, TANDEM_AGENT_URL=agent.url)
    out = subprocess.run([*TANDEM, "nf", "list", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert [n["name"] for n in json.loads(out.stdout)["nfs"]] == ["m1"]
    out = subprocess.run([*TANDEM, "nf", "create", "mon3", "--type", "monitor", "--device", "host", "--ports", "1"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "mon3" in out.stdout, out.stderr
    out = subprocess.run([*TANDEM, "nf", "create", "bad", "--type", "nosuch"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "body.type" in out.stderr and "monitor" in out.stderr
    here = agent.http.get("/v1/nfs/m1").json()["nf"]["device"]
    there = "host" if here == "snic0" else "snic0"
    out = subprocess.run([*TANDEM, "nf", "migrate", "m1", "--to", there], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "done" in out.stdout and "remap" in out.stdout, out.stdout + out.stderr
    out = subprocess.run([*TANDEM, "placement", "show", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(out.stdout)["placement"] == {"m1": there, "mon3": "host"}
    out = subprocess.run([*TANDEM, "placement", "optimize"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "m1" in out.stdout, out.stderr
    out = subprocess.run([*TANDEM, "nf", "delete", "mon3"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    out = subprocess.run([*TANDEM, "nf", "list"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "m1" in out.stdout and "mon3" not in out.stdout


def test_cli_with_no_server_is_one_line_exit_3():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    for args in (["nf", "list"], ["placement", "show", "--json"], ["nf", "migrate", "m1", "--to", "host"]):
        out = subprocess.run([*TANDEM, *args, "--url", f"http://127.0.0.1:{port}"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 3, out
        assert out.stderr.count("\n") == 1 and "cannot reach the agent" in out.stderr


def test_agent_command_refusals(tmp_path):
    import socket

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ndevices: {host: {kind: host, cores: -1}}\n")
    r = subprocess.run([*TANDEM, "agent", "--scenario", str(bad), "--api", "127.0.0.1:0", "--state-db", str(tmp_path / "d.db")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.yaml" in r.stderr, r.stderr
    r = subprocess.run([*TANDEM, "agent", "--scenario", str(SCENARIO), "--api", "nowhere"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    r = subprocess.run([*TANDEM, "agent", "--scenario", str(SCENARIO), "--api", "127.0.0.1:0", "--state-db", str(junk)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "junk.db" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = subprocess.run([*TANDEM, "agent", "--scenario", str(SCENARIO), "--api", f"127.0.0.1:{port}", "--state-db",
                            str(tmp_path / "e.db")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "already in use" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_move_spans_modelled_time_and_a_second_one_is_409(tmp_path):
    """A migration runs in simulated time (the agent's clock slowed down here, so the move
    lasts a while in wall time): while it runs a second move of the same NF is 409, the
    migration shows status running with the steps so far; it then ends loss-free with its
    modelled figures, and the NF can move again."""
    a = Agent(tmp_path, tmp_path / "agent.db", ("--speed", "1e-5"))  # 10 us of simulated time per wall second
    try:
        h = a.http
        here = h.get("/v1/placements").json()["placement"]["m1"]
        there = "host" if here == "snic0" else "snic0"
        r = h.post("/v1/migrations", json={"nf": "m1", "destination": there})
        assert r.status_code == 202, r.text
        mid = r.json()["migration"]["id"]
        again = h.post("/v1/migrations", json={"nf": "m1", "destination": here})
        assert again.status_code == 409, again.text
        assert again.json()["error"]["field"] == "body.nf" and "one migration per NF" in again.json()["error"]["message"]
        now = h.get(f"/v1/migrations/{mid}").json()["migration"]
        assert now["status"] in ("queued", "running") and now["finished"] is None
        m = wait_migration(h, mid)
        assert m["status"] == "done", m
        assert [s["step"] for s in m["steps"]] == STEPS
        p = m["progress"]
        assert p["state_bytes"] == m["state_bytes"] > 0 and p["duration_s"] > 0
        assert p["lost"] == p["duplicated"] == p["reordered"] == 0
        assert h.get("/v1/placements").json()["placement"]["m1"] == there
        back = h.post("/v1/migrations", json={"nf": "m1", "destination": here})
        assert back.status_code == 202, back.text  # the NF moves again once the first move ended
    finally:
        a.kill(signal.SIGTERM)  # a clean stop also finishes the move still running
    assert a.proc.returncode == 0, (tmp_path / "agent.log").read_text()
    from tandem.agent.store import Store

    st = Store(tmp_path / "agent.db")
    try:
        assert [(x.destination, x.status) for x in st.migrations()] == [(there, "done"), (here, "done")]
        assert {r.name: r.device for r in st.nfs()}["m1"] == here
    finally:
        st.close()
