"""Open vSwitch's ``controller(reason=…,max_len=…,id=…,userdata=…)`` action:
ovs-ofctl text and the wire (NXAST_CONTROLLER, NXAST_CONTROLLER2 with its
properties), as Open vSwitch 3.1 reads, prints and encodes it
(``lib/ofp-actions.c``). ``pause`` and ``meter_id`` are refused (docs/endpoint.md,
"Refused by OneSwitch only"). Pure.
"""

from __future__ import annotations

import struct

from . import fields as F
from .ir import CONTROLLER_REASONS, OFPCML_NO_BUFFER, OFPP_CONTROLLER, Controller, Output, RuleError
from .ofctl_lex import Loc, Token, split_top, suggest
from .ofprop import prop, props

NXAST_CONTROLLER, NXAST_CONTROLLER2 = 20, 37
# NXAC2PT_* properties of NXAST_CONTROLLER2
PROP_MAX_LEN, PROP_CONTROLLER_ID, PROP_REASON, PROP_USERDATA, PROP_PAUSE, PROP_METER_ID = 0, 1, 2, 3, 4, 5
NX_CTLR_NO_METER = 0xFFFF_FFFF
_KEYS = ("max_len", "reason", "id", "userdata", "pause", "meter_id")

# OpenFlow error codes (ofwire's numbers)
_BAD_ACTION, _BAD_LEN, _BAD_EXP_TYPE, _BAD_ARGUMENT = 2, 1, 3, 5


class ControllerError(Exception):
    def __init__(self, etype: int, code: int, message: str) -> None:
        super().__init__(message)
        self.etype, self.code = etype, code


REFUSED_PAUSE = ("controller(pause) is not supported by OneSwitch: a continuation is the physical switch's own "
                 "state (its bridge, its physical actions), which a controller resuming it would see")
REFUSED_METER = ("controller(meter_id=…) is not supported by OneSwitch: the packet-in meter would be a physical "
                 "switch's meter, not the virtual one")


# ------------------------------------------------------------------ text

def parse_controller(tok: Token, loc: Loc) -> Output | Controller:
    """``controller(k=v,...)``; as ovs-ofctl, the default reason and id with no userdata is an output to CONTROLLER."""
    i = tok.text.find("(")
    if i < 0 or not tok.text.endswith(")"):
        raise loc.error(f"{tok.text} needs (...)", tok.column, tok.text)
    args = {"max_len": OFPCML_NO_BUFFER, "reason": 1, "controller_id": 0, "userdata": b""}
    for kv in split_top(tok.text[i + 1:-1], tok.column + i + 1, loc):
        key, value = kv.split("=")
        k = key.text.strip()
        if k == "pause" and value is None:
            raise loc.error(REFUSED_PAUSE, kv.column, kv.text)
        if k not in _KEYS or value is None:
            raise loc.error(f"controller: unknown argument {kv.text!r}{suggest(k, list(_KEYS))}", kv.column, kv.text)
        v = value.text.strip()
        try:
            if k == "reason":
                if v not in CONTROLLER_REASONS:
                    raise ValueError(f"{v!r} is not one of {', '.join(CONTROLLER_REASONS)}")
                args["reason"] = CONTROLLER_REASONS.index(v)
            elif k == "userdata":
                args["userdata"] = parse_hex_bytes(v)
            elif k == "meter_id":
                if F.parse_int(v, 32) != NX_CTLR_NO_METER:
                    raise loc.error(REFUSED_METER, kv.column, kv.text)
            else:
                args["controller_id" if k == "id" else k] = F.parse_int(v, 16)
        except ValueError as e:
            raise loc.error(f"controller {k}: {e}", value.column, v) from None
    if args["reason"] == 1 and args["controller_id"] == 0 and not args["userdata"]:
        return Output(OFPP_CONTROLLER, args["max_len"])  # type: ignore[arg-type]
    try:
        return Controller(**args)  # type: ignore[arg-type]
    except RuleError as e:
        raise loc.error(str(e), tok.column, tok.text) from None


def parse_hex_bytes(text: str) -> bytes:
    """``01.02.ab`` or ``0102ab`` (as ovs-ofctl reads userdata)."""
    digits = text.replace(".", "")
    if len(digits) % 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise ValueError(f"{text!r}: expected hex bytes such as 01.02.ab")
    return bytes.fromhex(digits)


