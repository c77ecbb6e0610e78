"""OpenFlow 1.3 wire codec of Open vSwitch's connection-tracking actions:
NXAST_CT (``struct nx_action_conntrack``, 24 bytes + nested actions) and
NXAST_CT_CLEAR (16 bytes), as Open vSwitch 3.1 encodes them
(``lib/ofp-actions.c``). The nested actions of ``ct(exec(...))`` are set_fields
of ct_mark / ct_label: OFPAT_SET_FIELD with the NXM header when whole,
NXAST_REG_LOAD2 with a masked one otherwise (OVS also reads NXAST_REG_LOAD).
``nat`` (NXAST_NAT, the first nested action: ``ct_nat.py``) is decoded and encoded;
``alg`` is the ALG's port (21 ftp, 69 tftp; any other number is kept as the text
``"N"``, for which Open vSwitch runs no ALG). Used by ``ofwire_nx``. Pure.
"""

from __future__ import annotations

import struct

from tandem.rules import nxm as NXM
from tandem.rules.ct_nat import NXAST_NAT, decode_nat, encode_nat
from tandem.rules.ir import CT_ALGS, CT_EXEC_FIELDS, FIELDS, Ct, CtClear, RuleError, Subfield, ct_alg_port

NXAST_CT, NXAST_CT_CLEAR = 35, 43
NX_CT_F_COMMIT, NX_CT_F_FORCE = 1, 2
NX_CT_RECIRC_NONE = 0xFF
_NX_VENDOR_ID = 0x0000_2320
_OFPAT_SET_FIELD, _OFPAT_EXPERIMENTER = 25, 0xFFFF
_NXAST_REG_LOAD, _NXAST_REG_LOAD2 = 7, 33
# OpenFlow error codes (ofwire's numbers)
_BAD_ACTION, _BAD_LEN, _BAD_EXP_TYPE, _BAD_ARGUMENT, _BAD_SET_LEN = 2, 1, 3, 5, 14


class CtError(Exception):
    def __init__(self, etype: int, code: int, message: str) -> None:
        super().__init__(message)
        self.etype, self.code = etype, code


def _header(field: str, masked: bool = False) -> int:
    o = NXM.OPERANDS[field]
    return o.cls << 16 | o.number << 9 | int(masked) << 8 | o.width * (2 if masked else 1)


def _pad(raw: bytes) -> bytes:
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


def _exec_action(field: str, value: int, mask: int | None) -> bytes:
    w = NXM.OPERANDS[field].width
    if mask is None:
        return _pad(struct.pack("!HHI", _OFPAT_SET_FIELD, 0, _header(field)) + value.to_bytes(w, "big"))
    return _pad(struct.pack("!HHIHI", _OFPAT_EXPERIMENTER, 0, _NX_VENDOR_ID, _NXAST_REG_LOAD2, _header(field, True))
                + value.to_bytes(w, "big") + mask.to_bytes(w, "big"))


def encode_ct(a: Ct | CtClear) -> bytes:
    if isinstance(a, CtClear):
        return struct.pack("!HHIH6x", _OFPAT_EXPERIMENTER, 16, _NX_VENDOR_ID, NXAST_CT_CLEAR)
    flags = (NX_CT_F_COMMIT if a.commit else 0) | (NX_CT_F_FORCE if a.force else 0)
    if a.zone_src is not None:
        zone_src = _header(a.zone_src.field)
        zone = a.zone_src.ofs << 6 | (a.zone_src.n_bits - 1)
    else:
        zone_src, zone = 0, a.zone
    nested = (encode_nat(a.nat) if a.nat is not None else b"") + b"".join(_exec_action(*e) for e in a.exec)
    head = struct.pack("!HHIHHIHB3xH", _OFPAT_EXPERIMENTER, 24 + len(nested), _NX_VENDOR_ID, NXAST_CT, flags,
                       zone_src, zone, NX_CT_RECIRC_NONE if a.table is None else a.table, ct_alg_port(a.alg))
    return head + nested


def decode_ct(body: bytes, subtype: int, operand) -> Ct | CtClear:
    """NXAST_CT / NXAST_CT_CLEAR (``body``: the whole action). ``operand(body, off,
    what)`` is ofwire_nx's reader of a field header -> (field, usable bits, size).
    Raises CtError."""
    if subtype == NXAST_CT_CLEAR:
        if len(body) != 16:
            raise CtError(_BAD_ACTION, _BAD_LEN, f"ct_clear of {len(body)} bytes, expected 16")
        return CtClear()
    if len(body) < 24:
        raise CtError(_BAD_ACTION, _BAD_LEN, f"ct of {len(body)} bytes, expected at least 24")
    flags, zone_src, zone, table, alg = struct.unpack_from("!HIHB3xH", body, 10)
    alg_name = next((n for n, (port, _) in CT_ALGS.items() if port == alg), str(alg))  # (another number: no ALG)
    if flags & ~(NX_CT_F_COMMIT | NX_CT_F_FORCE):
        raise CtError(_BAD_ACTION, _BAD_ARGUMENT, f"ct: unknown flags {flags:#x}")
    src = None
    if zone_src:
        field, bits, _ = operand(body, 12, "ct zone")
        ofs, n_bits = zone >> 6, (zone & 0x3F) + 1
        if ofs + n_bits > bits or n_bits != 16:
            raise CtError(_BAD_ACTION, _BAD_SET_LEN, f"ct zone {field}[{ofs}..{ofs + n_bits - 1}]: needs 16 bits of the field")
        src, zone = Subfield(field, ofs, n_bits), 0
    nat, rest = _decode_first_nat(body[24:])
    execs = _decode_exec(rest)
    try:
        return Ct(bool(flags & NX_CT_F_COMMIT), bool(flags & NX_CT_F_FORCE), zone, src,
                  None if table == NX_CT_RECIRC_NONE else table, tuple(execs), nat, alg_name)
    except RuleError as e:
        raise CtError(_BAD_ACTION, _BAD_ARGUMENT, str(e)) from None


