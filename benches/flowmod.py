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
  latency:    M times one FLOW_MOD + BARRIER, time to the reply; p50 / p99.
Prints one table (median over --repeat runs), the OneSwitch/direct ratios and
the `tandem serve` process's CPU time per FLOW_MOD in the throughput burst
(a figure that a busy machine disturbs less than the rates).

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


async def measure(port: int, n_flows: int, n_latency: int, seed: int, pid: int | None = None) -> dict[str, float]:
    c = await Controller.connect(port)
    await c.clear()
    batch = rules(n_flows, seed)
    cpu0 = cpu_seconds(pid)
    t0 = time.perf_counter()
    for r in batch:
        c.flow_mod(r)
    await c.barrier()
    elapsed = time.perf_counter() - t0
    cpu1 = cpu_seconds(pid)
    await c.clear()
    lat = []
    for r in rules(n_latency, seed + 1):
        t = time.perf_counter()
        c.flow_mod(r)
        await c.barrier()
        lat.append(time.perf_counter() - t)
    await c.clear()
    c.w.close()
    lat.sort()
    out = {"flowmods_per_s": n_flows / elapsed, "p50_ms": 1e3 * lat[len(lat) // 2],
           "p99_ms": 1e3 * lat[min(len(lat) - 1, int(len(lat) * 0.99))]}
    if cpu0 is not None and cpu1 is not None:  # the serve process's CPU per FLOW_MOD while taking the burst
        out["serve_us"] = 1e6 * (cpu1 - cpu0) / n_flows
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flows", type=int, default=2000)
    ap.add_argument("--latency", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tandem-bench-flowmod-"))
    (tmp / "topo.yaml").write_text(TOPOLOGY)
    os_port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve", "--topology", str(tmp / "topo.yaml"),
                              "--backend", "ovs", "--listen", f"ptcp:{os_port}:127.0.0.1", "--run-dir", str(tmp / "run"),
                              "--ready-file", str(tmp / "ready")],
                             stdout=open(tmp / "serve.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
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
            runs: dict[str, list[dict[str, float]]] = {"OneSwitch (3 OVS bridges)": [], "one OVS bridge, direct": []}
            for i in range(args.repeat):
                runs["OneSwitch (3 OVS bridges)"].append(asyncio.run(measure(os_port, args.flows, args.latency, args.seed + i,
                                                                             serve.pid)))
                runs["one OVS bridge, direct"].append(asyncio.run(measure(direct_port, args.flows, args.latency, args.seed + i)))
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: {m: statistics.median(r[m] for r in v if m in r) for m in v[0]} for k, v in runs.items()}
    print(f"flowmod bench: {args.flows} FLOW_MODs + 1 barrier (throughput), {args.latency} x (FLOW_MOD + barrier) "
          f"(latency); median of {args.repeat} runs; {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")
    print(f"{'target':28} {'FLOW_MODs/s':>12} {'p50 ms':>8} {'p99 ms':>8}")
    for k, v in med.items():
        print(f"{k:28} {v['flowmods_per_s']:12.0f} {v['p50_ms']:8.2f} {v['p99_ms']:8.2f}")
    a, b = med["OneSwitch (3 OVS bridges)"], med["one OVS bridge, direct"]
    if "serve_us" in a:
        print(f"tandem serve CPU per FLOW_MOD during the throughput burst: {a['serve_us']:.1f} us (median)")
    print(f"ratio OneSwitch/direct: throughput {a['flowmods_per_s'] / b['flowmods_per_s']:.2f}x, "
          f"p50 latency {a['p50_ms'] / b['p50_ms']:.2f}x, p99 latency {a['p99_ms'] / b['p99_ms']:.2f}x")


if __name__ == "__main__":
    main()
