"""Open vSwitch's ``learn`` on the wire: NXAST_LEARN, and NXAST_LEARN2 (the same with
``limit`` and ``result_dst``), as Open vSwitch 3.1 encodes them (LEARN2 only when
one of those is set).

Layout (struct nx_action_learn, 32 bytes): experimenter header, subtype, idle and
hard timeouts, priority, cookie, flags (NX_LEARN_F_*), table, pad, fin idle and
fin hard timeouts; LEARN2 adds limit, result_dst's offset, 2 pad bytes and (with
NX_LEARN_F_WRITE_RESULT) result_dst's field header. Then the flow mod specs, each
a 16-bit header (source type bit 13: immediate; destination bits 11-12: match,
load, output; n_bits in the low 11 bits), the source (a field header and 16-bit
offset, or the immediate value in 2-byte units) and the destination (header and
offset; none for output); a zero header or the padding to 8 bytes ends them.
Field headers are the ones ``move`` uses (nxm.OPERANDS: NXM where the field has
one). Pure; errors are ``LearnError`` with OpenFlow's (type, code).
"""

from __future__ import annotations

import struct
from typing import Callable

from .ir import LEARN_LOAD, LEARN_MATCH, LEARN_OUTPUT, Learn, LearnSpec, RuleError, Subfield
from . import nxm as NXM

NXAST_LEARN, NXAST_LEARN2 = 16, 45
F_SEND_FLOW_REM, F_DELETE_LEARNED, F_WRITE_RESULT = 1, 2, 4
_SRC_IMMEDIATE = 1 << 13
_DST = {LEARN_MATCH: 0, LEARN_LOAD: 1 << 11, LEARN_OUTPUT: 2 << 11}
_KIND = {v: k for k, v in _DST.items()}
_HEAD = struct.Struct("!HHIHHHHQHBxHH")  # through fin_hard_timeout: 32 bytes
_HEAD2 = struct.Struct("!IH2x")

_BAD_ACTION, _BAD_LEN, _BAD_ARGUMENT = 2, 1, 5


class LearnError(ValueError):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.etype, self.code = _BAD_ACTION, code


def _field(sf: Subfield) -> bytes:
    o = NXM.OPERANDS[sf.field]
    return struct.pack("!IH", o.cls << 16 | o.number << 9 | o.width, sf.ofs)


def _result_header(field: str) -> bytes:
    """result_dst's field header: 4 bytes, an NSH field's experimenter OXM 8 (its id follows;
    Open vSwitch 3.1 sends it so in FLOW_STATS, tests/endpoint/test_nx_flow_stats_vs_ovs.py)."""
    o = NXM.OPERANDS[field]
    if o.experimenter is not None:
        return struct.pack("!II", o.cls << 16 | o.number << 9 | (4 + o.width), o.experimenter)
    return _field(Subfield(field, 0, 1))[:4]


