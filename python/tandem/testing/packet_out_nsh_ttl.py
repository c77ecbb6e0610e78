"""PACKET_OUTs with ``dec_nsh_ttl`` for the PACKET_OUT oracle (``packet_out_oracle``,
``nsh_ttl=True``; ``tandem bench packet_out_oracle --nsh-ttl``): the drawn frame becomes the
payload of an NSH MD type 1 header (TTL from 0, 1, 2, 5, 63; a VLAN tag now and then) and
one to three ``dec_nsh_ttl`` go at random places of the list before its first change
dp-core's frame is not measured for (``check_pkt_larger``), after field sets and VLAN
pushes too, now and then after a ``set_field`` of nsh_ttl or a load into its 8 bits, and inside clones
(oneswitch/endpoint_nsh_ttl.py), and no group call after a ``check_pkt_larger``; ``nsh_buckets`` puts dec_nsh_ttl into some group
buckets at random places of their lists (Open vSwitch runs a bucket as an action set).
The oracle asks for invalid_ttl packet-ins on both sides (``ASYNC_INVALID_TTL``). Pure:
all randomness comes from ``rng``.
"""

from __future__ import annotations

import random
import struct
from typing import Sequence

from tandem.rules import nsh as N
from tandem.rules import ofwire as W
from tandem.rules.ir import Action, Bucket, CheckPktLarger, Clone, DecNshTtl, Group, GroupAction, Output, PopVlan, SetField

_TTLS = (0, 1, 2, 2, 3, 5, 63)
# loads into nsh_ttl, Open vSwitch's 8-bit subfield: 0xc1 and 0x80 decrement where the frame's 6 bits would not
_LOADS = (SetField("nsh_ttl", 0xC1, 0xFF), SetField("nsh_ttl", 0x80, 0xC0), SetField("nsh_ttl", 1, 0x3F),
          SetField("nsh_ttl", 0x40, 0x40), SetField("nsh_ttl", 0xC0, 0xFF))


def _insert(rng: random.Random, actions: tuple[Action, ...]) -> tuple[Action, ...]:
    """One dec_nsh_ttl (sometimes after a set of nsh_ttl) at a random place before the first
    check_pkt_larger, or inside one of the clones there."""
    last = next((i for i, a in enumerate(actions) if type(a) is CheckPktLarger), len(actions))
    clones = [i for i, a in enumerate(actions[:last]) if type(a) is Clone]
    if clones and rng.random() < 0.35:
        i = rng.choice(clones)
        return (*actions[:i], Clone(_insert(rng, actions[i].actions)), *actions[i + 1:])
    at = rng.randint(0, last)
    new: tuple[Action, ...] = (DecNshTtl(),)
    if rng.random() < 0.15:
        new = (SetField("nsh_ttl", rng.choice(_TTLS)), *new)
    elif rng.random() < 0.12:  # (a load into the flow's 8 bits, which decide: rules/nsh_ttl_load.py)
        new = (rng.choice(_LOADS), *new)
    return (*actions[:at], *new, *actions[at:])


def _without_groups(actions: Sequence[Action]) -> tuple[Action, ...]:
    return tuple(Clone(_without_groups(a.actions)) if type(a) is Clone else a for a in actions if type(a) is not GroupAction)


def with_nsh_ttl(rng: random.Random, actions: tuple[Action, ...], frame: bytes) -> tuple[tuple[Action, ...], bytes]:
    """(actions with one to three dec_nsh_ttl, ``frame`` inside an NSH header); no group
    call after a check_pkt_larger (its buckets may hold dec_nsh_ttl: ``nsh_buckets``)."""
    last = next((i for i, a in enumerate(actions) if type(a) is CheckPktLarger), len(actions))
    acts = (*actions[:last], *_without_groups(actions[last:]))
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        acts = _insert(rng, acts)
    tag = struct.pack("!HH", 0x8100, rng.randrange(1, 4095)) if rng.random() < 0.2 else b""
    header = N.header({"nsh_ttl": rng.choice(_TTLS), "nsh_spi": rng.choice((0x10, 0xABCDE)),
                       "nsh_si": rng.choice((255, 1)), "nsh_c1": rng.choice((0, 0x11))})
    return acts, frame[:12] + tag + struct.pack("!H", N.ETH_TYPE_NSH) + header + frame


def nsh_buckets(rng: random.Random, groups: Sequence[Group], ports: Sequence[int]) -> list[Group]:
    """``groups`` with dec_nsh_ttl (and now and then a set of nsh_ttl, which the action set
    runs after it wherever it stands) at random places of about half their buckets' lists, and
    into some others a second output to one of ``ports`` (Open vSwitch's action set keeps the
    last output, after every set-field), and now and then a ``pop_vlan``."""
    out = []
    for g in groups:
        buckets = []
        for b in g.buckets:
            acts = list(b.actions)
            if rng.random() < 0.5:
                acts.insert(rng.randint(0, len(acts)), DecNshTtl())
                if rng.random() < 0.3:
                    acts.insert(rng.randint(0, len(acts)), SetField("nsh_ttl", rng.choice(_TTLS)))
            elif rng.random() < 0.4:  # (a second output: the action set keeps the last, after every set-field)
                acts.insert(rng.randint(0, len(acts)), Output(rng.choice(ports)))
            if rng.random() < 0.15:  # (pop_vlan, also on an untagged frame: no prerequisite in a bucket)
                acts.insert(rng.randint(0, len(acts)), PopVlan())
            buckets.append(Bucket(tuple(acts), b.weight, b.watch_port, b.watch_group))
        out.append(Group(g.group_id, g.type, tuple(buckets)))
    return out


# SET_ASYNC (OpenFlow 1.3): packet-ins of reasons no_match, action and invalid_ttl, port status, flow removed
ASYNC_INVALID_TTL = struct.pack("!6I", 0x7, 0x7, 0x7, 0x7, 0xF, 0xF)


def ask_for_invalid_ttl(conn) -> None:
    """Ask an oracle connection (``packet_out_oracle._Conn``) for invalid_ttl packet-ins too."""
    conn.send(lambda x: W.header(W.OFPT_SET_ASYNC, x, ASYNC_INVALID_TTL))
