"""Open vSwitch's ``controller(pause)`` and NXT_RESUME across OneSwitch.

A virtual ``controller(pause)`` is a physical one (``packet_in_ext.physical_controller``):
the physical switch sends its NXT_PACKET_IN2 with its continuation (its bridge UUID, its
physical actions after the pause, stack, table, ...). The endpoint relays the packet-in as
any other (virtual in_port, table, cookie and state) with a continuation of its own
(``seal``): the physical one with the switch it came from, the physical in_port and
pkt_mark the virtual packet-in does not show, and the virtual in_port it showed, under an
HMAC whose key the endpoint draws when it starts. A controller can neither forge one nor
send one to another switch; a resume whose continuation is missing, changed or not the
endpoint's gets ``NXR_STALE``, as Open vSwitch 3.1 answers a continuation of another bridge
or none (measured). Open vSwitch resumes a continuation any number of times, at any later
time (measured): the endpoint keeps nothing, so does it too.

NXT_RESUME (``physical_resume``): the controller's packet (changed or not) and metadata
go to that switch with its continuation; the metadata's virtual in_port becomes the
physical one, the flow-id mark the packet-in hid is put back. Not carried: a resume whose
in_port is not the packet-in's (also none: Open vSwitch then runs from port 0), since the
physical actions after the pause were translated for that in_port (a move reading it, an
output to IN_PORT, the port's home switch), or that sets pkt_mark where the virtual mark is
unused (refused, docs/endpoint.md); a pause in a PACKET_OUT, and on a backend whose switches do
not pause (the emulator's dp-core): refused (``pause_problem``).

State: the HMAC key (per endpoint). Cost: one HMAC per paused packet-in and per resume.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from typing import Iterable, NamedTuple

from tandem.backends.base import BackendError
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules.ir import FieldMatch, Match
from tandem.rules.ofprop import prop, props
from tandem.rules.ofwire_packet_in2 import NX_VENDOR_ID, NXT_RESUME, WirePacketIn2, decode_resume

RESUME_HEAD = struct.pack("!II", NX_VENDOR_ID, NXT_RESUME)
NXR_STALE = (0xFFFF, 35)  # (Nicira's experimenter error, as Open vSwitch 3.1 sends it in OpenFlow 1.3)
OFPBPC_BAD_LEN = (13, 3)  # (a property's length: OpenFlow 1.3's number, as Open vSwitch 3.1 sends it)
NXCPT_BRIDGE = 0x8000  # (Open vSwitch's first continuation property: the bridge's UUID)
_SEALED = 0xFE00  # the endpoint's own continuation property: MAC, then _HEAD, switch name, physical continuation
_HEAD = struct.Struct("!IIIBB")  # physical in_port, virtual in_port, physical pkt_mark, unresumable, switch name's length
_MAC_LEN = 16
_REFUSED = ("controller(pause) {where}: the endpoint relays a physical switch's continuation, and {why} "
            "(docs/endpoint.md)")


class Paused(NamedTuple):
    switch: str
    phys_in_port: int
    v_in_port: int
    phys_mark: int
    continuation: bytes
    unresumable: bool = False  # (its virtual rule has write_actions: Open vSwitch 3.1 refuses its resume, measured)


def pause_keys() -> tuple[bytes, bytes]:
    """An endpoint's HMAC key and the bridge id its continuations name (drawn once, at start)."""
    return os.urandom(32), os.urandom(16)


def _mac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()[:_MAC_LEN]


def seal(key: bytes, bridge: bytes, p: Paused) -> bytes:
    """The virtual continuation: laid out as Open vSwitch lays one (4 bytes of padding, then
    properties), the endpoint's ``bridge`` id first, then the sealed physical one."""
    name = p.switch.encode()
    body = _HEAD.pack(p.phys_in_port, p.v_in_port, p.phys_mark, p.unresumable, len(name)) + name + p.continuation
    return bytes(4) + prop(NXCPT_BRIDGE, bridge) + prop(_SEALED, _mac(key, bridge + body) + body)


def unseal(key: bytes, bridge: bytes, continuation: bytes) -> Paused | None:
    """The physical continuation a virtual one holds; None when it is not this endpoint's, intact;
    OFError (OFPBPC_BAD_LEN) when its properties cannot be read."""
    try:
        found = dict(props(continuation, 4, "continuation"))
        _padded(continuation, 4)
    except ValueError as e:  # (Open vSwitch 3.1 answers a continuation cut short so: measured)
        raise W.OFError(*OFPBPC_BAD_LEN, f"NXT_RESUME: {e}") from None
    sealed = found.get(_SEALED, b"")
    mac, body = sealed[:_MAC_LEN], sealed[_MAC_LEN:]
    if found.get(NXCPT_BRIDGE) != bridge or len(body) < _HEAD.size or not hmac.compare_digest(mac, _mac(key, bridge + body)):
        return None
    phys_in, v_in, mark, unresumable, n = _HEAD.unpack_from(body)
    name = body[_HEAD.size:_HEAD.size + n]
    return Paused(name.decode(), phys_in, v_in, mark, body[_HEAD.size + n:], bool(unresumable))


