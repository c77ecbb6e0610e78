"""Groups for ``packet_out_oracle --truncs``: buckets that change the frame's length.

A PACKET_OUT's ``output(port=P,max_len=N)`` cuts the frame as Open vSwitch last
committed it, and a bucket's output that sends commits the bucket's frame into the
datapath, while the flow is rolled back after each bucket (docs/rule-syntax.md). So the
buckets drawn here push or pop a VLAN tag, and end in an output to a port, to IN_PORT,
in a group of a lower number (nested: such a bucket pushes nothing) or in nothing;
``with_group_calls`` calls these groups among the PACKET_OUT's output_truncs, which
``random_packet_out`` draws. Frames for these PACKET_OUTs carry at
most one VLAN tag, and the PACKET_OUT's own push only onto none (``trunc_pushes``), so no
frame reaches three tags (Open vSwitch's flow holds two).
"""

from __future__ import annotations

import random
from typing import Sequence

from tandem.rules.generate import random_value
from tandem.rules.ir import (
    OFPG_ANY, OFPP_ANY, OFPP_IN_PORT, Action, Bucket, Group, GroupAction, Output, OutputReg, PopVlan, PushVlan, SetField,
    Subfield,
)


def _bucket(rng: random.Random, gid: int, ports: Sequence[int]) -> tuple[tuple[Action, ...], int]:
    """(actions, the port it outputs to or OFPP_ANY)."""
    acts: list[Action] = []
    if rng.random() < 0.3:
        f = rng.choice(("eth_src", "eth_dst"))
        acts.append(SetField(f, random_value(rng, f)))
    end = rng.random()
    nested = end >= 0.7 and end < 0.85 and gid > 1  # (pushes nothing: one push along a chain of groups)
    x = rng.random()
    if x < 0.45 and not nested:
        acts += [PushVlan(0x8100), SetField("vlan_vid", 0x1000 | rng.randrange(1, 4095))]
    elif x < 0.65:
        acts.append(PopVlan())
    if end < 0.6:
        port = rng.choice(list(ports))
        return (*acts, Output(port)), port
    if end < 0.7:
        return (*acts, Output(OFPP_IN_PORT)), OFPP_ANY
    if nested:
        return (*acts, GroupAction(rng.randrange(1, gid))), OFPP_ANY
    return tuple(acts), OFPP_ANY


def trunc_groups(rng: random.Random, ports: Sequence[int]) -> list[Group]:
    """All, indirect and fast-failover groups 1 .. n (n up to 3) of length-changing buckets;
    a fast-failover bucket watches its output port or another (or none there is)."""
    out: list[Group] = []
    for gid in range(1, rng.randint(0, 3) + 1):
        gtype = rng.choice(("all", "indirect", "fast_failover"))
        buckets = []
        for _ in range(1 if gtype == "indirect" else rng.randint(1, 3)):
            acts, port = _bucket(rng, gid, ports)
            watch = OFPP_ANY if gtype != "fast_failover" else port if port != OFPP_ANY and rng.random() < 0.7 \
                else rng.choice((*ports, 9))  # (Open vSwitch needs a watch there; 9: no port, never live)
            buckets.append(Bucket(acts, watch_port=watch, watch_group=OFPG_ANY))
        out.append(Group(gid, gtype, tuple(buckets)))
    return out


def trunc_pushes(tags: int) -> list[int]:
    """The PACKET_OUT's VLAN pushes allowed on a frame of ``tags`` tags (a bucket may push one more)."""
    return [1] if tags == 0 else []


def with_group_calls(rng: random.Random, acts: Sequence[Action], group_ids: Sequence[int]) -> list[Action]:
    """``acts`` with one or two more group calls at random places of the top list (half the
    time), so that output_truncs after a group's commits are frequent."""
    out = list(acts)
    for _ in range(rng.choice((0, 0, 1, 2)) if group_ids else 0):
        out.insert(rng.randrange(len(out) + 1), GroupAction(rng.choice(list(group_ids))))
    return out


# output_reg's numbers: ports, none there is, IN_PORT, FLOOD, ALL, and above 0xffff (17 bits: nothing)
_REG_PORTS = (1, 2, 3, 4, 9, 0xFFF8, 0xFFFB, 0xFFFC, 0x1FFF8)


def with_output_regs(rng: random.Random, acts: Sequence[Action]) -> list[Action]:
    """``acts`` with, a third of the time, a load of reg2 and an ``output:reg2[0..15]`` (or
    ``[0..16]``) at a random place of the top list (endpoint_output_reg.py)."""
    out = list(acts)
    if rng.random() < 0.33:
        value = rng.choice(_REG_PORTS)
        pair = [SetField("reg2", value), OutputReg(Subfield("reg2", 0, 17 if value > 0xFFFF else rng.choice((16, 17))))]
        at = rng.randrange(len(out) + 1)
        out[at:at] = pair
    return out


__all__ = ["trunc_groups", "trunc_pushes", "with_group_calls", "with_output_regs"]
