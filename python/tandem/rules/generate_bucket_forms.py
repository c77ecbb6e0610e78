"""Random groups whose buckets hold ``clone``, ``check_pkt_larger`` or ``output_trunc``.

Open vSwitch 3.1 runs a group bucket as an action set (``ofpacts_execute_action_set``),
which has no place for these three, so in a bucket they do nothing (measured:
``bucket=clone(output:2),output:3`` sends to 3 only; ``check_pkt_larger`` writes no
bit there, ``output(port=P,max_len=N)`` sends nothing). ``form_groups(rng, n, ports,
tables, forms)`` builds on ``generate.random_group``'s buckets (a field set, an
output) and, for rule sets with a later table, now and then on
``generate_bucket_resubmit.resubmit_group``'s (a register load, a resubmit, so a
bit a check would write could be matched later); each bucket gets one to three of
``forms`` (``"clone"``; ``"check_pkt_larger"`` into a register bit or a bit of
eth_src, which would show in the frame; ``"output_trunc"`` to a port; ``"dec_nsh_ttl"``,
which a bucket runs as the action set does) at random places, a clone holding field sets and outputs that would send frames if it ran.
Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Sequence

from .generate import random_group, random_value
from .generate_bucket_resubmit import resubmit_group
from .generate_nx import PKT_LENS, REGS
from .generate_trunc import TRUNC_LENS
from .ir import Action, CheckPktLarger, Clone, Group, Output, OutputTrunc, PushVlan, SetField, Subfield
from .ir import DecNshTtl

FORMS = ("clone", "check_pkt_larger", "output_trunc")


def _form(rng: random.Random, form: str, ports: Sequence[int]) -> Action:
    if form == "clone":
        nested: list[Action] = []
        if rng.random() < 0.5:
            f = rng.choice(("eth_src", "eth_dst"))
            nested.append(SetField(f, random_value(rng, f)))
        if rng.random() < 0.2:
            nested.append(PushVlan(0x8100))
        nested += [Output(p) for p in rng.sample(list(ports), rng.randint(0, min(2, len(ports))))]
        return Clone(tuple(nested))
    if form == "check_pkt_larger":
        field = rng.choice((*REGS, "eth_src"))
        return CheckPktLarger(rng.choice(PKT_LENS), Subfield(field, rng.choice((0, 1, 31)) if field != "eth_src" else 0, 1))
    if form == "dec_nsh_ttl":  # (bucket:dec_nsh_ttl: generate_nsh_ttl.py)
        return DecNshTtl()
    return OutputTrunc(rng.choice(list(ports)), rng.choice(TRUNC_LENS))


def form_group(rng: random.Random, group_id: int, ports: Sequence[int], tables: int,
               forms: Sequence[str] = FORMS) -> Group:
    """One group whose every bucket holds one to three of ``forms`` (a select group made an
    all group: Open vSwitch's choice of bucket hashes differently from dp-core's)."""
    g = resubmit_group(rng, group_id, ports, tables) if tables > 1 and rng.random() < 0.3 \
        else random_group(rng, group_id, ports)
    buckets = []
    for b in g.buckets:
        acts = list(b.actions)
        for _ in range(rng.randint(1, 3)):
            acts.insert(rng.randrange(len(acts) + 1), _form(rng, rng.choice(list(forms)), ports))
        buckets.append(replace(b, actions=tuple(acts), weight=0))
    return replace(g, type="all" if g.type == "select" else g.type, buckets=tuple(buckets))


def form_groups(rng: random.Random, n: int, ports: Sequence[int], tables: int,
                forms: Sequence[str] = FORMS) -> list[Group]:
    """``n`` groups (ids 1 .. n) whose buckets hold ``forms``."""
    return [form_group(rng, i + 1, ports, tables, forms) for i in range(n)]
