"""``dec_nsh_ttl`` in a PACKET_OUT (docs/endpoint.md).

Open vSwitch 3.1 runs a PACKET_OUT's list on its frame: ``dec_nsh_ttl`` decrements the
flow's NSH TTL, and at TTL 0 or 1 sends one packet-in with reason ``invalid_ttl`` (to
controllers whose async config takes it; the frame with every change before it, as any
packet-in of the PACKET_OUT) and runs nothing more of the list it is in
(``compose_dec_nsh_ttl_action`` returns from ``do_xlate_actions``): outputs before it have
sent (measured: ``output:3,dec_nsh_ttl,output:2`` at TTL 1 sends to 3 only), a clone it
is in ends but the list around the clone goes on, a bucket it is in ends but the group's
next bucket runs. A frame that is not NSH where it runs is refused with
BAD_ACTION/MATCH_INCONSISTENT (measured, also after a ``push_mpls``; VLAN tags before
the NSH ethertype are fine); a group bucket is checked at GROUP_MOD time (no NSH
prerequisite), and runs as an action set, whose order puts ``dec_nsh_ttl`` after the
pops, pushes and other TTL decrements and before the set-fields (measured for flows:
``bucket_as_action_set`` is dp-core's ``ActionSet::to_list``); there a frame that is not
NSH ends the bucket, with no packet-in.

The endpoint walks the list and sends one physical PACKET_OUT per output, each with the
changes before it (``OneSwitchEndpoint.packet_out``), so it decides each decrement
itself, from the frame as changed so far (``decide``: dp-core runs the changes, as for
the PACKET_OUT's packet-ins, endpoint_packet_in.py): if the TTL runs out there the walk
sends the virtual packet-in itself and ends that list, else the decrement stays among
the changes and each later physical PACKET_OUT runs it on its copy. ``check`` refuses
(BAD_TYPE, OneSwitch's own) a dec_nsh_ttl after a change dp-core's frame is not measured
for (``unmodeled_before_packet_in``), after ``pop_mpls``, or after a packet-in
(CONTROLLER, ``controller(…)``, also in an earlier clone: measured, Open vSwitch 3.1 then
commits the NSH TTL wrongly: ``clone(push_vlan,set_field:5014->vlan_vid,controller),
dec_nsh_ttl,output:2`` sends the TTL undecremented and a VLAN TCI no action wrote), and a bucket holding
dec_nsh_ttl with an action its action-set order here does not cover. Pure but for
dp-core's scratch switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from tandem.oneswitch.endpoint_clone import sends_packet_in
from tandem.oneswitch.endpoint_packet_in import changed_packet_in, unmodeled_before_packet_in
from tandem.rules import ir
from tandem.rules import nsh as N
from tandem.rules import ofwire as W
from tandem.rules.ir import Action, Clone, Controller, DecNshTtl, Group, GroupAction, Match, Output

_VLAN_TYPES = (0x8100, 0x88A8)
_MATCH_INCONSISTENT = 10  # OFPBAC_MATCH_INCONSISTENT (OpenFlow 1.3)
# a bucket's action set in Open vSwitch's order (ofpacts_execute_action_set): the last of each kind
_SET_ORDER = (ir.PopVlan, ir.PopMpls, ir.PushMpls, ir.PushVlan, ir.DecTtl, ir.DecMplsTtl, DecNshTtl, ir.SetMplsTtl,
              ir.SetNwTtl)
_SETS = (ir.SetField, ir.MoveField)  # (all of them, in the order written)
_DROPPED = (ir.Note, Controller)  # (an action set has no place for them: Open vSwitch leaves them out)


def nsh_ttl(frame: bytes) -> int | None:
    """The NSH TTL Open vSwitch's flow holds for ``frame`` (0 for a header it does not
    parse), or None when the frame is not NSH (its ethertype past VLAN tags)."""
    off = 12
    while len(frame) >= off + 2 and int.from_bytes(frame[off:off + 2], "big") in _VLAN_TYPES:
        off += 4
    if len(frame) < off + 2 or int.from_bytes(frame[off:off + 2], "big") != N.ETH_TYPE_NSH:
        return None
    return N.fields(frame, off + 2)["nsh_ttl"]


def expires(frame: bytes) -> bool:
    """Does a dec_nsh_ttl on ``frame`` (checked to be NSH) run out of TTL?"""
    return (nsh_ttl(frame) or 0) <= 1


@dataclass(frozen=True)
class Expired:
    """A dec_nsh_ttl that ran out: Open vSwitch's invalid_ttl packet-in (``frame``, ``match``),
    or none (``frame`` None: not NSH in a bucket, which only ends the bucket)."""

    frame: bytes | None
    match: Match | None


def decide(frame: bytes, mods: Sequence[Action], in_vport: int, vports: Iterable[int]) -> Expired | None:
    """A dec_nsh_ttl after ``mods`` in a PACKET_OUT from ``in_vport``: None when it
    decrements (the walk keeps it among the changes), else what it sends instead."""
    data, match = changed_packet_in(frame, mods, in_vport, vports)
    ttl = nsh_ttl(data)
    if ttl is None:
        return Expired(None, None)
    if any(_writes_nsh_ttl(a) for a in mods):
        ttl = flow_nsh_ttl(frame, mods, in_vport, vports)
    return Expired(data, match) if ttl <= 1 else None


def _writes_nsh_ttl(a: Action) -> bool:
    t = type(a)
    return (t is ir.SetField and a.field == "nsh_ttl"
            or (t is ir.MoveField or t is ir.StackPop) and a.dst.field == "nsh_ttl")


_READ_OUT = ir.MoveField(ir.Subfield("nsh_ttl", 0, 8), ir.Subfield("reg0", 0, 8))


def flow_nsh_ttl(frame: bytes, mods: Sequence[Action], in_vport: int, vports: Iterable[int]) -> int:
    """The flow's 8-bit NSH TTL after ``mods``, which ``dec_nsh_ttl`` compares (bits 6 and 7,
    which a load, move or pop writes, stay out of the frame: rules/nsh_ttl_load.py; measured,
    ``load:0xc1->NXOXM_NSH_TTL[],dec_nsh_ttl`` decrements), read by dp-core through a register."""
    _, match = changed_packet_in(frame, [*mods, _READ_OUT], in_vport, vports)
    reg0 = match.get("reg0")
    return 0 if reg0 is None else reg0.value & 0xFF


def pops_nothing(frame: bytes, mods: Sequence[Action], in_vport: int, vports: Iterable[int]) -> bool:
    """Whether a bucket's ``pop_vlan`` after ``mods`` meets an untagged frame: Open vSwitch
    checks no prerequisite in a bucket and pops nothing (measured), while a physical
    PACKET_OUT holding it would be refused (MATCH_INCONSISTENT), so the walk leaves it out."""
    data, _ = changed_packet_in(frame, mods, in_vport, vports)
    return int.from_bytes(data[12:14], "big") not in _VLAN_TYPES


def bucket_as_action_set(actions: Sequence[Action]) -> tuple[Action, ...]:
    """A bucket holding dec_nsh_ttl as the action list Open vSwitch runs (``check`` has
    refused any action this does not place): nothing without a group or an output."""
    last = {k: a for a in actions for k in _SET_ORDER if type(a) is k}
    end = next((a for a in reversed(actions) if type(a) is GroupAction), None) or \
        next((a for a in reversed(actions) if isinstance(a, Output)), None)
    if end is None:
        return ()
    return (*(last[k] for k in _SET_ORDER if k in last), *(a for a in actions if type(a) in _SETS),
            *[a for a in actions if type(a) is ir.SetQueue][-1:], end)


def holds_dec_nsh_ttl(actions: Iterable[Action]) -> bool:
    """Whether a bucket's actions hold dec_nsh_ttl (``check`` allows only kinds ``bucket_as_action_set`` places)."""
    return any(type(a) is DecNshTtl for a in actions)


