"""``dec_nsh_ttl`` in a PACKET_OUT (docs/endpoint.md).

Open vSwitch 3.1 runs a PACKET_OUT's list on its frame: ``dec_nsh_ttl`` decrements the
NSH TTL, and at TTL 0 or 1 sends one packet-in with reason ``invalid_ttl`` (to
controllers whose async config takes it) and runs nothing after it; outputs before it
have sent (measured: ``output:3,dec_nsh_ttl,output:2`` at TTL 1 sends to 3 only). A
frame that is not NSH where it runs is refused with BAD_ACTION/MATCH_INCONSISTENT
(measured, also after a ``push_mpls``; VLAN tags before the NSH ethertype are fine).

The endpoint walks the list and sends one physical PACKET_OUT per output, each with the
changes before it (``OneSwitchEndpoint.packet_out``), so it decides the decrement
itself, once, from the frame: ``expires`` says whether the TTL runs out there (the walk
then sends the virtual packet-in itself and stops), else the decrement stays among the
changes and each physical PACKET_OUT runs it on its copy. That needs the frame as the
controller sent it, so ``check`` refuses (BAD_TYPE, OneSwitch's own) a dec_nsh_ttl after
an action that changes the packet or its metadata, inside a clone, or in a bucket of a
group the PACKET_OUT calls (the walk runs a bucket's list in order, not as the action
set it is). Pure.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from tandem.rules import nsh as N
from tandem.rules import ofwire as W
from tandem.rules.ir import Action, Clone, Controller, DecNshTtl, Group, GroupAction, Output

_VLAN_TYPES = (0x8100, 0x88A8)
_MATCH_INCONSISTENT = 10  # OFPBAC_MATCH_INCONSISTENT (OpenFlow 1.3)


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


def _bucket_has(groups: Mapping[int, Group], gid: int, depth: int = 0) -> bool:
    g = groups.get(gid)
    if g is None or depth > 8:
        return False
    return any(type(a) is DecNshTtl or type(a) is GroupAction and _bucket_has(groups, a.group_id, depth + 1)
               for b in g.buckets for a in b.actions)


def _holds(actions: Iterable[Action]) -> bool:
    return any(type(a) is DecNshTtl or type(a) is Clone and _holds(a.actions) for a in actions)


def check(actions: Iterable[Action], frame: bytes, groups: Mapping[int, Group]) -> None:
    """Raise ``OFError`` for a PACKET_OUT's dec_nsh_ttl that Open vSwitch refuses (the frame
    is not NSH) or that the endpoint does not carry out (see the module docstring)."""
    changed = False
    for a in actions:
        t = type(a)
        if t is DecNshTtl:
            if changed:
                raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, "dec_nsh_ttl in a PACKET_OUT after an action "
                                "that changes the packet or its metadata is not carried out by OneSwitch: the "
                                "endpoint decides the decrement (and its invalid_ttl packet-in) from the frame as sent")
            if nsh_ttl(frame) is None:
                raise W.OFError(W.OFPET_BAD_ACTION, _MATCH_INCONSISTENT,
                                "dec_nsh_ttl in a PACKET_OUT whose frame is not NSH (eth_type 0x894f)")
        elif t is Clone and _holds(a.actions):
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, "dec_nsh_ttl inside clone in a PACKET_OUT is not "
                            "carried out by OneSwitch")
        elif t is GroupAction and _bucket_has(groups, a.group_id):
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, f"a PACKET_OUT calling group {a.group_id}, whose "
                            "bucket holds dec_nsh_ttl, is not carried out by OneSwitch (the endpoint does not run a "
                            "bucket as an action set)")
        changed = changed or not isinstance(a, (Output, Controller, GroupAction, Clone))