def encode_learn(a: Learn) -> bytes:
    flags = (F_SEND_FLOW_REM * a.send_flow_rem) | (F_DELETE_LEARNED * a.delete_learned)
    two = bool(a.limit) or a.result_dst is not None
    if a.result_dst is not None:
        flags |= F_WRITE_RESULT
    body = b""
    if two:
        body += _HEAD2.pack(a.limit, a.result_dst.ofs if a.result_dst is not None else 0)
        if a.result_dst is not None:
            body += _result_header(a.result_dst.field)
    for s in a.specs:
        n = s.n_bits
        body += struct.pack("!H", (0 if s.src is not None else _SRC_IMMEDIATE) | _DST[s.kind] | n)
        body += _field(s.src) if s.src is not None else s.value.to_bytes((n + 15) // 16 * 2, "big")
        if s.dst is not None:
            body += _field(s.dst)
    raw = _HEAD.pack(0xFFFF, 0, 0x2320, NXAST_LEARN2 if two else NXAST_LEARN, a.idle_timeout, a.hard_timeout,
                     a.priority, a.cookie, flags, a.table, a.fin_idle_timeout, a.fin_hard_timeout) + body
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


Operand = Callable[[bytes, int, str], tuple[str, int, int]]


def _subfield(body: bytes, off: int, n_bits: int, what: str, operand: Operand) -> tuple[Subfield, int]:
    field, bits, used = operand(body, off, what)
    if len(body) < off + used + 2:
        raise LearnError(_BAD_LEN, f"learn: {what} cut short")
    (ofs,) = struct.unpack_from("!H", body, off + used)
    if n_bits < 1 or ofs + n_bits > bits:
        raise LearnError(_BAD_ARGUMENT, f"learn: {what} {field}[{ofs}..{ofs + n_bits - 1}] does not fit {bits} bits")
    return Subfield(field, ofs, n_bits), off + used + 2


def decode_learn(body: bytes, subtype: int, operand: Operand) -> Learn:
    """A LEARN or LEARN2 action (its whole bytes); ``operand`` is ofwire_nx's field
    header reader (field, usable bits, bytes used)."""
    if len(body) < _HEAD.size:
        raise LearnError(_BAD_LEN, f"learn action of {len(body)} bytes, at least {_HEAD.size}")
    (_, _, _, _, idle, hard, priority, cookie, flags, table, fin_idle, fin_hard) = _HEAD.unpack_from(body, 0)
    if flags & ~(F_SEND_FLOW_REM | F_DELETE_LEARNED | (F_WRITE_RESULT if subtype == NXAST_LEARN2 else 0)):
        raise LearnError(_BAD_ARGUMENT, f"learn: unknown flags {flags:#x}")
    if table == 0xFF:
        raise LearnError(_BAD_ARGUMENT, "learn: table id 255 not valid for learn")
    off, limit, result_dst = _HEAD.size, 0, None
    if subtype == NXAST_LEARN2:
        if len(body) < off + _HEAD2.size:
            raise LearnError(_BAD_LEN, "learn2 action cut short")
        limit, rofs = _HEAD2.unpack_from(body, off)
        off += _HEAD2.size
        if flags & F_WRITE_RESULT:
            field, bits, used = operand(body, off, "learn result_dst")
            if rofs >= bits:
                raise LearnError(_BAD_ARGUMENT, f"learn: result_dst {field}[{rofs}] does not fit {bits} bits")
            result_dst, off = Subfield(field, rofs, 1), off + used
    specs = []
    while len(body) - off >= 2:
        (h,) = struct.unpack_from("!H", body, off)
        if h == 0:
            break
        off += 2
        n_bits, kind = h & 0x7FF, _KIND.get(h & (3 << 11))
        if kind is None or h >> 14:
            raise LearnError(_BAD_ARGUMENT, f"learn: bad spec header {h:#06x}")
        src = dst = None
        value = 0
        if h & _SRC_IMMEDIATE:
            if kind == LEARN_OUTPUT:
                raise LearnError(_BAD_ARGUMENT, "learn: an output spec takes a field, not an immediate value")
            size = (n_bits + 15) // 16 * 2
            if len(body) < off + size:
                raise LearnError(_BAD_LEN, "learn: immediate value cut short")
            value = int.from_bytes(body[off:off + size], "big")
            off += size
        else:
            src, off = _subfield(body, off, n_bits, "source", operand)
        if kind != LEARN_OUTPUT:
            dst, off = _subfield(body, off, n_bits, "destination", operand)
        try:
            specs.append(LearnSpec(kind, src, value, dst))
        except RuleError as e:
            raise LearnError(_BAD_ARGUMENT, str(e)) from None
    if any(body[off:]):
        raise LearnError(_BAD_ARGUMENT, "learn: nonzero bytes after the last spec")
    try:
        return Learn(tuple(specs), table, priority, idle, hard, fin_idle, fin_hard, cookie,
                     bool(flags & F_SEND_FLOW_REM), bool(flags & F_DELETE_LEARNED), limit, result_dst)
    except RuleError as e:
        raise LearnError(_BAD_ARGUMENT, str(e)) from None
