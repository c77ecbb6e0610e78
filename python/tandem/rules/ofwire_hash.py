"""OpenFlow wire codec of Open vSwitch's hash-selection actions, as Open vSwitch
3.1 encodes and checks them (``lib/ofp-actions.c``): NXAST_MULTIPATH (subtype 10,
32 bytes: fields, basis, algorithm, max_link, arg, ofs_nbits, destination
header) and NXAST_BUNDLE / NXAST_BUNDLE_LOAD (12 / 13: algorithm, fields, basis,
member type NXM_OF_IN_PORT, member count, ofs_nbits and destination header — zero
for bundle —, 4 zero bytes, then the members as 16-bit port numbers, padded to 8).
Used by ``ofwire_nx``; the operand and subfield readers are passed in (they raise
its errors). Pure.
"""

from __future__ import annotations

import struct

from tandem.rules import nxm as NXM
from tandem.rules.ir import BUNDLE_ALGORITHMS, BUNDLE_MAX_MEMBERS, BUNDLE_RESERVED_MEMBERS, HASH_FIELDS, MULTIPATH_ALGORITHMS
from tandem.rules.ir import Action, Bundle, Multipath, RuleError, Subfield

NXAST_MULTIPATH, NXAST_BUNDLE, NXAST_BUNDLE_LOAD = 10, 12, 13
SUBTYPES = (NXAST_MULTIPATH, NXAST_BUNDLE, NXAST_BUNDLE_LOAD)
_NX_VENDOR_ID = 0x0000_2320
_IN_PORT_HEADER = 0x0000_0002  # NXM_OF_IN_PORT, the only member type
_BAD_ACTION = 2
_BAD_LEN, _BAD_OUT_PORT, _BAD_ARGUMENT, _BAD_SET_ARGUMENT = 1, 4, 5, 15


class HashWireError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.etype, self.code = _BAD_ACTION, code


def _header(field: str) -> bytes:
    o = NXM.OPERANDS[field]
    return struct.pack("!I", o.cls << 16 | o.number << 9 | o.width)


def _ofs_nbits(sf: Subfield) -> int:
    return sf.ofs << 6 | (sf.n_bits - 1)


def _pad(raw: bytes) -> bytes:
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


def encode_hash(a: Action) -> bytes:
    if isinstance(a, Multipath):
        return struct.pack("!HHIHHHHHHIHH", 0xFFFF, 32, _NX_VENDOR_ID, NXAST_MULTIPATH, HASH_FIELDS.index(a.fields),
                           a.basis, 0, MULTIPATH_ALGORITHMS.index(a.algorithm), a.n_links - 1, a.arg, 0,
                           _ofs_nbits(a.dst)) + _header(a.dst.field)
    assert isinstance(a, Bundle)
    load = a.dst is not None
    head = struct.pack("!HHIHHHHIHH", 0xFFFF, 0, _NX_VENDOR_ID, NXAST_BUNDLE_LOAD if load else NXAST_BUNDLE,
                       BUNDLE_ALGORITHMS.index(a.algorithm), HASH_FIELDS.index(a.fields), a.basis, _IN_PORT_HEADER,
                       len(a.members), _ofs_nbits(a.dst) if load else 0)
    head += (_header(a.dst.field) if load else bytes(4)) + bytes(4)
    return _pad(head + struct.pack(f"!{len(a.members)}H", *(m & 0xFFFF for m in a.members)))


def decode_hash(subtype: int, body: bytes, operand, subfield, writable) -> Action:
    """One action's whole bytes -> IR. ``operand(body, off, what)`` reads a field
    header, ``subfield(field, bits, ofs, n_bits, what)`` builds a checked subfield and
    ``writable(field, what)`` refuses a field no action may write (ofwire_nx's)."""
    if subtype == NXAST_MULTIPATH:
        if len(body) != 32:
            raise HashWireError(_BAD_LEN, f"multipath of {len(body)} bytes, expected 32")
        fields, basis, _, alg, max_link, arg, _, ofs_nbits = struct.unpack_from("!HHHHHIHH", body, 10)
        field, bits, _ = operand(body, 28, "multipath destination")
        dst = subfield(field, bits, ofs_nbits >> 6, (ofs_nbits & 0x3F) + 1, "multipath")
        if fields >= len(HASH_FIELDS) or alg >= len(MULTIPATH_ALGORITHMS):
            raise HashWireError(_BAD_ARGUMENT, f"multipath: unsupported fields {fields} or algorithm {alg}")
        writable(field, "multipath")
        try:
            return Multipath(HASH_FIELDS[fields], basis, MULTIPATH_ALGORITHMS[alg], max_link + 1, arg, dst)
        except RuleError as e:
            raise HashWireError(_BAD_ARGUMENT, str(e)) from None
    load = subtype == NXAST_BUNDLE_LOAD
    what = "bundle_load" if load else "bundle"
    if len(body) < 32:
        raise HashWireError(_BAD_LEN, f"{what} of {len(body)} bytes, expected at least 32")
    alg, fields, basis, member_type, n, ofs_nbits, dst_header = struct.unpack_from("!HHHIHHI", body, 10)
    if fields >= len(HASH_FIELDS) or alg >= len(BUNDLE_ALGORITHMS) or n > BUNDLE_MAX_MEMBERS \
            or member_type != _IN_PORT_HEADER or any(body[28:32]):
        raise HashWireError(_BAD_ARGUMENT, f"{what}: unsupported fields {fields}, algorithm {alg}, member type "
                            f"{member_type:#x} or {n} members, or reserved bytes not zero")
    dst = None
    if load:
        field, bits, _ = operand(body, 24, "bundle_load destination")
        dst = subfield(field, bits, ofs_nbits >> 6, (ofs_nbits & 0x3F) + 1, "bundle_load")
        if dst.n_bits < 16:
            raise HashWireError(_BAD_ARGUMENT, "bundle_load action requires at least 16 bit destination")
        writable(field, "bundle_load")
    elif ofs_nbits or dst_header:
        raise HashWireError(_BAD_ARGUMENT, "bundle action has nonzero reserved fields")
    if len(body) - 32 < 2 * n:
        raise HashWireError(_BAD_LEN, f"{what} has {len(body) - 32} bytes for members, {2 * n} needed for {n}")
    # (OpenFlow 1.0 numbers: 0xff00 and up are the reserved ports, in OpenFlow 1.3's numbers here)
    members = tuple(m | 0xFFFF0000 if m >= 0xFF00 else m for m in struct.unpack_from(f"!{n}H", body, 32))
    bad = [m for m in members if m >= 0xFF00 and m not in BUNDLE_RESERVED_MEMBERS]
    if bad:  # (as Open vSwitch 3.1 refuses them: CONTROLLER, and 0xff00..0xfff7, which name no port)
        raise HashWireError(_BAD_OUT_PORT, f"{what}: member {bad[0] & 0xFFFF:#x} is not supported: members are port "
                            "numbers 0..65279 or the reserved ports IN_PORT, TABLE, NORMAL, FLOOD, ALL, LOCAL, NONE")
    try:
        return Bundle(HASH_FIELDS[fields], basis, BUNDLE_ALGORITHMS[alg], members, dst)
    except RuleError as e:
        raise HashWireError(_BAD_ARGUMENT, str(e)) from None
