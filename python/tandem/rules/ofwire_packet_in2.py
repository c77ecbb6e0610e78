"""OpenFlow 1.3 wire codec, Open vSwitch's packet-in extensions (Nicira
experimenter messages): NXT_SET_PACKET_IN_FORMAT, NXT_SET_CONTROLLER_ID, the old
NXT_PACKET_IN (written only) and NXT_PACKET_IN2 with its properties (packet, full length, table, cookie, reason,
metadata, userdata, a pause's continuation) and NXT_RESUME (the same properties sent back),
laid out as Open vSwitch 3.1 lays them out (``lib/ofp-packet.c``, ``lib/ofp-prop.c``); the
continuation's bytes are carried as they come (4 bytes of padding, then its NXCPT_* properties). Pure.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from tandem.rules.ir import Match
from tandem.rules.ofprop import prop, props
from tandem.rules.ofwire import OFError, OFPT_EXPERIMENTER, decode_match, header
from tandem.rules.ofwire_packet_in_match import encode_packet_in_match

NX_VENDOR_ID = 0x0000_2320
NXT_SET_PACKET_IN_FORMAT, NXT_SET_CONTROLLER_ID, NXT_RESUME, NXT_PACKET_IN2 = 16, 20, 28, 30
NXPIF_STANDARD, NXPIF_NXT_PACKET_IN, NXPIF_NXT_PACKET_IN2 = 0, 1, 2
(NXPINT_PACKET, NXPINT_FULL_LEN, NXPINT_BUFFER_ID, NXPINT_TABLE_ID, NXPINT_COOKIE, NXPINT_REASON, NXPINT_METADATA,
 NXPINT_USERDATA, NXPINT_CONTINUATION) = range(9)
_BAD_REQUEST, _BAD_LEN = 1, 6
_NO_COOKIE = 0xFFFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class WirePacketIn2:
    """One NXT_PACKET_IN2: ``data`` (cut to the rule's max_len), ``total_len`` the
    whole packet's length, ``cookie`` all ones when no rule matched (not sent)."""

    data: bytes
    total_len: int
    table_id: int
    cookie: int
    reason: int
    match: Match
    userdata: bytes = b""
    continuation: bytes = b""  # (NXPINT_CONTINUATION's payload: a controller(pause)'s)


def nx_message(xid: int, subtype: int, body: bytes) -> bytes:
    return header(OFPT_EXPERIMENTER, xid, struct.pack("!II", NX_VENDOR_ID, subtype) + body)


def encode_packet_in2(xid: int, pi: WirePacketIn2) -> bytes:
    out = prop(NXPINT_PACKET, pi.data)
    if len(pi.data) != pi.total_len:
        out += prop(NXPINT_FULL_LEN, struct.pack("!I", pi.total_len))
    out += prop(NXPINT_TABLE_ID, struct.pack("!B", pi.table_id))
    if pi.cookie != _NO_COOKIE:
        out += prop(NXPINT_COOKIE, struct.pack("!4xQ", pi.cookie))
    out += prop(NXPINT_REASON, struct.pack("!B", pi.reason))
    m = encode_packet_in_match(pi.match)  # (Open vSwitch's order of the fields: ofwire_packet_in_match.py)
    (mlen,) = struct.unpack_from("!H", m, 2)
    out += prop(NXPINT_METADATA, m[4:mlen])
    if pi.continuation:  # (before userdata: Open vSwitch 3.1's order, measured)
        out += prop(NXPINT_CONTINUATION, pi.continuation)
    if pi.userdata:
        out += prop(NXPINT_USERDATA, pi.userdata)
    return nx_message(xid, NXT_PACKET_IN2, out)


NXT_PACKET_IN = 17
_OXM_IN_PORT, _OXM_TUNNEL_ID = 0x8000_0004, 0x8000_4C08
_OXM_ETH_TYPE = 0x8000_0A02
# NXM headers of the OXM fields a packet-in's match lists that Nicira's old format names otherwise
# (in_port: NXM_OF_IN_PORT, 16 bits, OpenFlow 1.0's reserved numbers; tunnel_id: NXM_NX_TUN_ID;
# eth_type, listed after a ct: NXM_OF_ETH_TYPE). The other fields (tunnel addresses, flags and GBP,
# registers, pkt_mark, ct_*: NXM already; metadata: OXM, it
# has no NXM header) go as the OpenFlow packet-in's match has them, in Open vSwitch's order (measured
# on OVS 3.1: tests/ofwire/test_ofwire_packet_in_nx_golden.py).


def _nxm_of_packet_in_match(match: Match) -> bytes:
    m = encode_packet_in_match(match)
    (mlen,) = struct.unpack_from("!H", m, 2)
    oxms, out, off = m[4:mlen], b"", 0
    while off + 4 <= len(oxms):
        (h,) = struct.unpack_from("!I", oxms, off)
        tlv, off = oxms[off:off + 4 + (h & 0xFF)], off + 4 + (h & 0xFF)
        if h == _OXM_IN_PORT:
            port = struct.unpack_from("!I", tlv, 4)[0]
            port -= 0xFFFF_0000 if port >= 0xFFFF_FF00 else 0  # (a reserved port in NXM's 16 bits)
            tlv = struct.pack("!IH", 0x0000_0002, port)
        elif h == _OXM_TUNNEL_ID:
            tlv = struct.pack("!I", 0x0001_2008) + tlv[4:]
        elif h == _OXM_ETH_TYPE:  # (after a ct: NXM_OF_ETH_TYPE, measured)
            tlv = struct.pack("!I", 0x0000_0602) + tlv[4:]
        out += tlv
    return out


def encode_nx_packet_in(xid: int, pi: WirePacketIn2, buffer_id: int = 0xFFFF_FFFF) -> bytes:
    """Nicira's old NXT_PACKET_IN (format 1): its match in NXM, as Open vSwitch 3.1 sends it."""
    nxm = _nxm_of_packet_in_match(pi.match)
    body = struct.pack("!IIIHBBQH6x", NX_VENDOR_ID, NXT_PACKET_IN, buffer_id, pi.total_len, pi.reason, pi.table_id,
                       pi.cookie, len(nxm))
    return header(OFPT_EXPERIMENTER, xid, body + nxm + b"\0" * (-len(nxm) % 8) + b"\0\0" + pi.data)


def decode_packet_in2(body: bytes) -> WirePacketIn2:
    """``body``: the message after its OpenFlow header, experimenter id and subtype included."""
    args: dict = {"cookie": _NO_COOKIE, "match": Match(()), "table_id": 0, "reason": 0, "data": b""}
    full = None
    try:
        found = list(props(body, 8, "packet-in2"))
    except ValueError as e:
        raise OFError(_BAD_REQUEST, _BAD_LEN, str(e)) from None
    for ptype, p in found:
        if ptype == NXPINT_PACKET:
            args["data"] = p
        elif ptype == NXPINT_FULL_LEN:
            full = struct.unpack("!I", p)[0]
        elif ptype == NXPINT_TABLE_ID:
            args["table_id"] = p[0]
        elif ptype == NXPINT_COOKIE:
            args["cookie"] = struct.unpack_from("!Q", p, 4)[0]
        elif ptype == NXPINT_REASON:
            args["reason"] = p[0]
        elif ptype == NXPINT_METADATA:
            raw = struct.pack("!HH", 1, 4 + len(p)) + p
            args["match"] = decode_match(raw + b"\0" * (-len(raw) % 8), strict=False)[0]
        elif ptype == NXPINT_USERDATA:
            args["userdata"] = p
        elif ptype == NXPINT_CONTINUATION:
            args["continuation"] = p
    return WirePacketIn2(total_len=len(args["data"]) if full is None else full, **args)


def encode_set_packet_in_format(xid: int, fmt: int) -> bytes:
    return nx_message(xid, NXT_SET_PACKET_IN_FORMAT, struct.pack("!I", fmt))


def encode_set_controller_id(xid: int, controller_id: int) -> bytes:
    return nx_message(xid, NXT_SET_CONTROLLER_ID, struct.pack("!6xH", controller_id))


def decode_set_packet_in_format(body: bytes) -> int:
    if len(body) != 12:
        raise OFError(_BAD_REQUEST, _BAD_LEN, f"set_packet_in_format of {len(body)} bytes after the header, expected 12")
    return struct.unpack_from("!I", body, 8)[0]


def decode_set_controller_id(body: bytes) -> int:
    if len(body) != 16:
        raise OFError(_BAD_REQUEST, _BAD_LEN, f"set_controller_id of {len(body)} bytes after the header, expected 16")
    return struct.unpack_from("!H", body, 14)[0]


def encode_resume(xid: int, pi: WirePacketIn2) -> bytes:
    """NXT_RESUME: a packet-in's properties sent back (as ``encode_packet_in2`` lays them out)."""
    return nx_message(xid, NXT_RESUME, encode_packet_in2(0, pi)[16:])


def decode_resume(body: bytes) -> WirePacketIn2:
    """``body``: the NXT_RESUME after its OpenFlow header (experimenter id and subtype included)."""
    return decode_packet_in2(body)


__all__ = ["NXPIF_NXT_PACKET_IN2", "decode_resume", "encode_resume", "NXPIF_STANDARD", "NXT_PACKET_IN2", "NXT_RESUME", "NXT_SET_CONTROLLER_ID",
           "NXT_SET_PACKET_IN_FORMAT", "WirePacketIn2", "decode_packet_in2", "decode_set_controller_id",
           "decode_set_packet_in_format", "encode_packet_in2", "encode_set_controller_id", "encode_set_packet_in_format"]
