"""Random lookups in table 0 written into the action set and in group buckets.

Open vSwitch runs ``output:TABLE`` as a lookup in table 0 with the packet's own
in_port, and a resubmit without a table written into the action set goes to table
0 too (it runs the action set as table 0). ``TABLE0_WRITE_FEATURE`` (opt-in) gives
``write_actions`` lists such a lookup: ``output:TABLE`` (mostly last, so it is the
output the action set keeps), or ``resubmit(,0)`` / ``resubmit:PORT`` /
``resubmit(PORT,0)`` (the port mostly the one the rule matches), which runs only
when neither group nor output is written, so most of those lists lose theirs.
``generate_bucket_resubmit.table0_groups`` draws all, indirect and fast-failover groups (not select: Open
vSwitch 3.1 runs it by recirculating and aborts, ``ofproto-dpif-rid.c:235``, when
that happens inside nested lookups while the action set holds actions) whose
buckets look table 0 up: ``output:TABLE`` or ``resubmit(,0)``, after a field set
now and then. ``OUTPUT_REG_TABLE_FEATURE`` (opt-in) puts in apply-actions an
``output_reg`` of a register loaded with TABLE's number; ``landing_rules`` gives the
lookups after a register load a rule to find. Pure: all randomness comes
from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .generate_nx import REGS
from .ir import (
    OFPP_IN_PORT, OFPP_TABLE, Action, ApplyActions, Group, GroupAction, Match, Output, OutputReg, Resubmit, Rule, SetField,
    Subfield,
)

TABLE0_WRITE_FEATURE = "nx_table0_write"
BUCKET_FORMS = ("output_table", "resubmit0")


def written_table0(rng: random.Random, wacts: list[Action], ports: Sequence[int], in_port: int | None) -> list[Action]:
    """``wacts`` (a write_actions list) with a lookup in table 0 added (module doc)."""
    if rng.random() < 0.5:
        out = [a for a in wacts if type(a) is not GroupAction or rng.random() < 0.3]
        at = len(out) if rng.random() < 0.7 else rng.randrange(len(out) + 1)
        out.insert(at, Output(OFPP_TABLE))
        return out
    out = [a for a in wacts if not isinstance(a, (Output, GroupAction)) or rng.random() < 0.2]
    r = rng.random()
    port = OFPP_IN_PORT if r < 0.5 else in_port if in_port is not None and r < 0.9 else rng.choice(list(ports))
    look = Resubmit(port) if port != OFPP_IN_PORT and rng.random() < 0.5 else Resubmit(port, 0)
    out.insert(rng.randrange(len(out) + 1), look)
    return out


OUTPUT_REG_TABLE_FEATURE = "nx_output_reg_table"


def output_reg_table_actions(rng: random.Random) -> list[Action]:
    """A load of TABLE's number (0xfff9) into 16 bits of a register and an output_reg of
    them: Open vSwitch looks table 0 up there, as for output:TABLE."""
    reg, ofs = rng.choice(REGS), rng.choice((0, 8, 16))
    return [SetField(reg, 0xFFF9 << ofs, 0xFFFF << ofs), OutputReg(Subfield(reg, ofs, 16))]


def landing_rules(rng: random.Random, rules: Sequence[Rule], groups: Sequence[Group],
                  ports: Sequence[int]) -> list[Rule]:
    """Table-0 rules, above every other, that match a register value a bucket or an
    output_reg load puts there before a lookup in table 0 (a value other than 0: every
    packet enters with 0), most of them: without one, such a lookup finds the rule that
    made it again and loops into Open vSwitch's limits, which drop the packet whole.
    Each outputs to a random port."""
    loads: set[tuple[str, int, int | None]] = set()
    for acts in [b.actions for g in groups for b in g.buckets] + [
            i.actions for r in rules for i in r.instructions if isinstance(i, ApplyActions)]:
        for i, a in enumerate(acts):
            lookup = type(a) is OutputReg or a == Output(OFPP_TABLE) or (type(a) is Resubmit and a.table == 0)
            if lookup and i and type(acts[i - 1]) is SetField:
                load = acts[i - 1]
                if load.field in REGS and load.value:
                    loads.add((load.field, load.value, load.mask))
    taken = {r.priority for r in rules if r.table == 0}
    free = (p for p in range(64999, 59999, -1) if p not in taken)
    return [Rule(Match.of(**{f: (v, m) if m is not None else v}), (ApplyActions((Output(rng.choice(list(ports))),)),),
                 priority=next(free)) for f, v, m in sorted(loads, key=str) if rng.random() < 0.8]

