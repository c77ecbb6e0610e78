"""How long a port's state change takes to reach fast-failover groups on other switches (OVS backend).

OneSwitch over the three-switch test topology on private OVS bridges, pinned
shared rules (as ``tandem serve``), a controller connected, and a fast-failover
group on the host watching virtual port 2 (snic0:1). Each round brings snic0's
port 1 down (then up) with ``ovs-appctl netdev-dummy/set-admin-state`` and
times, from the moment the command was started (a process spawn, a few ms, included):

* physical: OneSwitch receives snic0's PORT_STATUS (Open vSwitch's own delay);
* applied: every other switch has confirmed the ("live", 2) group modify
  (barrier reply) - from here the host's bucket choice follows the port;
* controller: the virtual PORT_STATUS reaches the controller (sent after "applied").

Prints median and max over the rounds for each, and ``applied - physical``,
OneSwitch's own share (one GROUP_MOD + barrier round trip to each switch).

    tandem bench failover [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TOPO = Path(__file__).resolve().parents[1] / "tests" / "endpoint" / "three_switches.yaml"


async def rounds(n: int) -> list[tuple[float, float, float]]:
    from tandem.backends.base import PortStatus
    from tandem.backends.ovs import OvsBackend
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import load_topology
    from tandem.rules import ofwire as W
    from tandem.rules import ofwire_msgs as M
    from tandem.rules.ir import FlowMod
    from tandem.rules.ofctl import parse_group, parse_rule

    out = []
    with OvsSandbox() as sb:
        topo = load_topology(TOPO)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        state = OneSwitchState(topo, pin_infrastructure=True)
        await backend.apply_steps(state.take_plan().steps)
        ep = OneSwitchEndpoint(state, topo, backend)
        port = await ep.listen("ptcp:0:127.0.0.1")
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(M.encode_hello())
        buf = bytearray()

        async def next_msg(mtype: int) -> M.RawMessage:
            while True:
                for m in M.split_messages(buf):
                    if m.type == mtype:
                        return m
                buf.extend(await asyncio.wait_for(reader.read(1 << 16), 10))

        await next_msg(W.OFPT_HELLO)
        writer.write(M.encode_group_mod(1, "add", parse_group(
            "group_id=5,type=fast_failover,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3")))
        writer.write(M.encode_flow_mod(2, FlowMod("add", parse_rule("in_port=1,actions=group:5"))))
        writer.write(M.encode_barrier_request(3))
        await next_msg(W.OFPT_BARRIER_REPLY)
        seen: dict[str, float] = {}
        want = {"live": False}

        def on_event(ev) -> None:
            if isinstance(ev, PortStatus) and ev.port.link_up == want["live"]:
                seen.setdefault("physical", time.perf_counter())
        backend.subscribe(on_event)
        apply = backend.apply

        async def timed_apply(ops):
            await apply(ops)
            if "physical" in seen:
                seen.setdefault("applied", time.perf_counter())
        backend.apply = timed_apply  # type: ignore[method-assign]
        ctl = ["ovs-appctl", "-t", str(sb.vswitchd_ctl), "netdev-dummy/set-admin-state", "tnd-snic0-p1"]
        for i in range(2 * n):
            want["live"] = i % 2 == 1
            seen.clear()
            t0 = time.perf_counter()
            subprocess.run([*ctl, "up" if want["live"] else "down"], check=True, capture_output=True)
            while True:
                m = await next_msg(W.OFPT_PORT_STATUS)
                _, p = M.decode_port_status(m.body)
                if (not (p.state & W.OFPPS_LINK_DOWN)) == want["live"]:
                    break
            t_ctl = time.perf_counter()
            out.append((seen["physical"] - t0, seen["applied"] - t0, t_ctl - t0))
        writer.close()
        await ep.close()
        await backend.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    got = asyncio.run(rounds(a.rounds))
    print(f"load {os.getloadavg()[0]:.2f}; {len(got)} port state changes (down and up), ms after the command started")
    for name, k in (("physical PORT_STATUS at OneSwitch", 0), ("groups applied on every switch", 1),
                    ("virtual PORT_STATUS at the controller", 2)):
        xs = [r[k] * 1e3 for r in got]
        print(f"  {name:40s} median {statistics.median(xs):7.2f}  max {max(xs):7.2f}")
    share = [(r[1] - r[0]) * 1e3 for r in got]
    print(f"  {'OneSwitch share (applied - physical)':40s} median {statistics.median(share):7.2f}  max {max(share):7.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
