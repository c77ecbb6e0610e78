"""The NF agent's REST API: request latency and the REST migration path.

  tandem bench agent_api [--scenario examples/sdwan-real-nfs.yaml] [--requests 200] [--moves 10]

Starts `tandem agent` on the scenario (a free loopback port, a fresh state
database in a temp dir), then over one keep-alive HTTP connection:
- GET /v1/nfs, GET /healthz and POST+DELETE /v1/rules `--requests` times each
  (wall time per request, client side: p50, p99);
- moves the scenario's last NF to the other device and back `--moves` times
  (POST /v1/migrations, polled to `done`): wall time of the move as the agent
  records it (provision .. cleanup; the move ends in simulated time, so this
  includes waiting for the agent's clock), the state bytes, the request-to-done
  time the client sees, and the move's modelled figures from its progress
  (duration, packets buffered, lost/duplicated/reordered).
Prints medians and the machine's load (`uptime`). Nothing here is a paper figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    import httpx

    ap = argparse.ArgumentParser(prog="tandem bench agent_api")
    ap.add_argument("--scenario", default=str(REPO / "examples" / "sdwan-real-nfs.yaml"))
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--moves", type=int, default=10)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tandem-agent-bench-") as tmp:
        ready = Path(tmp) / "ready"
        log = open(Path(tmp) / "agent.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "tandem.cli", "agent", "--scenario", a.scenario, "--api",
                                 "127.0.0.1:0", "--state-db", str(Path(tmp) / "a.db"), "--ready-file", str(ready)],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while not (ready.exists() and ready.read_text().strip()):
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"error: the agent did not start: {(Path(tmp) / 'agent.log').read_text()}")
                time.sleep(0.05)
            h = httpx.Client(base_url=ready.read_text().strip(), timeout=60)
            lat: dict[str, list[float]] = {"GET /v1/nfs": [], "GET /healthz": [], "POST+DELETE /v1/rules": []}
            for _ in range(a.requests):
                for path in ("/v1/nfs", "/healthz"):
                    t = time.perf_counter()
                    h.get(path).raise_for_status()
                    lat[f"GET {path}"].append(time.perf_counter() - t)
                t = time.perf_counter()
                r = h.post("/v1/rules", json={"rule": "table=0,priority=7,udp,tp_dst=9999,actions=drop"})
                r.raise_for_status()
                h.delete(f"/v1/rules/{r.json()['rule']['id']}").raise_for_status()
                lat["POST+DELETE /v1/rules"].append(time.perf_counter() - t)
            nf = h.get("/v1/nfs").json()["nfs"][-1]
            devices = [nf["device"], "host" if nf["device"] != "host" else next(
                d for d in ("snic0", "snic1") if d != nf["device"])]
            agent_ms, client_ms, state_bytes, modelled = [], [], [], []
            for i in range(a.moves):
                t = time.perf_counter()
                mid = h.post("/v1/migrations", json={"nf": nf["name"], "destination": devices[(i + 1) % 2]}).json()
                mid = mid["migration"]["id"]
                while True:
                    m = h.get(f"/v1/migrations/{mid}").json()["migration"]
                    if m["status"] in ("done", "failed"):
                        break
                if m["status"] != "done":
                    sys.exit(f"error: migration failed: {m['error']}")
                client_ms.append((time.perf_counter() - t) * 1e3)
                agent_ms.append(m["steps"][-1]["wall_ms"])
                state_bytes.append(m["state_bytes"])
                modelled.append(m["progress"])
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()
    print(f"scenario {Path(a.scenario).name}; load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} (1/5/15 min)")
    print(f"{'request':<24} {'n':>5} {'p50 ms':>8} {'p99 ms':>8}")
    for k, xs in lat.items():
        print(f"{k:<24} {len(xs):>5} {statistics.median(xs) * 1e3:>8.3f} {pct(xs, 0.99) * 1e3:>8.3f}")
    print(f"migration of {nf['name']} {devices[0]} <-> {devices[1]}, {a.moves} moves: agent wall median "
          f"{statistics.median(agent_ms):.3f} ms (max {max(agent_ms):.3f}), request-to-done median "
          f"{statistics.median(client_ms):.3f} ms, state bytes median {statistics.median(state_bytes):.0f}")
    print(f"modelled: move median {statistics.median(p['duration_s'] for p in modelled) * 1e6:.1f} us "
          f"(max {max(p['duration_s'] for p in modelled) * 1e6:.1f}), packets buffered median "
          f"{statistics.median(p['buffered_packets'] for p in modelled):.0f}, "
          f"lost {sum(p['lost'] for p in modelled)}, duplicated {sum(p['duplicated'] for p in modelled)}, "
          f"reordered {sum(p['reordered'] for p in modelled)} (all moves)")


if __name__ == "__main__":
    main()
