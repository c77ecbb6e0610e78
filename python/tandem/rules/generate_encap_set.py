"""Random rules with the SFC encap pair split between apply-actions and the action set
(feature ``nx_write_encap``, the OVS oracle's item ``write:encap``; ``encap_set.py``):

    match, [changes, outputs], encap(nsh…), [NSH set_fields],
    write_actions(encap(ethernet), [NSH / Ethernet set_fields], [push_vlan, vlan_vid],
                  [dec_nsh_ttl], output and/or group)

with no goto_table (the form OneSwitch runs). The written set_fields run after the
written ``encap(ethernet)``, on the new Ethernet header and the NSH header; a written
push_vlan tags the new frame. Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
from typing import Callable, NamedTuple, Sequence

from .generate_nsh import nsh_value
from .ir import (
    OFPVID_PRESENT, ApplyActions, CheckPktLarger, DecNshTtl, EncapEthernet, EncapNsh, GroupAction, Output, PushVlan, Rule, SetField,
    WriteActions,
)
from .prereq import FlowState

WRITE_ENCAP_FEATURE = "nx_write_encap"
_NSH_SET = ("nsh_spi", "nsh_si", "nsh_c1", "nsh_c2", "nsh_c3", "nsh_c4", "nsh_flags", "nsh_ttl")


class BaseDraws(NamedTuple):
    """generate.py's own draws, handed in by it (so this module does not import it): a
    match, changes, an output port, and the repair of encap patterns in a list."""
    match: Callable
    modifications: Callable
    out_port: Callable
    repaired_encaps: Callable


def split_encap_rule(rng: random.Random, ports: Sequence[int], tables: int, table: int, priority: int | None,
                     features: frozenset[str], groups: Sequence[int], draws: BaseDraws) -> Rule | None:
    """One rule with the split pair, or None where the drawn match has a VLAN tag (the
    pattern is drawn on untagged packets only, as ``generate_encap``)."""
    match = draws.match(rng, ports, table, features)
    flow = FlowState.of(match)
    if flow.vlans:
        return None
    acts = draws.modifications(rng, flow, features, rng.choice((0, 0, 1, 2)), table, ports)
    if rng.random() < 0.4:
        acts.append(draws.out_port(rng, ports, features))
    acts = draws.repaired_encaps(acts)
    if flow.vlans or any(type(a) is CheckPktLarger for a in acts):  # (a push drawn above: no pattern on a tagged
        return None  # packet; a check_pkt_larger: refused before the pair, encap_set.py)
    acts.append(EncapNsh(rng.choice((1, 1, None))))
    for f in rng.sample(_NSH_SET[:4], rng.choice((0, 1, 1, 2))):
        acts.append(SetField(f, nsh_value(rng, f)))
    before: list = []  # (NSH set_fields and dec_nsh_ttl may stand before the written encap(ethernet), as
    after: list = []  # Open vSwitch takes them; Ethernet header set_fields and a tag's vlan_vid only after it)
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        r = rng.random()
        if r < 0.35:
            f = rng.choice(_NSH_SET)
            (before if rng.random() < 0.3 else after).append(SetField(f, nsh_value(rng, f)))
        elif r < 0.6:
            f = rng.choice(("eth_src", "eth_dst"))
            after.append(SetField(f, rng.choice((0x0A0B0C0D0E0F, 0x020000000001, 0))))
        elif r < 0.75 and not any(type(a) is PushVlan for a in after):
            after += [PushVlan(rng.choice((0x8100, 0x88A8))), SetField("vlan_vid", OFPVID_PRESENT | rng.choice((1, 10, 4095)))]
        else:
            (before if rng.random() < 0.3 else after).append(DecNshTtl())
    written = before + [EncapEthernet()] + after
    kind = rng.random()
    if groups and "groups" in features and kind < 0.3:
        written.append(GroupAction(rng.choice(list(groups))))
    if kind >= 0.15:
        written.append(Output(rng.choice(list(ports))))
    return Rule(match=match, instructions=(ApplyActions(tuple(acts)), WriteActions(tuple(written))), table=table,
                priority=rng.randrange(1, 65536) if priority is None else priority)