def _decode_first_nat(buf: bytes):
    """(the CtNat of a leading NXAST_NAT or None, the nested actions after it)."""
    if len(buf) < 16:
        return None, buf
    atype, alen, vendor, subtype = struct.unpack_from("!HHIH", buf)
    if (atype, vendor, subtype) == (_OFPAT_EXPERIMENTER, _NX_VENDOR_ID, NXAST_NAT):
        if alen < 16 or alen % 8 or alen > len(buf):
            raise CtError(_BAD_ACTION, _BAD_LEN, f"ct nat: action of bad length {alen}")
        try:
            return decode_nat(buf[:alen]), buf[alen:]
        except RuleError as e:
            raise CtError(_BAD_ACTION, _BAD_ARGUMENT, str(e)) from None
    return None, buf


_BY_HEADER = {(NXM.OPERANDS[f].cls, NXM.OPERANDS[f].number): f for f in CT_EXEC_FIELDS}


def _decode_exec(buf: bytes) -> list[tuple[str, int, int | None]]:
    out = []
    off = 0
    while off < len(buf):
        if len(buf) - off < 8:
            raise CtError(_BAD_ACTION, _BAD_LEN, "ct exec: action cut short")
        atype, alen = struct.unpack_from("!HH", buf, off)
        if alen < 8 or alen % 8 or off + alen > len(buf):
            raise CtError(_BAD_ACTION, _BAD_LEN, f"ct exec: action of bad length {alen}")
        a = buf[off:off + alen]
        off += alen
        if atype == _OFPAT_SET_FIELD:
            out.append(_entry(a, 4, masked_ok=False))
        elif atype == _OFPAT_EXPERIMENTER and alen >= 16 and struct.unpack_from("!IH", a, 4) == (_NX_VENDOR_ID, _NXAST_REG_LOAD2):
            out.append(_entry(a, 10, masked_ok=True))
        elif atype == _OFPAT_EXPERIMENTER and alen == 24 and struct.unpack_from("!IH", a, 4) == (_NX_VENDOR_ID, _NXAST_REG_LOAD):
            ofs_nbits, h, value = struct.unpack_from("!HIQ", a, 10)
            field = _field(h)
            ofs, n_bits = ofs_nbits >> 6, (ofs_nbits & 0x3F) + 1
            if ofs + n_bits > FIELDS[field].bits or value >> n_bits:
                raise CtError(_BAD_ACTION, _BAD_SET_LEN, f"ct exec load: {field}[{ofs}..{ofs + n_bits - 1}]")
            m = ((1 << n_bits) - 1) << ofs
            out.append((field, value << ofs, None if m == (1 << FIELDS[field].bits) - 1 else m))
        elif atype == _OFPAT_EXPERIMENTER and alen >= 10 and struct.unpack_from("!IH", a, 4) == (_NX_VENDOR_ID, NXAST_NAT):
            raise CtError(_BAD_ACTION, _BAD_ARGUMENT, "ct: nat must be the first nested action")
        else:
            raise CtError(_BAD_ACTION, _BAD_ARGUMENT, f"ct exec: action type {atype} (only set_field of ct_mark / ct_label)")
    return out


def _field(h: int) -> str:
    field = _BY_HEADER.get((h >> 16, (h >> 9) & 0x7F))
    if field is None:
        raise CtError(_BAD_ACTION, _BAD_ARGUMENT, f"ct action doesn't support nested modification of field header {h:#x}")
    return field


def _entry(a: bytes, off: int, masked_ok: bool) -> tuple[str, int, int | None]:
    if len(a) < off + 4:
        raise CtError(_BAD_ACTION, _BAD_SET_LEN, "ct exec: set_field cut short")
    (h,) = struct.unpack_from("!I", a, off)
    field = _field(h)
    w = NXM.OPERANDS[field].width
    has_mask = bool(h >> 8 & 1)
    if (h & 0xFF) != w * (2 if has_mask else 1) or len(a) < off + 4 + (h & 0xFF) or (has_mask and not masked_ok):
        raise CtError(_BAD_ACTION, _BAD_SET_LEN, f"ct exec: set_field {field}: bad length")
    value = int.from_bytes(a[off + 4:off + 4 + w], "big")
    mask = int.from_bytes(a[off + 4 + w:off + 4 + 2 * w], "big") if has_mask else None
    if mask is not None:
        value &= mask
        if mask == (1 << FIELDS[field].bits) - 1:
            mask = None
    return field, value, mask
