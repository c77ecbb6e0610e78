"""Random ``encap`` actions (feature ``nx_encap``): the one form OneSwitch runs
(``encap.py``), ``encap(nsh(md_type=1))`` or bare ``encap(nsh)``, set_fields on the
writable NSH fields (values from ``generate_nsh``'s pools, so later tables' NSH matches
meet them), ``encap(ethernet)``. ``flow`` (``prereq.FlowState``) is updated: after it the
packet is an NSH-over-Ethernet frame, so later draws (NSH set_fields, ``dec_nsh_ttl``,
matches in later tables with ``nx_nsh``) treat it as one. Pure: all randomness comes
from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .generate_nsh import nsh_value
from .encap import form_problem, has_encap
from .ir import FIELDS, NSH_FIELDS, Action, CheckPktLarger, Clone, EncapEthernet, EncapNsh, SetField

ENCAP_FEATURE = "nx_encap"
_SETTABLE = sorted(f for f, spec in FIELDS.items() if f.startswith("nsh_") and spec.settable)


def encap_actions(rng: random.Random, flow, p: float = 0.3) -> list[Action]:
    """Now and then (probability ``p``) the whole pattern; ``flow`` follows it. Only on a
    packet without VLAN tags: the frame after it has none, while Open vSwitch's checks
    still count the tags before it (three pushes in all are refused), so a pop or VLAN
    set_field after it would meet no tag."""
    if flow.vlans or rng.random() >= p:
        return []
    out: list[Action] = [EncapNsh(rng.choice((1, 1, None)))]
    for f in rng.sample(_SETTABLE, rng.choice((0, 1, 1, 2, 3))):
        out.append(SetField(f, nsh_value(rng, f)))
    out.append(EncapEthernet())
    for a in out:
        flow.apply(a)
    return out


def repaired(acts: list[Action]) -> list[Action]:
    """``acts`` with every encap pattern whole again, after other generators inserted
    actions at random places (an output, resubmit or hash action between the two encaps)
    or wrapped a run in a clone: a clone holding an encap or inside a pattern is
    unwrapped, what stands inside a pattern but an NSH set_field moves to just before
    its ``encap(nsh)`` (those actions were drawn for the packet as the match leaves it),
    and a pattern a clone cut in two is closed again; a check_pkt_larger before a pattern
    moves after the last one (``_checks_after_encaps``)."""
    if form_problem(acts) is None:
        return acts
    acts = _checks_after_encaps(acts)
    if form_problem(acts) is None:
        return acts
    todo, out = list(reversed(acts)), []
    pattern: list[Action] | None = None
    while todo:
        a = todo.pop()
        t = type(a)
        if t is Clone and (pattern is not None or has_encap(a.actions)):
            todo.extend(reversed(a.actions))
        elif t is EncapNsh:
            if pattern is not None:
                out += pattern + [EncapEthernet()]
            pattern = [a]
        elif t is EncapEthernet:
            out += (pattern or [EncapNsh(1)]) + [a]
            pattern = None
        elif pattern is not None and t is SetField and a.field in NSH_FIELDS and a.mask is None:
            pattern.append(a)
        else:
            out.append(a)
    return _checks_after_encaps(out + ([] if pattern is None else pattern + [EncapEthernet()]))


def _checks_after_encaps(acts: list[Action]) -> list[Action]:
    """``acts`` with every check_pkt_larger that stands before an ``encap(nsh)`` moved to
    just after the last ``encap(ethernet)`` (``encap.py`` refuses the pattern after one)."""
    last = max((i for i, a in enumerate(acts) if type(a) is EncapNsh), default=-1)
    moved = [a for a in acts[:last] if type(a) is CheckPktLarger]
    if not moved:
        return acts
    rest = [a for a in acts[:last] if type(a) is not CheckPktLarger] + acts[last:]
    end = max((i for i, a in enumerate(rest) if type(a) is EncapEthernet), default=len(rest) - 1) + 1
    return rest[:end] + moved + rest[end:]