def _padded(body: bytes, off: int) -> None:
    """ValueError unless each property from ``off`` has its padding to 8 bytes (Open vSwitch pulls it)."""
    while off < len(body):
        (plen,) = struct.unpack_from("!H", body, off + 2)
        off += -(-plen // 8) * 8
        if off > len(body):
            raise ValueError(f"continuation: a property's padding runs {off - len(body)} bytes past its end")


def _mark_used(ep) -> bool:
    return getattr(ep.state, "mark_used", True)


def virtual_continuation(ep, switch: str, phys_in_port: int, v_in_port: int, fields: Iterable[tuple[str, int]],
                         continuation: bytes, unresumable: bool = False) -> bytes:
    """The continuation a virtual packet-in carries for a physical one's ``continuation``."""
    mark = 0 if _mark_used(ep) else dict(fields).get("pkt_mark", 0)  # (hidden from the controller: translate.py)
    return seal(ep.pause_key, ep.pause_bridge, Paused(switch, phys_in_port, v_in_port, mark, bytes(continuation),
                                                      unresumable))


def physical_resume(ep, body: bytes) -> tuple[str, WirePacketIn2]:
    """An NXT_RESUME's (``body``: after the OpenFlow header) switch and physical resume. OFError."""
    try:
        list(props(body, 8, "NXT_RESUME"))
    except ValueError as e:
        raise W.OFError(*OFPBPC_BAD_LEN, str(e)) from None
    pi = decode_resume(body)
    if pi.total_len < len(pi.data):  # (as Open vSwitch 3.1 answers it: measured)
        raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN, f"NXT_RESUME: full length {pi.total_len} is less than "
                        f"the packet's {len(pi.data)} bytes")
    paused = unseal(ep.pause_key, ep.pause_bridge, pi.continuation)
    if paused is None:
        raise W.OFError(*NXR_STALE, "NXT_RESUME: its continuation is missing or not one this switch sent")
    if paused.unresumable:  # (Open vSwitch 3.1 cannot read back its own continuation of such a rule: measured)
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_LEN, "NXT_RESUME of a pause in a rule with write_actions: "
                        "Open vSwitch 3.1 refuses it so (its continuation holds the instruction, which it cannot read back)")
    in_port = pi.match.get("in_port")
    fields = [("in_port", FieldMatch(_physical_in_port(paused, None if in_port is None else in_port.value)))]
    for k, fm in pi.match:
        if k == "in_port":
            continue
        elif k == "pkt_mark" and not _mark_used(ep):
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM, "NXT_RESUME with pkt_mark set: no virtual rule or "
                            "group uses the mark, whose physical bits carry the flow id (docs/endpoint.md)")
        fields.append((k, fm))
    if paused.phys_mark:
        fields.append(("pkt_mark", FieldMatch(paused.phys_mark)))
    cont = WirePacketIn2(pi.data, len(pi.data), 0, 0xFFFF_FFFF_FFFF_FFFF, 1, Match(tuple(fields)),
                         continuation=paused.continuation)
    return paused.switch, cont


def _physical_in_port(paused: Paused, v: int | None) -> int:
    if v != paused.v_in_port:
        raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_PORT, f"NXT_RESUME with in_port {v}: the physical actions after "
                        f"the pause were translated for the packet's own in_port {paused.v_in_port}, which its metadata "
                        "must keep (docs/endpoint.md)")
    return paused.phys_in_port


async def on_resume(session, body: bytes) -> None:
    """A controller's NXT_RESUME: sent to the physical switch that paused; its error relayed."""
    ep = session.ep
    switch, pi = physical_resume(ep, body)
    try:
        await ep.backend.resume(switch, pi)
    except BackendError as e:
        etype, code = e.of_error or NXR_STALE
        raise W.OFError(etype, code, str(e)) from None


def pause_problem(ep, actions: Iterable[ir.Action], packet_out: bool) -> str | None:
    """Why ``actions`` (nested ones too) may not hold a ``controller(pause)`` here, or None."""
    if not any(type(a) is ir.Controller and a.pause for a in _walk(actions)):
        return None
    if packet_out:
        return _REFUSED.format(where="in a PACKET_OUT", why="a PACKET_OUT's actions are the endpoint's to run")
    if not getattr(ep.backend, "runs_pause", True):
        return _REFUSED.format(where=f"on the {ep.backend.name} backend",
                               why="its switches (dp-core) keep no continuation")
    return None


def _walk(actions: Iterable[ir.Action]) -> Iterable[ir.Action]:
    for a in actions:
        yield a
        inner = getattr(a, "actions", None)
        if isinstance(inner, tuple):
            yield from _walk(inner)


__all__ = ["NXR_STALE", "RESUME_HEAD", "Paused", "on_resume", "pause_keys", "pause_problem", "physical_resume", "seal", "unseal",
           "virtual_continuation"]
