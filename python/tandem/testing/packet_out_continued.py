"""``packet_out_oracle --table --continued --only dp``: dp-core's ``Pipeline::packet_out`` vs
one plain Open vSwitch bridge, PACKET_OUTs whose list goes on after ``output:TABLE`` and
writes state before it (``packet_out_table.random_continued``), each batch meeting fresh
random rules in tables 0 and 1 that match that state too.

dp-core runs the PACKET_OUT as the emulator backend's host does for OneSwitch's whole route
(oneswitch/packet_out_table.py): its TABLE a resubmit into table 0 carrying the packet's
state, the written action set run at the list's end (``pipeline/packet_out_table.rs``).
State: none. Cost: one scratch switch per PACKET_OUT.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.testing.packet_out_oracle import PORTS, Result, _Conn, _packet_out, _show, random_packet_out
from tandem.testing.packet_out_table import random_continued, random_table_rules


def run_dp_continued(sb, n: int, seed: int = 0, batch: int = 20) -> Result:
    """dp-core vs the plain bridge, ``n`` PACKET_OUTs (module doc)."""
    from tandem.dataplane.switch import Switch

    br = "po-plain"
    sb.add_bridge(br, PORTS)
    res = Result()

    async def go() -> None:
        ovs = await _Conn(*await asyncio.open_unix_connection(sb.mgmt(br).removeprefix("unix:"))).hello()
        s = 0
        while res.packet_outs < n:
            rng = random.Random(f"po-dp-continued:{seed}:{s}")
            s += 1
            rules = [parse_rule(r) for r in random_table_rules(rng, PORTS, state=True)]
            ovs.send(lambda x: M.encode_flow_mod(x, FlowMod("delete", parse_rule("actions=drop"), all_tables=True)))
            for r in rules:
                ovs.send(lambda x, r=r: M.encode_flow_mod(x, FlowMod("add", r)))
            pos = [(i, random_continued(rng, PORTS, f), f) for i, _, f in (random_packet_out(rng, [], False)
                                                                        for _ in range(batch))]
            ours: Counter = Counter()
            for in_port, acts, frame in pos:
                sw = Switch(PORTS, 2, drop_malformed=False)
                for r in rules:
                    sw.add_rule(r)
                ours.update((p, f) for p, f in sw.packet_out(in_port, acts, frame))
                ovs.send(_packet_out(in_port, acts, frame))
            errors = await ovs.barrier()
            sb.settle()
            theirs = Counter((p, f) for p in PORTS for f in sb.take_output(br, p))
            res.count(pos, sum(ours.values()))
            res.tables += len(pos)
            if errors or ours != theirs:
                res.mismatches.append(f"set {s - 1}: errors {errors}\n  " + _show(pos, sorted(ours - theirs, key=repr),
                                                                                sorted(theirs - ours, key=repr)))
        ovs.close()

    asyncio.run(go())
    return res


__all__ = ["run_dp_continued"]
