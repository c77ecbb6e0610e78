"""Open vSwitch's NXAST_CLONE on the wire <-> IR ``Clone``.

``nx_action_clone``: the Nicira experimenter header (type 0xffff, length,
vendor 0x00002320, subtype 42), six zero bytes, then the nested actions as an
OpenFlow 1.3 action list (each a multiple of 8 bytes, so no padding follows).
Instructions are refused inside, as Open vSwitch refuses them
(``OFPBIC_UNSUP_INST``: a Nicira write_metadata is one). Used by ``ofwire``
(which passes its own list coder in, so this module does not import it). Pure.
"""

from __future__ import annotations

import struct
from typing import Callable

from tandem.rules.ofwire_nx import NxError
from tandem.rules.ir import Clone, RuleError, WriteMetadata

NXAST_CLONE = 42
_NX_VENDOR_ID = 0x0000_2320
_BAD_ACTION, _BAD_INSTRUCTION = 2, 3
_BAD_TYPE, _BAD_LEN, _UNSUP_INST = 0, 1, 1


def is_clone(body: bytes) -> bool:
    """Is this experimenter action (its whole bytes) Nicira's clone?"""
    return len(body) >= 10 and struct.unpack_from("!IH", body, 4) == (_NX_VENDOR_ID, NXAST_CLONE)


def encode_clone(a: Clone, encode_actions: Callable) -> bytes:
    nested = encode_actions(a.actions)
    return struct.pack("!HHIH6x", 0xFFFF, 16 + len(nested), _NX_VENDOR_ID, NXAST_CLONE) + nested


def decode_clone(body: bytes, decode_actions: Callable) -> Clone:
    """``body``: the whole action; ``decode_actions(bytes)``: ofwire's list decoder
    (which gives a Nicira write_metadata as the instruction it is)."""
    if len(body) < 16:
        raise NxError(_BAD_ACTION, _BAD_LEN, f"clone of {len(body)} bytes, at least 16")
    nested = decode_actions(body[16:])
    if any(isinstance(a, WriteMetadata) for a in nested):
        raise NxError(_BAD_INSTRUCTION, _UNSUP_INST, "write_metadata is an instruction, not allowed inside clone")
    try:
        return Clone(tuple(nested))
    except RuleError as e:
        raise NxError(_BAD_ACTION, _BAD_TYPE, str(e)) from None
