"""Open vSwitch's ``controller(reason=…,max_len=…,id=…,userdata=…)`` action:
ovs-ofctl text and the wire (NXAST_CONTROLLER, NXAST_CONTROLLER2 with its
properties), as Open vSwitch 3.1 reads, prints and encodes it
(``lib/ofp-actions.c``), ``pause`` included (NXAC2PT_PAUSE: printed after userdata, before
meter_id, as ovs-ofctl 3.1 prints it). Refused: a reason above 5 in text (ovs-ofctl names none and reads
none back: it comes on the wire only) and a ``meter_id`` no meter can have. Pure.
"""

from __future__ import annotations

import struct

from . import fields as F
from .ir import CONTROLLER_REASONS, OFPCML_NO_BUFFER, OFPP_CONTROLLER, Controller, Output, RuleError
from .ofctl_lex import Loc, OfctlSyntaxError, Token, split_top, suggest
from .ofprop import prop, props

NXAST_CONTROLLER, NXAST_CONTROLLER2 = 20, 37
# NXAC2PT_* properties of NXAST_CONTROLLER2
PROP_MAX_LEN, PROP_CONTROLLER_ID, PROP_REASON, PROP_USERDATA, PROP_PAUSE, PROP_METER_ID = 0, 1, 2, 3, 4, 5
NX_CTLR_NO_METER = 0  # (Open vSwitch 3.1's "no meter": meter_id=0 reads as none, 0xffffffff is kept)
_KEYS = ("max_len", "reason", "id", "userdata", "pause", "meter_id")

# OpenFlow error codes (ofwire's numbers)
_BAD_ACTION, _BAD_LEN, _BAD_EXP_TYPE, _BAD_ARGUMENT = 2, 1, 3, 5


class ControllerError(Exception):
    def __init__(self, etype: int, code: int, message: str) -> None:
        super().__init__(message)
        self.etype, self.code = etype, code


TEXT_REASONS = ("controller reason {}: reasons above 5 (Open vSwitch's explicit and implicit table miss, "
                "and unnamed ones) come on the wire only; ovs-ofctl names none of them and reads none back")


# ------------------------------------------------------------------ text

def parse_controller(tok: Token, loc: Loc) -> Output | Controller:
    """``controller(k=v,...)``; as ovs-ofctl, the default reason and id with no userdata is an output to CONTROLLER."""
    i = tok.text.find("(")
    if i < 0 or not tok.text.endswith(")"):
        raise loc.error(f"{tok.text} needs (...)", tok.column, tok.text)
    args = {"max_len": OFPCML_NO_BUFFER, "reason": 1, "controller_id": 0, "userdata": b"", "meter_id": None,
            "pause": False}
    for kv in split_top(tok.text[i + 1:-1], tok.column + i + 1, loc):
        key, value = kv.split("=")
        k = key.text.strip()
        if k == "pause" and value is None:
            args["pause"] = True
            continue
        if k not in _KEYS or value is None:
            raise loc.error(f"controller: unknown argument {kv.text!r}{suggest(k, list(_KEYS))}", kv.column, kv.text)
        v = value.text.strip()
        try:
            if k == "reason":
                if not v or (v.isdigit() and int(v) >= len(CONTROLLER_REASONS)):  # ("reason=": how ovs-ofctl prints 6, 7)
                    raise loc.error(TEXT_REASONS.format(v or "6 or 7 (reason=)"), value.column, v)
                if v not in CONTROLLER_REASONS:
                    raise ValueError(f"{v!r} is not one of {', '.join(CONTROLLER_REASONS)}")
                args["reason"] = CONTROLLER_REASONS.index(v)
            elif k == "userdata":
                args["userdata"] = parse_hex_bytes(v)
            elif k == "meter_id":
                m = F.parse_int(v, 32)
                args["meter_id"] = None if m == NX_CTLR_NO_METER else m
            else:
                args["controller_id" if k == "id" else k] = F.parse_int(v, 16)
        except OfctlSyntaxError:
            raise
        except ValueError as e:
            raise loc.error(f"controller {k}: {e}", value.column, v) from None
    if args["reason"] == 1 and args["controller_id"] == 0 and not args["userdata"] and args["meter_id"] is None \
            and not args["pause"]:
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
    if a.reason == 1 and a.controller_id == 0 and not a.userdata and a.meter_id is None and not a.pause:
        return f"CONTROLLER:{a.max_len}"
    parts = []
    if a.reason != 1:  # (above 5 as ovs-ofctl prints them: 6 and 7 unnamed, which it cannot read back)
        parts.append(f"reason={_reason_text(a.reason)}")
    if a.max_len != OFPCML_NO_BUFFER:
        parts.append(f"max_len={a.max_len}")
    if a.controller_id:
        parts.append(f"id={a.controller_id}")
    if a.userdata:
        parts.append("userdata=" + ".".join(f"{b:02x}" for b in a.userdata))
    if a.pause:
        parts.append("pause")
    if a.meter_id is not None:
        parts.append(f"meter_id={a.meter_id}")
    return f"controller({','.join(parts)})"


def _reason_text(reason: int) -> str:
    return CONTROLLER_REASONS[reason] if reason < len(CONTROLLER_REASONS) else "" if reason < 8 else str(reason)


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
        if a.pause:
            raw += prop(PROP_PAUSE, b"")
        if a.meter_id is not None:
            raw += prop(PROP_METER_ID, struct.pack("!I", a.meter_id))
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
            args["pause"] = True
        elif ptype == PROP_METER_ID:
            m = struct.unpack("!I", payload)[0]
            args["meter_id"] = None if m == NX_CTLR_NO_METER else m
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
