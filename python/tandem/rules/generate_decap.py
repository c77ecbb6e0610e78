"""Random ``decap(),decap()`` rules (feature ``nx_decap``): the one decap form OneSwitch
runs (``decap.py``). A rule matches NSH over Ethernet with an Ethernet payload
(``eth_type=0x894f,nsh_np=3``, sometimes an in_port, SPI or SI from ``generate_nsh``'s
pools; mostly no VLAN tag), may write registers, ``pkt_mark`` or an NSH field, push a VLAN tag (the frame
Open vSwitch then drops whole) or send the outer frame first, then runs the pair (now and
then with the packet types Open vSwitch also takes), then only actions that touch no
header: register and mark writes, outputs, a packet-in, a resubmit; it may write an
output and go to a later table, where the other rules meet the inner frame. Frames:
``packets.random_frame`` gives an NSH frame a whole Ethernet frame inside now and then (``_nsh_inner_frame``).
Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Sequence

from .decap import FIRST_TYPES, SECOND_TYPES
from .generate_nsh import nsh_value
from .generate_nx import RESUBMIT_FEATURE
from .ir import (
    OFPP_CONTROLLER, ApplyActions, Decap, FieldMatch, GotoTable, Match, Output, PushVlan, Resubmit, Rule, SetField,
    WriteActions,
)

DECAP_FEATURE = "nx_decap"
_META_VALUES = (0, 1, 5, 9)


def meta_write(rng: random.Random) -> SetField:
    """A write of a register or pkt_mark (no packet header; also generate_decap_set.py)."""
    return SetField(rng.choice(("reg0", "reg1", "pkt_mark")), rng.choice(_META_VALUES))


def decap_rule(rng: random.Random, ports: Sequence[int], tables: int, table: int, priority: int | None,
               features: frozenset[str] = frozenset()) -> Rule:
    """One rule with the pair (see the module's text)."""
    fields: dict = {}
    if rng.random() < 0.3:
        fields["in_port"] = FieldMatch(rng.choice(list(ports)))
    fields["eth_type"] = FieldMatch(0x894F)
    fields["nsh_np"] = FieldMatch(3)
    for f in ("nsh_spi", "nsh_si"):
        if rng.random() < 0.2:
            fields[f] = FieldMatch(nsh_value(rng, f))
    if rng.random() < 0.7:  # (no VLAN tag: the frames that meet it get through; a tagged one is dropped whole)
        fields["vlan_vid"] = FieldMatch(0)
    if table > 0 and rng.random() < 0.3:  # (what an earlier table wrote)
        fields["reg0"] = FieldMatch(rng.choice(_META_VALUES))
    acts: list = []
    for _ in range(rng.choice((0, 0, 1, 2))):
        r = rng.random()
        if r < 0.4:
            acts.append(meta_write(rng))
        elif r < 0.6:
            f = rng.choice(("nsh_spi", "nsh_si", "nsh_c1"))
            acts.append(SetField(f, nsh_value(rng, f)))
        elif r < 0.7:
            acts.append(PushVlan())
        else:
            acts.append(Output(rng.choice(list(ports))))
    acts += [Decap(rng.choice((None, None, None, FIRST_TYPES[1]))), Decap(rng.choice((None, None, None, SECOND_TYPES[1])))]
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        r = rng.random()
        if r < 0.35:
            acts.append(meta_write(rng))
        elif r < 0.85:
            acts.append(Output(rng.choice(list(ports))))
        elif r < 0.93 and "controller" in features:
            acts.append(Output(OFPP_CONTROLLER))
        elif table + 1 < tables and RESUBMIT_FEATURE in features:
            acts.append(Resubmit(table=rng.randrange(table + 1, tables)))
    if rng.random() < 0.6:
        acts.append(Output(rng.choice(list(ports))))
    instrs: list = [ApplyActions(tuple(acts))]
    if table + 1 < tables and rng.random() < 0.6:
        if rng.random() < 0.3:
            instrs.append(WriteActions((Output(rng.choice(list(ports))),)))
        instrs.append(GotoTable(rng.randrange(table + 1, tables)))
    return Rule(match=Match(tuple(fields.items())), instructions=tuple(instrs), table=table,
                priority=rng.randrange(1, 65536) if priority is None else priority)