def runs_as_action_set(actions: Sequence[Action]) -> bool:
    """Whether the walk runs a bucket in ``bucket_as_action_set``'s order: one holding dec_nsh_ttl,
    or one of those kinds only (other buckets, e.g. with ``output_reg`` or ``resubmit``, as listed)."""
    return holds_dec_nsh_ttl(actions) or all(
        isinstance(a, (*_SET_ORDER, *_SETS, *_DROPPED, ir.SetQueue, Output, GroupAction)) and type(a) is not ir.PopMpls
        for a in actions)


def _bad_type(why: str) -> W.OFError:
    return W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, why)


def _check_buckets(groups: Mapping[int, Group], gid: int, changed: str | None, depth: int = 0) -> None:
    g = groups.get(gid)
    if g is None or depth > 8:
        return
    for b in g.buckets:
        if holds_dec_nsh_ttl(b.actions):
            if changed:
                raise _bad_type(f"a PACKET_OUT calling group {gid}, whose bucket holds dec_nsh_ttl, after {changed}: "
                                "OneSwitch's endpoint decides the decrement from the frame dp-core makes of the changes, "
                                "measured for set-field, load, move, push/pop, VLAN/MPLS pushes and TTL actions")
            odd = next((a for a in b.actions if not isinstance(a, (*_SET_ORDER, *_SETS, *_DROPPED, ir.SetQueue, Output,
                                                                    GroupAction)) or type(a) is ir.PopMpls), None)
            if odd is not None:
                raise _bad_type(f"a PACKET_OUT calling group {gid}, whose bucket holds dec_nsh_ttl beside "
                                f"{type(odd).__name__.lower()}: not carried out by OneSwitch (the endpoint runs such a "
                                "bucket as Open vSwitch's action set of pops, pushes, TTL actions, set-fields, set_queue "
                                "and the output or group)")
        for a in b.actions:
            if type(a) is GroupAction:
                _check_buckets(groups, a.group_id, changed, depth + 1)


