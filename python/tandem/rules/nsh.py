"""The Network Service Header (RFC 8300; Open vSwitch's NSH fields, ``ir.NSH_FIELDS``)
in a frame with ethertype 0x894f: the match checks Open vSwitch makes beyond the
fields' widths, and the header's bytes for ``packets.build_frame`` /
``packets.extract_fields`` (read as OVS 3.1's ``parse_nsh`` reads them: MD type 2
contexts read 0; a header it does not parse gives no NSH fields, i.e. all 0).

Header: ``Ver(2) O U(2 flag bits) TTL(6) Length(6, in 4-byte words) | MD type | Next
protocol | SPI(24) SI(8) | MD type 1: four 32-bit contexts; MD type 2: TLVs``.
Pure, no I/O.
"""

from __future__ import annotations

import struct

from .ir import NSH_FIELDS, RuleError

ETH_TYPE_NSH = 0x894F
MD_TYPE1, MD_TYPE2 = 1, 2
CONTEXTS = ("nsh_c1", "nsh_c2", "nsh_c3", "nsh_c4")
# the MD type 2 TLV drawn into frames (class 0x0001, type 4, 4 bytes of data)
_MD2_TLV = bytes.fromhex("00010401aabbccdd")


def check_match(fields: dict[str, tuple[int, int | None]]) -> None:
    """RuleError where Open vSwitch refuses an NSH match: ``nsh_mdtype`` other than 1
    or 2 (OFPBMC_BAD_VALUE). A context match needs no ``nsh_mdtype``: Open vSwitch
    matches the flow's context, which an MD type 2 header leaves 0 (measured on 3.1;
    its ovs-ofctl prints a context only beside ``nsh_mdtype=1``, but sends it, and its
    OpenFlow replies carry it)."""
    md = fields.get("nsh_mdtype")
    if md is not None and md[0] not in (MD_TYPE1, MD_TYPE2):
        raise RuleError(f"nsh_mdtype={md[0]}: Open vSwitch matches MD type 1 or 2 only")


def header(f: dict) -> bytes:
    """The NSH header of a frame from IR values (``nsh_*``; defaults: MD type 1, TTL
    63, next protocol 3 (Ethernet)). ``nsh_flags`` and ``nsh_ttl`` are cut to the
    header's 2 and 6 bits."""
    md = f.get("nsh_mdtype", MD_TYPE1)
    body = b"".join(struct.pack("!I", f.get(c, 0)) for c in CONTEXTS) if md == MD_TYPE1 else _MD2_TLV
    length = (8 + len(body)) // 4
    vftl = (f.get("nsh_flags", 0) & 3) << 12 | (f.get("nsh_ttl", 63) & 0x3F) << 6 | length
    return struct.pack("!HBBI", vftl, md, f.get("nsh_np", 3), f.get("nsh_spi", 0) << 8 | f.get("nsh_si", 255)) + body


def fields(frame: bytes, off: int) -> dict[str, int]:
    """The NSH fields of the header at ``frame[off:]`` as Open vSwitch's flow holds
    them (all 0 where it does not parse the header)."""
    out = dict.fromkeys(sorted(NSH_FIELDS), 0)
    if len(frame) < off + 8:
        return out
    vftl, md, np, path = struct.unpack_from("!HBBI", frame, off)
    length = (vftl & 0x3F) * 4
    if vftl >> 14 or length > len(frame) - off or (md == MD_TYPE1 and length != 24):
        return out
    out.update(nsh_flags=vftl >> 12 & 3, nsh_ttl=vftl >> 6 & 0x3F, nsh_mdtype=md, nsh_np=np, nsh_spi=path >> 8,
               nsh_si=path & 0xFF)
    if md == MD_TYPE1:
        out.update(zip(CONTEXTS, struct.unpack_from("!4I", frame, off + 8)))
    return out
