"""Virtual rules' counters carried across a move of their copies (homing on demand).

Extending a port to the host (``extension.extend``) replaces the copies of the rules its
pipeline runs, on its sNIC, by new copies on the host, which start at 0; the old copies'
counters go with them. One bridge's rules keep theirs, so when the endpoint homes ports
for a PACKET_OUT (``packet_out_whole.py``) it reads every virtual rule's counters before
and after the move (``carry``) and keeps what the move took (``ep.carried``); FLOW_STATS
and AGGREGATE add it (``add_carried``); a rule's removal drops its entry (``drop``).
State: ``ep.carried`` (virtual rule key -> (packets, bytes)). Cost: two reads of every
switch's flow stats per homing on demand; a dict lookup per rule in a FLOW_STATS reply.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from tandem.oneswitch import endpoint_stats as V


async def _counters(ep) -> dict:
    vrules = list(ep.state.virtual_rules())
    if not vrules:
        return {}
    phys = {sw: await ep.backend.flow_stats(sw) for sw in ep.backend.switches()}
    return V.virtual_counters(ep.state, vrules, phys)


async def carry(ep, move: Callable[[], Awaitable[None]]) -> None:
    """Run ``move`` (it replaces copies), keeping the counters the replaced copies held."""
    before = await _counters(ep)
    await move()
    after = await _counters(ep)
    carried = ep.__dict__.setdefault("carried", {})
    for k, (p, b) in before.items():
        if k in after:
            lost_p, lost_b = max(0, p - after[k][0]), max(0, b - after[k][1])
            if lost_p or lost_b:
                cp, cb = carried.get(k, (0, 0))
                carried[k] = (cp + lost_p, cb + lost_b)


def add_carried(ep, counters: dict) -> dict:
    """``counters`` (virtual rule key -> (packets, bytes)) with what moves carried."""
    carried = getattr(ep, "carried", None)
    if carried:
        for k, (p, b) in carried.items():
            if k in counters:
                counters[k] = (counters[k][0] + p, counters[k][1] + b)
    return counters


def drop(ep, key: tuple) -> None:
    """A virtual rule is gone: a rule added again with its key starts at 0."""
    carried = getattr(ep, "carried", None)
    if carried:
        carried.pop(key, None)
