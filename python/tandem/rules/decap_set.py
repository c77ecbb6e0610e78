"""The SFC decap pair split between a flow's apply-actions and its action set:

    eth_type=0x894f,nsh_np=3, actions=…, decap(), write_actions(decap(), …)

Open vSwitch 3.1 (measured on a dummy bridge with ofproto/trace and real frames) keeps
one decap in the action set (the one written last) and runs it after pop_vlan and
pop_mpls and before encap, the pushes, the TTL actions, the set-fields and the group or
output. After an apply-actions list that ends in ``decap()`` (the Ethernet header is
gone from Open vSwitch's flow: packet type (1,0x894f)), the set's ``decap()`` pops
both headers and recirculates (datapath ``pop_eth,pop_nsh(),recirc(…)``); the rest of
the action set then runs on the re-parsed inner Ethernet frame: its output sends the
inner frame, a written ``push_vlan`` tags it, register writes are kept. dp-core runs the
written ``decap()`` at that place of its action set (``actionset.rs``,
``pipeline/decap.rs``); the translation needs nothing (the whole pipeline and its
action set run on the ingress switch before the flow id and the PCIe output).

Refused (``problem``; docs/endpoint.md), as every OneSwitch port and the PCIe crossing
carry Ethernet frames only:

- a written ``decap`` without the open ``decap()`` ending the same rule's apply-actions
  (one decap of an Ethernet frame leaves a packet no Ethernet port sends: Open vSwitch
  drops it at every output, measured), and that open ``decap()`` without a written one;
- more than one written ``decap`` (Open vSwitch keeps the last), packet types other
  than those ``decap.py`` takes;
- the split pair with ``goto_table`` (the later tables see a packet that is not
  Ethernet, measured: their outputs drop it; dp-core does not model it);
- a written ``pop_vlan``, ``pop_mpls``, ``push_mpls`` or ``encap`` beside it (they run
  on the NSH packet or not at all; not modeled) and a written set_field or move on a
  packet header (Open vSwitch refuses those after a decap: ``OFPBAC_MATCH_INCONSISTENT``,
  and they run on the inner frame before it: not modeled), a written group (not modeled).

Pure.
"""

from __future__ import annotations

import re

from .decap import FIRST_TYPES, SECOND_TYPES, names_no_header, _changes_type_or_looks_up
from .ir import Decap, MoveField, Output, PushVlan, SetField, SetQueue

_WRITTEN_OK = (Decap, Output, PushVlan, SetQueue, SetField, MoveField)


def written_decap(actions) -> bool:
    """Does a write_actions list hold a ``decap``?"""
    return any(type(a) is Decap for a in actions)


def open_at_end(apply) -> bool:
    """Does ``apply`` end in its one ``decap()`` (the first of the pair), with nothing
    before it that may change the packet type or look tables up?"""
    acts = list(apply)
    if not acts or type(acts[-1]) is not Decap or acts[-1].packet_type not in FIRST_TYPES:
        return False
    return sum(type(a) is Decap for a in acts) == 1 and not any(_changes_type_or_looks_up(a) for a in acts[:-1])


def problem(apply, instructions, name=None) -> str | None:
    """Why OneSwitch refuses the split decap pair of one rule (its apply-actions
    ``apply`` and all its ``instructions``); None: ``apply`` ends in its one ``decap()``
    and the rule writes one ``decap()`` into the action set beside only outputs,
    push_vlan, set_queue and register/metadata/pkt_mark writes, without goto_table.
    ``name`` spells an action in the reason (the ovs-ofctl parser passes its printer;
    the default is the IR type's name in snake case, as on the wire)."""
    from .ir import GotoTable, WriteActions

    written = next((i.actions for i in instructions if type(i) is WriteActions), ())
    if not open_at_end(apply):
        return ("decap in write_actions is supported only after an apply-actions list that ends in one decap() "
                "(with nothing before it that may change the packet type or look tables up): one decap of an "
                "Ethernet frame leaves a packet that Open vSwitch sends out of no Ethernet port")
    if not written_decap(written):
        return ("a single decap() ending the apply-actions is supported only with decap() written into the same "
                "rule's action set: alone it leaves a packet that Open vSwitch sends out of no Ethernet port")
    decaps = [a for a in written if type(a) is Decap]
    if len(decaps) != 1 or decaps[0].packet_type not in SECOND_TYPES:
        return ("write_actions may hold one decap() (or decap(packet_type(ns=0,type=0))) after an apply-actions "
                "decap(): Open vSwitch keeps only the one written last")
    if any(type(i) is GotoTable for i in instructions):
        return ("decap() in apply-actions closed by a written decap() is supported without goto_table only: the "
                "later tables would see a packet that is not Ethernet")
    bad = next((a for a in written if not isinstance(a, _WRITTEN_OK)), None)
    if bad is not None:
        return (f"{(name or _type_name)(bad)} written beside decap() is not supported (only outputs, push_vlan, set_queue "
                "and register, metadata or pkt_mark writes; not modeled)")
    if any(type(a) in (SetField, MoveField) and not names_no_header(a) for a in written):
        return ("a written set_field or move on a packet header beside a written decap() is refused, as Open "
                "vSwitch refuses it (OFPBAC_MATCH_INCONSISTENT: the packet type is not known there)")
    return None


def _type_name(a) -> str:
    """``PopVlan`` -> ``pop_vlan``: an action's IR type in snake case."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(a).__name__).lower()