def format_controller(a: Controller) -> str:
    """As ovs-ofctl prints it (``CONTROLLER:N`` when nothing but max_len is set)."""
    if a.reason == 1 and a.controller_id == 0 and not a.userdata:
        return f"CONTROLLER:{a.max_len}"
    parts = []
    if a.reason != 1:
        parts.append(f"reason={CONTROLLER_REASONS[a.reason]}")
    if a.max_len != OFPCML_NO_BUFFER:
        parts.append(f"max_len={a.max_len}")
    if a.controller_id:
        parts.append(f"id={a.controller_id}")
    if a.userdata:
        parts.append("userdata=" + ".".join(f"{b:02x}" for b in a.userdata))
    return f"controller({','.join(parts)})"


# ------------------------------------------------------------------ wire

def _head(subtype: int) -> bytes:
    return struct.pack("!HHIH", 0xFFFF, 0, 0x2320, subtype)


def encode_controller(a: Controller) -> bytes:
    if a.subtype == NXAST_CONTROLLER:
        raw = _head(NXAST_CONTROLLER) + struct.pack("!HHBx", a.max_len, a.controller_id, a.reason)
    else:
        raw = _head(NXAST_CONTROLLER2) + bytes(6)
        if a.max_len != OFPCML_NO_BUFFER:
            raw += prop(PROP_MAX_LEN, struct.pack("!H2x", a.max_len))  # (OVS: a u16 property holds 4 bytes)
        if a.controller_id:
            raw += prop(PROP_CONTROLLER_ID, struct.pack("!H2x", a.controller_id))
        if a.reason != 1:
            raw += prop(PROP_REASON, struct.pack("!B", a.reason))
        if a.userdata:
            raw += prop(PROP_USERDATA, a.userdata)
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


def decode_controller(body: bytes, subtype: int) -> Controller:
    """One NXAST_CONTROLLER / CONTROLLER2 action (its whole bytes). Raises ControllerError."""
    if subtype == NXAST_CONTROLLER:
        if len(body) != 16:
            raise ControllerError(_BAD_ACTION, _BAD_LEN, f"controller of {len(body)} bytes, expected 16")
        max_len, cid, reason = struct.unpack_from("!HHB", body, 10)
        return _make(max_len=max_len, controller_id=cid, reason=reason, subtype=subtype)
    args: dict = {"subtype": subtype}
    try:
        found = list(props(body, 16, "controller2"))
    except ValueError as e:
        raise ControllerError(_BAD_ACTION, _BAD_LEN, str(e)) from None
    for ptype, payload in found:
        sizes = {PROP_MAX_LEN: 4, PROP_CONTROLLER_ID: 4, PROP_REASON: 1, PROP_PAUSE: 0, PROP_METER_ID: 4}
        if ptype in sizes and len(payload) != sizes[ptype]:
            raise ControllerError(_BAD_ACTION, _BAD_LEN, f"controller2: property {ptype} of {len(payload)} bytes")
        if ptype == PROP_MAX_LEN:
            args["max_len"] = struct.unpack_from("!H", payload)[0]
        elif ptype == PROP_CONTROLLER_ID:
            args["controller_id"] = struct.unpack_from("!H", payload)[0]
        elif ptype == PROP_REASON:
            args["reason"] = payload[0]
        elif ptype == PROP_USERDATA:
            args["userdata"] = bytes(payload)
        elif ptype == PROP_PAUSE:
            raise ControllerError(_BAD_ACTION, _BAD_EXP_TYPE, REFUSED_PAUSE)
        elif ptype == PROP_METER_ID:
            if struct.unpack("!I", payload)[0] != NX_CTLR_NO_METER:
                raise ControllerError(_BAD_ACTION, _BAD_EXP_TYPE, REFUSED_METER)
        else:
            raise ControllerError(_BAD_ACTION, _BAD_ARGUMENT, f"controller2: unknown property {ptype}")
    return _make(**args)


def _make(**args) -> Controller:
    try:
        return Controller(**args)
    except RuleError as e:
        raise ControllerError(_BAD_ACTION, _BAD_ARGUMENT, str(e)) from None


__all__ = ["ControllerError", "NXAST_CONTROLLER", "NXAST_CONTROLLER2", "decode_controller", "encode_controller",
           "format_controller", "parse_controller", "parse_hex_bytes"]
