"""The rules' timeouts after a rule set's packets, dp-core against one Open vSwitch
bridge (``OvsOracle.compare(..., timeouts=True)``, the of13 oracle's ``fin_timeout``
item): a TCP FIN or RST that runs a rule's ``fin_timeout`` shrinks that rule's
timeouts on both sides, so each rule's (idle, hard) must agree. Rules are named by
(table, priority), distinct in the oracle's rule sets.
"""

from __future__ import annotations

import re
from typing import Sequence

from tandem.rules.ir import DEFAULT_PRIORITY, Rule

Key = tuple[int, int]
_FIELD = re.compile(r"\b(table|priority|idle_timeout|hard_timeout)=(\d+)")


def ovs_timeouts(sb, bridge: str) -> dict[Key, tuple[int, int]]:
    """(table, priority) -> (idle, hard) of every flow on ``bridge`` now, once the
    revalidators have pushed the packets' TCP flags (where OVS applies a FIN's shrink
    for a flow already in its datapath)."""
    sb.appctl("revalidator/wait")
    out = {}
    for line in sb.ofctl("dump-flows", bridge, "-O", "OpenFlow13").splitlines():
        if " actions=" not in line:  # (a reply part's header line)
            continue
        got = dict((k, int(v)) for k, v in _FIELD.findall(line.split(" actions=", 1)[0]))
        key = (got.get("table", 0), got.get("priority", DEFAULT_PRIORITY))
        out[key] = (got.get("idle_timeout", 0), got.get("hard_timeout", 0))
    return out


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
