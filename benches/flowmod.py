"""FLOW_MOD throughput and barrier-confirmed install latency: OneSwitch vs one OVS bridge.

The same asyncio OpenFlow 1.3 controller (Tandem's codec on a TCP socket)
drives, in one run:
  A. OneSwitch (`tandem serve --listen`, OVS backend: host + 2 sNIC bridges,
     4 virtual ports over all three, in a subprocess), and
  B. one OVS bridge with 4 ports directly (ptcp controller port).
Workload: learning-switch style rules (in_port, eth_src, eth_dst -> output),
each rule's in_port and output drawn from the 4 ports so most cross a PCIe
hop under OneSwitch.
  throughput: N FLOW_MODs back to back, one BARRIER; FLOW_MODs/s = N / time
              until the barrier reply (every physical switch confirmed);
  latency:    M times one FLOW_MOD + BARRIER, time to the reply; p50 / p99 over
              the samples of all --repeat runs (and each run's p99).
Both connections stay open and the targets take turns (bursts alternate,
latency samples come in pairs), so load from other work on a shared machine
falls on both alike. Prints one table (throughput: median of the bursts), the
OneSwitch/direct ratios and the `tandem serve` process's CPU time per FLOW_MOD
in the throughput burst (a figure that a busy machine disturbs less than the rates).

    tandem bench flowmod [-- --flows 2000 --latency 300 --repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule
from tandem.backends.ovs_sandbox import OvsSandbox

TOPOLOGY = """\
switches: {host: {kind: host}, snic0: {kind: snic}, snic1: {kind: snic}}
links:
  - {a: "host:100", b: "snic0:100"}
  - {a: "host:101", b: "snic1:100"}
ports: {1: "host:1", 2: "snic0:1", 3: "snic1:1", 4: "snic0:2"}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rules(n: int, seed: int) -> list[Rule]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = rng.sample(range(1, 5), 2)
        out.append(Rule(Match.of(in_port=a, eth_src=0x020000000000 + i, eth_dst=0x020000100000 + i),
                        (ApplyActions((Output(b),)),), priority=1))
    return out


class Controller:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.r, self.w, self.buf, self.xid = reader, writer, bytearray(), 1

    @classmethod
    async def connect(cls, port: int) -> "Controller":
        deadline = time.monotonic() + 30
        while True:
            try:
                r, w = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        c = cls(r, w)
        w.write(M.encode_hello())
        await c.wait_for(W.OFPT_HELLO)
        return c

    async def wait_for(self, mtype: int, xid: int | None = None) -> None:
        while True:
            for m in M.split_messages(self.buf):
                if m.type == W.OFPT_ERROR:
                    raise RuntimeError(f"switch error {M.decode_error(m.body)[:2]} for xid {m.xid}")
                if m.type == W.OFPT_ECHO_REQUEST:
                    self.w.write(M.encode_echo_reply(m.xid, m.body))
                if m.type == mtype and (xid is None or m.xid == xid):
                    return
            chunk = await asyncio.wait_for(self.r.read(1 << 16), 60)
            if not chunk:
                raise ConnectionError("switch closed the connection")
            self.buf += chunk

    def flow_mod(self, rule: Rule, command: str = "add") -> None:
        self.xid += 1
        self.w.write(M.encode_flow_mod(self.xid, FlowMod(command, rule)))

    async def barrier(self) -> None:
        self.xid += 1
        xid = self.xid
        self.w.write(M.encode_barrier_request(xid))
        await self.wait_for(W.OFPT_BARRIER_REPLY, xid)

    async def clear(self) -> None:
        self.xid += 1
        self.w.write(M.encode_flow_mod(self.xid, FlowMod("delete", Rule(), all_tables=True)))
        await self.barrier()


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time of a process's main thread so far (Linux schedstat, ns resolution), or None."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError, TypeError):
        return None


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


