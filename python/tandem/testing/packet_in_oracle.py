"""dp-core's packet-ins against one Open vSwitch 3.1 bridge: the same rules, the
same frames, and what a controller receives — in_port, table, cookie, frame,
pipeline state, reason (as OpenFlow 1.3 numbers it) and ``controller(userdata=…)``
— must be the same. The bridge's packet-ins are read by ``ovs-ofctl monitor``
(NXT_PACKET_IN2, controller id 0, Open vSwitch's default async config: no
invalid_ttl); dp-core's are taken for controller id 0, and invalid_ttl ones left
out likewise. Used by ``of13_oracle.run_dp`` for the ``controller`` item.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Sequence

from tandem.dataplane.switch import Switch
from tandem.rules.ir import Group, Rule
from tandem.testing.oneswitch_oracle import PacketInMonitor

# dp-core's names of the pipeline state a packet-in lists -> ovs-ofctl's
_STATE_NAMES = {"tunnel_id": "tun_id"}


def _state_text(meta: Sequence[tuple[str, int]]) -> str:
    return ",".join(sorted(f"{_STATE_NAMES.get(k, k)}={v:#x}" for k, v in meta))


def _state_value(name: str, text: str) -> int:
    """One pipeline-state value as ovs-ofctl prints it: hex, or tun_flags' ``+oam``."""
    if name == "tun_flags" and not text[:1].isdigit():
        return int(text == "+oam")
    return int(text, 16)


def _of13_reason(name: str) -> str:
    return "no_match" if name == "no_match" else "action"


class PacketInOracle:
    """A monitor on an ``OvsOracle``'s bridge (which loads the rules); ``compare``
    injects the frames there and runs them through dp-core."""

    def __init__(self, oracle) -> None:
        self.oracle = oracle
        self.monitor = PacketInMonitor(oracle.sb, oracle.BRIDGE)
        time.sleep(0.3)  # (the monitor connects before traffic)

    def close(self) -> None:
        self.monitor.close()

    def compare(self, rules: Sequence[Rule], groups: Sequence[Group], packets: Sequence[tuple[int, bytes]],
                n_tables: int) -> tuple[int, list[str]]:
        """(packet-ins the bridge sent, mismatches)."""
        o = self.oracle
        o._load(rules, groups)
        o.sb.appctl("revalidator/purge")
        self.monitor.take()
        sw = Switch(o.ports, n_tables, drop_malformed=False)
        sw.add_groups(groups)
        sw.add_rules(rules)
        ours: Counter = Counter()
        for in_port, frame in packets:
            for c in sw.process(in_port, frame).controller:
                if c.reason != "invalid_ttl":
                    ours[(in_port, c.table, c.cookie, c.frame, _state_text(c.meta), _of13_reason(c.reason),
                          c.userdata.hex())] += 1
        for in_port, frame in packets:
            o.sb.inject(o.BRIDGE, in_port, [frame])
        prev = None
        while True:  # until the monitor stops writing
            time.sleep(0.1)
            cur = self.monitor.size()
            if cur == prev:
                break
            prev = cur
        theirs: Counter = Counter()
        for r in self.monitor.take():
            state = _state_text([(k, _state_value(k, v)) for k, v in (p.split("=", 1) for p in r.state.split(",") if p)])
            theirs[(r.port, r.table, r.cookie, r.data, state, r.reason, r.userdata.hex())] += 1
        bad = [f"packet-in in_port {k[0]} table {k[1]} cookie {k[2]:#x} [{k[4]}] via {k[5]} userdata {k[6] or '-'} "
               f"{k[3].hex()}: OVS {theirs[k]}, dp-core {ours[k]}" for k in theirs.keys() | ours.keys() if theirs[k] != ours[k]]
        return sum(theirs.values()), bad


__all__ = ["PacketInOracle"]
