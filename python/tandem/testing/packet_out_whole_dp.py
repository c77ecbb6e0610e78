"""``packet_out_oracle --whole --only dp``: dp-core's ``Pipeline::packet_out`` (as the
emulator backend's host device runs a PACKET_OUT the endpoint sends whole,
oneswitch/packet_out_whole.py) against one Open vSwitch bridge, the PACKET_OUTs of
``packet_out_whole.random_whole_packet_out`` without ``nat`` and check_pkt_larger into header
fields (the emulator refuses those). One scratch switch for the whole run, as the bridge keeps
one tracker: ct commits, zones, marks and nat carry from PACKET_OUT to PACKET_OUT on both.
Frames per port and packet-ins (frame and match, ``packet_out_packet_ins``) compared.
State: none. Cost: one dp-core switch, a batch's frames.
"""

from __future__ import annotations

import asyncio
from collections import Counter
import random

from tandem.testing.packet_out_nsh_ttl import ask_for_invalid_ttl
from tandem.testing.packet_out_oracle import PORTS, Result, _Conn, _packet_out, _scratch, _show
from tandem.testing.packet_out_packet_ins import (ask_for_packet_ins, controller_streams, dp_packet_in_keys,
                                                  ovs_packet_in_keys)
from tandem.testing.packet_out_whole import random_whole_packet_out


def run_dp_whole(sb, n: int, seed: int = 0, batch: int = 20) -> Result:
    """dp-core (one scratch switch's ``packet_out``) vs the plain bridge (module doc)."""
    br = "po-plain"
    sb.add_bridge(br, PORTS)
    res = Result()

    async def go() -> None:
        ovs = await _Conn(*await controller_streams(sb, br)).hello()
        ask_for_packet_ins(ovs)
        ask_for_invalid_ttl(ovs)
        sw = _scratch(frozenset(), [])
        s = 0
        while res.packet_outs < n:
            rng = random.Random(f"po-dp-whole:{seed}:{s}")
            s += 1
            pos = [random_whole_packet_out(rng, PORTS, emu=True) for _ in range(batch)]
            ours: Counter = Counter()
            for in_port, acts, frame in pos:
                fates = sw.packet_out(in_port, acts, frame)
                ours.update((p, f) for p, f in fates if p in PORTS)  # (as backends/emu.py: IN_PORT from CONTROLLER sends none)
                ours.update(dp_packet_in_keys(fates.controller))
                ovs.send(_packet_out(in_port, acts, frame))
            errors = await ovs.barrier()
            sb.settle()
            errors += await ovs.barrier()  # (the packet-ins Open vSwitch sends after the first)
            theirs = Counter((p, f) for p in PORTS for f in sb.take_output(br, p))
            theirs.update(ovs_packet_in_keys(ovs.packet_ins))
            ovs.packet_ins.clear()
            res.count(pos, sum(v for k, v in ours.items() if k[0] != "packet-in"))
            res.packet_ins += sum(v for k, v in ours.items() if k[0] == "packet-in")
            if errors or ours != theirs:
                res.mismatches.append(f"set {s - 1}: errors {errors}\n  " + _show(pos, sorted(ours - theirs, key=repr),
                                                                                sorted(theirs - ours, key=repr)))
        ovs.close()

    asyncio.run(go())
    return res