async def measure(ports: dict[str, int], pids: dict[str, int | None], n_flows: int, n_latency: int, repeat: int,
                  seed: int) -> dict[str, dict[str, list[float]]]:
    """Both targets in turn on open connections, so a load spike on the shared machine
    falls on both: bursts alternate (order swapped every repeat) and latency samples
    are taken in pairs, one per target (order swapped every pair)."""
    ctl = {name: await Controller.connect(port) for name, port in ports.items()}
    out: dict[str, dict[str, list[float]]] = {name: {"rate": [], "lat": [], "p99": [], "cpu": [], "cpu_rt": []}
                                              for name in ports}
    names = list(ports)
    for i in range(repeat):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            c = ctl[name]
            await c.clear()
            batch = rules(n_flows, seed + i)
            cpu0 = cpu_seconds(pids[name])
            t0 = time.perf_counter()
            for r in batch:
                c.flow_mod(r)
            await c.barrier()
            out[name]["rate"].append(n_flows / (time.perf_counter() - t0))
            cpu1 = cpu_seconds(pids[name])
            if cpu0 is not None and cpu1 is not None:  # the serve process's CPU per FLOW_MOD while taking the burst
                out[name]["cpu"].append(1e6 * (cpu1 - cpu0) / n_flows)
            await c.clear()
        lat: dict[str, list[float]] = {name: [] for name in names}
        cpu0s = {name: cpu_seconds(pids[name]) for name in names}
        for j, r in enumerate(rules(n_latency, seed + 1 + i)):
            for name in (order if j % 2 == 0 else order[::-1]):
                c = ctl[name]
                t = time.perf_counter()
                c.flow_mod(r)
                await c.barrier()
                lat[name].append(time.perf_counter() - t)
        for name in names:
            cpu0, cpu1 = cpu0s[name], cpu_seconds(pids[name])
            if cpu0 is not None and cpu1 is not None:  # serve's CPU per FLOW_MOD + BARRIER round trip
                out[name]["cpu_rt"].append(1e6 * (cpu1 - cpu0) / n_latency)
            out[name]["lat"] += lat[name]
            out[name]["p99"].append(percentile(sorted(lat[name]), 0.99))
    for c in ctl.values():
        await c.clear()
        c.w.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flows", type=int, default=2000)
    ap.add_argument("--latency", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="tandem-bench-flowmod-"))
    (tmp / "topo.yaml").write_text(TOPOLOGY)
    os_port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve", "--topology", str(tmp / "topo.yaml"),
                              "--backend", "ovs", "--listen", f"ptcp:{os_port}:127.0.0.1", "--run-dir", str(tmp / "run"),
                              "--ready-file", str(tmp / "ready")],
                             stdout=open(tmp / "serve.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
    one, direct = "OneSwitch (3 OVS bridges)", "one OVS bridge, direct"
    try:
        with OvsSandbox() as sb:
            sb.add_bridge("direct", [1, 2, 3, 4])
            direct_port = free_port()
            sb.vsctl("set-controller", "direct", f"ptcp:{direct_port}:127.0.0.1")
            deadline = time.monotonic() + 60
            while not (tmp / "ready").exists():
                if serve.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"tandem serve did not start: {(tmp / 'serve.log').read_text()[-2000:]}")
                time.sleep(0.1)
            runs = asyncio.run(measure({one: os_port, direct: direct_port}, {one: serve.pid, direct: None},
                                       args.flows, args.latency, args.repeat, args.seed))
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {}
    for name, r in runs.items():
        lat = sorted(r["lat"])
        med[name] = {"rate": statistics.median(r["rate"]), "p50": 1e3 * percentile(lat, 0.5),
                     "p99": 1e3 * percentile(lat, 0.99), "p99_runs": [1e3 * x for x in r["p99"]]}
        if r["cpu"]:
            med[name]["cpu"] = statistics.median(r["cpu"])
            med[name]["cpu_rt"] = statistics.median(r["cpu_rt"])
    print(f"flowmod bench: {args.flows} FLOW_MODs + 1 barrier (throughput, median of {args.repeat} bursts), "
          f"{args.repeat} x {args.latency} x (FLOW_MOD + barrier) (latency, all samples; targets interleaved); "
          f"{os.cpu_count()} cores; load {load0:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'target':28} {'FLOW_MODs/s':>12} {'p50 ms':>8} {'p99 ms':>8}  p99 of each run, ms")
    for k, v in med.items():
        print(f"{k:28} {v['rate']:12.0f} {v['p50']:8.3f} {v['p99']:8.3f}  {' '.join(f'{x:.3f}' for x in v['p99_runs'])}")
    a, b = med[one], med[direct]
    if "cpu" in a:
        print(f"tandem serve CPU (median): {a['cpu']:.1f} us per FLOW_MOD in the throughput burst, "
              f"{a['cpu_rt']:.1f} us per FLOW_MOD + BARRIER round trip")
    print(f"ratio OneSwitch/direct: throughput {a['rate'] / b['rate']:.2f}x, "
          f"p50 latency {a['p50'] / b['p50']:.2f}x, p99 latency {a['p99'] / b['p99']:.2f}x")


if __name__ == "__main__":
    main()
