"""Open vSwitch's ``controller(reason=…,max_len=…,id=…,userdata=…)`` across
OneSwitch: the physical action and the virtual packet-in.

A physical switch's packet-ins reach the endpoint on its connection with their
controller id (id 0's, and one per other id its rules use: ``backends/ovs.py``;
asynchronous reasons no_match/action/invalid_ttl), so the physical action is
``controller(id=ID,userdata=TAG+userdata)`` with the virtual id and the default
reason and max_len, where TAG holds the virtual controller id, max_len and reason
(``physical_controller``): each virtual id's packet-ins from one switch, these and
``dec_ttl(ids)``'s, come on one connection, in the order the switch sent them. The physical switch sends it as NXT_PACKET_IN2
(the backend asks for that format); the endpoint reads TAG back
(``virtual_packet_in``), sends the packet-in to the virtual controller
connections with that id whose asynchronous config takes that reason, cut to
max_len, in each connection's packet-in format (``encode_for``), with the
reason numbered as Open vSwitch numbers it in OpenFlow 1.3 (action_set, group
and packet_out are ``action`` there). A wire reason above 5 rides in TAG too:
the endpoint sends 6 as ``no_match`` and nothing for 7..255 (``ir.sent_reason``),
so the physical action runs as the virtual one would (its meter included).
``controller(meter_id=M)``: the physical action names meter M, which every
physical switch holds under its virtual number (docs/endpoint.md, "Meters"), and
the port extension keeps every rule naming M on one switch (``extension.py``), so
the packet-ins pass one token bucket. Pure.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import OFPCML_NO_BUFFER, Controller, Match
from tandem.rules.ofwire_packet_in2 import (
    NXPIF_NXT_PACKET_IN, NXPIF_NXT_PACKET_IN2, WirePacketIn2, encode_nx_packet_in, encode_packet_in2,
)

TAG = struct.Struct("!HHB")  # virtual controller id, max_len, reason
# after TAG in a pause's userdata: 1 if Open vSwitch refuses to resume it (its rule writes an action set: endpoint_pause.py)
PAUSE_FLAGS = struct.Struct("!B")


class VirtualPacketIn(NamedTuple):
    controller_id: int
    max_len: int
    reason: int  # Open vSwitch's own number (0..5)
    userdata: bytes
    unresumable: bool = False  # (a pause of a rule with write_actions: endpoint_pause.py)


def physical_controller(a: Controller, unresumable: bool = False) -> Controller:
    """The physical action of a virtual ``controller(...)``; a pause's TAG is followed by PAUSE_FLAGS
    (``unresumable``: its rule has write_actions, whose continuation Open vSwitch 3.1 refuses to resume)."""
    tag = TAG.pack(a.controller_id, a.max_len, a.reason) + (PAUSE_FLAGS.pack(unresumable) if a.pause else b"")
    return Controller(OFPCML_NO_BUFFER, a.controller_id, 1, tag + a.userdata, meter_id=a.meter_id, pause=a.pause)


def physical_controllers(actions: tuple) -> tuple:
    """``actions`` with each ``controller(...)`` made physical (the same tuple if there is none)."""
    if not any(type(a) is Controller for a in actions):
        return actions
    return tuple(physical_controller(a) if type(a) is Controller else a for a in actions)


def virtual_packet_in(userdata: bytes, paused: bool = False) -> VirtualPacketIn | None:
    """The virtual controller id, max_len, reason and userdata a physical packet-in's
    userdata carries (None: it came from an output to CONTROLLER, no userdata); ``paused``:
    a pause's (it carries a continuation), whose PAUSE_FLAGS follow TAG."""
    if len(userdata) < TAG.size + (PAUSE_FLAGS.size if paused else 0):
        return None
    cid, max_len, reason = TAG.unpack_from(userdata)
    if paused:
        (flags,) = PAUSE_FLAGS.unpack_from(userdata, TAG.size)
        return VirtualPacketIn(cid, max_len, reason, bytes(userdata[TAG.size + PAUSE_FLAGS.size:]), bool(flags))
    return VirtualPacketIn(cid, max_len, reason, bytes(userdata[TAG.size:]))


def of13_reason(reason: int) -> int:
    """The reason as Open vSwitch sends it in OpenFlow 1.3 (action_set, group, packet_out: action)."""
    return 1 if reason >= 3 else reason


def encode_for(fmt: int, total_len: int, buffer_id: int, reason: int, table: int, cookie: int, match: Match,
               data: bytes, userdata: bytes, continuation: bytes = b"") -> bytes:
    """One packet-in in a connection's format: OFPT_PACKET_IN (userdata and a pause's continuation
    are dropped, as Open vSwitch drops them) or NXT_PACKET_IN2 (never buffered: Open vSwitch 3.1's are not)."""
    if fmt == NXPIF_NXT_PACKET_IN2:
        return encode_packet_in2(0, WirePacketIn2(data, total_len, table, cookie, of13_reason(reason), match, userdata,
                                                  continuation))
    if fmt == NXPIF_NXT_PACKET_IN:
        return encode_nx_packet_in(0, WirePacketIn2(data, total_len, table, cookie, of13_reason(reason), match), buffer_id)
    return M.encode_packet_in(0, M.WirePacketIn(buffer_id, total_len, of13_reason(reason), table, cookie, match, data))


__all__ = ["TAG", "VirtualPacketIn", "encode_for", "of13_reason", "physical_controller", "physical_controllers",
           "virtual_packet_in"]
