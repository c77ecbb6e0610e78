"""Nicira ``fin_timeout(idle_timeout=I,hard_timeout=H)`` through OneSwitch (docs/oneswitch.md §7,
"fin_timeout"). Pure.

A virtual rule's copies carry the action as it is, so the copy a TCP FIN or RST
passes shrinks its own timeouts on its switch (Open vSwitch 3.1's
``ofproto_rule_reduce_timeouts__``; dp-core's ``pipeline/timeouts.rs``). A shrink
only sets a timeout that is none or lowers a longer one, so after FINs through
any of the copies the one virtual rule's timeouts are, per timeout, the least
non-zero value among its own and its copies' (``folded``): what FLOW_STATS shows
(``virtual_timeouts``) and what FLOW_REMOVED carries. The copy that shrank expires
by its shrunk timeouts and the endpoint then removes the virtual rule; its
FLOW_REMOVED counts every copy (``removed_totals``: the other copies' counters
as they are, or as their own FLOW_REMOVED gave them when they left too).
Open vSwitch takes the action in OpenFlow 1.3 only where the match pins
``ip_proto=6`` at that point of the list (``fin_match_problem``).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from tandem.backends.base import FlowStats
from tandem.oneswitch.endpoint_stats import Key, rule_key as _key
from tandem.rules.ir import ApplyActions, Clone, FinTimeout, Rule
from tandem.rules.nx_fin_timeout import runs_fin_timeout as fin_timeout_in


def fin_match_problem(rule: Rule) -> str | None:
    """Why Open vSwitch 3.1 refuses ``rule``'s fin_timeout in OpenFlow 1.3
    (OFPBAC_MATCH_INCONSISTENT: the match does not pin ``tcp`` where it runs, e.g. after
    a push_mpls), or None."""
    if not fin_timeout_in(rule):
        return None
    from tandem.rules.prereq import FlowState

    state = FlowState.of(rule.match)
    for ins in rule.instructions:
        if type(ins) is ApplyActions:
            for a in ins.actions:
                if type(a) in (FinTimeout, Clone):
                    why = state.problem(a)
                    if why:
                        return why
                state.apply(a)
    return None


def folded(idle: int, hard: int, copies: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """The virtual rule's (idle, hard) from its own and its copies' (0: none): the least
    set value of each, as successive shrinks leave it."""
    for ci, ch in copies:
        if ci and (not idle or ci < idle):
            idle = ci
        if ch and (not hard or ch < hard):
            hard = ch
    return idle, hard


def virtual_timeouts(state: object, vrules: Iterable[Rule],
                     phys: Mapping[str, Iterable[FlowStats]]) -> dict[Key, tuple[int, int]]:
    """(idle, hard) of each virtual rule in ``vrules`` whose ingress-side copies' current
    timeouts in ``phys`` (each switch's flow stats) fold to others than its own: a FIN
    shrank them (also one a later modify took the fin_timeout away from: the copies keep
    them, as Open vSwitch keeps a modified rule's timeouts)."""
    shrunk = {(sw, _key(fs.rule)): (fs.rule.idle_timeout, fs.rule.hard_timeout) for sw, stats in phys.items()
              for fs in stats if fs.rule.idle_timeout or fs.rule.hard_timeout}
    out = {}
    if not shrunk:
        return out
    for vr in vrules:
        copies = [shrunk[k] for k in ((sw, _key(pr)) for sw, pr in state.ingress_rules(vr)) if k in shrunk]  # type: ignore[attr-defined]
        if copies:
            got = folded(vr.idle_timeout, vr.hard_timeout, copies)
            if got != (vr.idle_timeout, vr.hard_timeout):
                out[_key(vr)] = got
    return out


def removed_totals(vr: Rule, copies: Iterable[tuple[str, Rule]], gone: Mapping[tuple[str, Key], tuple[int, int, int, int]],
                   phys: Mapping[str, Iterable[FlowStats]]) -> tuple[int, int, int, int]:
    """(packets, bytes, idle, hard) for the FLOW_REMOVED of virtual rule ``vr``, whose
    ingress-side ``copies`` are leaving: each copy's counters and timeouts as installed
    now (``phys``: its switch's flow stats) or, gone, as its own FLOW_REMOVED gave them
    (``gone``: (switch, key) -> packets, bytes, idle, hard); the timeouts folded."""
    now = {(sw, _key(fs.rule)): (fs.packet_count, fs.byte_count, fs.rule.idle_timeout, fs.rule.hard_timeout)
           for sw, stats in phys.items() for fs in stats}
    p = b = 0
    timeouts = []
    for sw, pr in copies:
        e = now.get((sw, _key(pr))) or gone.get((sw, _key(pr)))
        if e is not None:
            p, b = p + e[0], b + e[1]
            timeouts.append(e[2:])
    return (p, b, *folded(vr.idle_timeout, vr.hard_timeout, timeouts))


__all__ = ["fin_match_problem", "fin_timeout_in", "folded", "removed_totals", "virtual_timeouts"]
