"""The rules' timeouts after a rule set's packets, against one Open vSwitch bridge
(the of13 oracle's ``fin_timeout`` item): a TCP FIN or RST that runs a rule's
``fin_timeout`` shrinks that rule's timeouts, so each rule's (idle, hard) must agree —
dp-core's (``OvsOracle.compare(..., timeouts=True)``), and a translation's, folded from
its copies' on the physical bridges as the endpoint folds them (oneswitch/fin_timeouts.py),
against the reference bridge's (``translation_timeout_mismatches``). Rules are named by
(table, priority), distinct in the oracle's rule sets.
"""

from __future__ import annotations

import re
from typing import Sequence

from tandem.oneswitch.fin_timeouts import folded
from tandem.rules.ir import DEFAULT_PRIORITY, Rule

Key = tuple[int, int]
_FIELD = re.compile(r"\b(table|priority|idle_timeout|hard_timeout)=(\d+)")


def ovs_timeouts(sb, bridge: str) -> dict[Key, tuple[int, int]]:
    """(table, priority) -> (idle, hard) of every flow on ``bridge`` now, once the
    revalidators have pushed the packets' TCP flags (where OVS applies a FIN's shrink
    for a flow already in its datapath)."""
    return {k: v[-1] for k, v in _all_timeouts(sb, bridge).items()}


def _all_timeouts(sb, bridge: str) -> dict[Key, list[tuple[int, int]]]:
    sb.appctl("revalidator/wait")
    out: dict[Key, list[tuple[int, int]]] = {}
    for line in sb.ofctl("dump-flows", bridge, "-O", "OpenFlow13").splitlines():
        if " actions=" not in line:  # (a reply part's header line)
            continue
        got = dict((k, int(v)) for k, v in _FIELD.findall(line.split(" actions=", 1)[0]))
        key = (got.get("table", 0), got.get("priority", DEFAULT_PRIORITY))
        out.setdefault(key, []).append((got.get("idle_timeout", 0), got.get("hard_timeout", 0)))
    return out


def translation_timeout_mismatches(sb, ref: str, bridges: dict[str, str], tr, rules: Sequence[Rule]) -> tuple[list[str], int]:
    """The virtual rules whose timeouts on the reference bridge ``ref`` differ from those
    folded from their ingress copies' on the physical ``bridges`` (switch -> bridge) of
    translation ``tr``, and how many rules a FIN shrank there. A flow that is no copy but
    shares a copy's (table, priority) is untimed, which folding leaves out."""
    want = ovs_timeouts(sb, ref)
    phys = {sw: _all_timeouts(sb, b) for sw, b in bridges.items()}
    bad, n = [], 0
    for r in rules:
        copies = [t for sw, pr in tr.ingress_rules(r) for t in phys[sw].get((pr.table, pr.priority), [])]
        got = folded(r.idle_timeout, r.hard_timeout, copies)
        n += got != (r.idle_timeout, r.hard_timeout)
        if got != want.get((r.table, r.priority)):
            bad.append(f"table {r.table} priority {r.priority}: translation idle/hard {got} (folded from "
                       f"{len(copies)} copies), the virtual switch {want.get((r.table, r.priority))}")
    return bad, n


def dp_timeouts(pipeline, rules: Sequence[Rule], ids: Sequence[int]) -> dict[Key, tuple[int, int]]:
    """The same of dp-core's ``pipeline``, whose rule ``ids[i]`` is ``rules[i]``."""
    timed = {rid: (idle, hard) for rid, idle, hard in pipeline.timed_rules()}
    return {(r.table, r.priority): timed.get(rid, (0, 0)) for r, rid in zip(rules, ids)}


def timeout_mismatches(ours: dict[Key, tuple[int, int]], theirs: dict[Key, tuple[int, int]]) -> list[str]:
    return [f"table {t} priority {p}: dp-core idle/hard {ours.get((t, p))}, Open vSwitch {theirs.get((t, p))}"
            for t, p in sorted(set(ours) | set(theirs)) if ours.get((t, p)) != theirs.get((t, p))]


def shrunk(rules: Sequence[Rule], now: dict[Key, tuple[int, int]]) -> int:
    """How many of ``rules`` have other timeouts now than they were added with."""
    return sum(now.get((r.table, r.priority), (0, 0)) != (r.idle_timeout, r.hard_timeout) for r in rules)
