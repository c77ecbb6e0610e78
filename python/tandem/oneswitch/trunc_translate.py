"""OneSwitch's translation of Open vSwitch's ``output(port=P,max_len=N)``.

Open vSwitch's datapath cuts N bytes of the frame *as last committed* to it:
VLAN and MPLS pushes and pops since the last commit (an output that sends, a
group, ``ct``, ``check_pkt_larger``, a clone holding ``ct`` or ``output_trunc``;
dp-core's pipeline/trunc.rs) are applied after the cut, so the port gets
N + (their size change) bytes. On P's own switch the translation is the same
action (the physical switch commits where the virtual one does: the
translation adds only mark writes and stack pushes, which change no size).
Toward another switch the frame must cross PCIe whole (Open vSwitch does not
truncate onto a patch port) and is cut on P's switch, where the pending
changes have been committed by the PCIe output: so the flow id names (P, N + d)
with d the size change pending at the cut (VLAN/MPLS pushes and pops, a VLAN one sized
by the tags in Open vSwitch's view, vlan_view.py; the Ethernet
header of ``encap(ethernet)``; an ``output_trunc`` to IN_PORT sends and commits
nothing), which ``pending_change`` works out
from the rule's own action list — from its start in table 0 (a packet enters
table 0 with nothing pending) or from a commit certain to happen before it.
Where d cannot be known (in a later table with no such commit before it; after
a resubmit, output_reg or a clone that changes sizes; N + d below 14) the rule
is refused with ``BAD_ACTION/BAD_ARGUMENT`` (docs/endpoint.md). Where d is not 0 the
compiler keeps an action after that PCIe output (the mark's restore): an output onto a
patch port that ends the whole translation commits nothing in Open vSwitch, so the
pending change would cross uncommitted and be added after P's cut (N + 2d bytes,
measured); followed by another action, the far side runs as a clone that commits first,
as an output to a physical PCIe port does. Known limit: a
table-0 rule reached again by ``resubmit(,0)`` or ``output:TABLE`` after a
pending change. Pure.
"""

from __future__ import annotations

from typing import Sequence

from tandem.rules.ir import (
    OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, Action, CheckPktLarger, Clone, Ct, GroupAction, Output,
    OutputReg, OutputTrunc, PopMpls, PopVlan, PushMpls, PushVlan, Resubmit, Rule,
)

from tandem.rules.ir import EncapEthernet, EncapNsh

from .ids import TranslationError
from .vlan_view import tag_views, view_step
from .clone_translate import clone_lookups

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT
_SIZE = {PushVlan: 4, PopVlan: -4, PushMpls: 4, PopMpls: -4}
_SIZE[EncapEthernet] = 14  # (encap(ethernet)'s header stays pending; encap(nsh) commits: rules/encap.py)
_UNKNOWN = "unknown"


def _sends(port: int, rule: Rule, ports) -> bool | None:
    """Does an output to ``port`` surely send (a commit), surely not, or None if it depends on the packet?"""
    if port in (OFPP_FLOOD, OFPP_ALL, OFPP_CONTROLLER, OFPP_IN_PORT):
        return True
    if port not in ports:
        return False if port < 0xFFFF_FF00 else None
    inm = rule.match.get("in_port")
    if inm is not None and inm.mask is None:
        return inm.value != port
    return None


def _nested_change(actions: Sequence[Action]) -> int:
    return sum(_SIZE.get(type(a), 0) for a in actions)


def pending_change(actions: Sequence[Action], at: int, rule: Rule, ports, in_clone: bool = False,
                   outer: Sequence[Action] | None = None, last: bool = False) -> int | str:
    """The size change pending (not yet committed) when ``actions[at]`` runs, or
    ``_UNKNOWN``. ``ports``: the virtual port numbers; ``in_clone``: ``actions`` is the
    list of a clone holding the output_trunc, which Open vSwitch commits at its start
    unless the clone ends the whole translation (the last action of the rule's list, no
    goto or write_actions after it, no action set written before), when it translates the
    clone inline (pipeline/clone.rs): ``outer``, the rule's actions before a clone that may
    end it, ``last`` if it surely does; where it may, both must give the same change."""
    if in_clone and outer is not None:
        inline = pending_change((*outer, *actions), len(outer) + at, rule, ports)
        return inline if last or inline == pending_change(actions, at, rule, ports, True) else _UNKNOWN
    deltas: set[int] | None = {0} if rule.table == 0 or in_clone else None  # None: unknown
    views = tag_views(rule, in_clone)
    for a in actions[:at]:
        t = type(a)
        if t is PushVlan or t is PopVlan or t is EncapEthernet:  # (sized by the tags in OVS's view: vlan_view.py)
            deltas, views = view_step(t, deltas, views)
        elif t in _SIZE:
            deltas = None if deltas is None else {d + _SIZE[t] for d in deltas}
        elif t is Output or t is OutputTrunc:
            # (output_trunc to IN_PORT, or any reserved port but LOCAL, sends and commits nothing: pipeline/trunc.rs)
            sends = False if t is OutputTrunc and OFPP_IN_PORT <= a.port != OFPP_LOCAL else _sends(a.port, rule, ports)
            if sends:
                deltas = {0}
            elif sends is None and deltas is not None:
                deltas = deltas | {0}
        elif t is GroupAction or t is Ct or t is CheckPktLarger or t is EncapNsh:
            deltas = {0}
        elif t is Clone:
            if any(type(b) in (Ct, OutputTrunc) for b in a.actions):
                deltas = {0}  # (committed at the clone's start, and as committed then after it)
            elif _nested_change(a.actions) or any(type(b) is Clone for b in a.actions) or clone_lookups(a):
                deltas = None  # (a lookup inside: the rules it finds may commit anything)
            elif deltas is not None:
                deltas = deltas | {0}
        elif t is Resubmit or t is OutputReg:
            deltas = None
    if deltas is None or len(deltas) != 1:
        return _UNKNOWN
    return next(iter(deltas))


def remote_max_len(actions: Sequence[Action], at: int, rule: Rule | str, ports, in_clone: bool = False,
                   outer: Sequence[Action] | None = None, last: bool = False) -> int:
    """The max_len the delivery rule on P's switch cuts to (N + the pending change)."""
    a = actions[at]
    if not isinstance(rule, Rule):
        raise TranslationError(rule, "output(port=P,max_len=N) outside a flow's apply-actions", _BAD_ARGUMENT)
    d = pending_change(actions, at, rule, ports, in_clone, outer, last)
    if d == _UNKNOWN:
        raise TranslationError(rule, f"output(port={a.port},max_len={a.max_len}) to a port of another switch where the "
                               "VLAN/MPLS pushes and pops (or encap(ethernet) header) not yet committed by Open vSwitch "
                               "cannot be known from the rule (a later table with no output, group, ct, check_pkt_larger "
                               "or encap(nsh) before it in the "
                               "same list, or a resubmit, output_reg or size-changing clone before it, or in a last "
                               "clone that may or may not end the translation, or a push_vlan/pop_vlan whose size depends "
                               "on the VLAN tags in OVS's view, which it holds two of, unknown unless the match says "
                               "vlan_vid=0x0000: vlan_view.py): OVS cuts the "
                               "frame as last committed, P's switch would cut it as it arrives", _BAD_ARGUMENT)
    n = a.max_len + d
    if n < 14:
        raise TranslationError(rule, f"output(port={a.port},max_len={a.max_len}) after a pending pop: Open vSwitch sends "
                               f"{n} bytes, which P's switch cannot cut to (max_len is at least 14)", _BAD_ARGUMENT)
    return n