def _check(actions: Iterable[Action], nsh: bool, changed: str | None, groups: Mapping[int, Group],
           whole: bool = False) -> None:
    for a in actions:
        t = type(a)
        if t is DecNshTtl:
            if changed and not whole:
                raise _bad_type(f"dec_nsh_ttl in a PACKET_OUT after {changed} is not carried out by OneSwitch: the "
                                "endpoint decides the decrement (and its invalid_ttl packet-in) from the frame dp-core "
                                "makes of the changes, measured for set-field, load, move, push/pop, VLAN/MPLS pushes "
                                "and TTL actions")
            if not nsh:
                raise W.OFError(W.OFPET_BAD_ACTION, _MATCH_INCONSISTENT,
                                "dec_nsh_ttl in a PACKET_OUT whose frame is not NSH (eth_type 0x894f) where it runs")
            continue  # (dp-core runs it on the frame as Open vSwitch does)
        elif t is Clone:
            _check(a.actions, nsh, changed, groups, whole)
        elif t is GroupAction:
            _check_buckets(groups, a.group_id, changed)
            continue
        elif t is ir.PushMpls:
            nsh = False
        if sends_packet_in([a]):  # (measured: clone(push_vlan,set_field:…->vlan_vid,controller),dec_nsh_ttl,output:2
            changed = changed or "a packet-in"  # sends the TTL as it was and a VLAN TCI no action wrote)
        elif t is ir.PopMpls:
            changed = changed or "pop_mpls"
        elif t is not Clone and not isinstance(a, (Output, Controller)) and unmodeled_before_packet_in(a):
            changed = changed or t.__name__.lower()


def check(actions: Iterable[Action], frame: bytes, groups: Mapping[int, Group], whole: bool = False) -> None:
    """Raise ``OFError`` for a PACKET_OUT's dec_nsh_ttl that Open vSwitch refuses (the frame
    is not NSH where it runs) or that the endpoint does not carry out (see the module docstring;
    ``whole``: the host's Open vSwitch runs the PACKET_OUT, packet_out_whole.py, so only the former)."""
    actions = tuple(actions)
    if not any(type(a) in (DecNshTtl, Clone, GroupAction) for a in actions):
        return
    _check(actions, nsh_ttl(frame) is not None, None, groups, whole)
