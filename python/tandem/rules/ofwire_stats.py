"""OpenFlow 1.3 wire codec, part 3: MULTIPART requests and replies.

Covers DESC, FLOW, AGGREGATE, TABLE, PORT_STATS, PORT_DESC, GROUP,
GROUP_DESC, GROUP_FEATURES and TABLE_FEATURES (read-only: a request carrying
table properties is refused with TABLE_FEATURES_FAILED/EPERM, since OneSwitch
derives its pipeline from the physical switches). Replies are split into
several messages with OFPMPF_REPLY_MORE when they exceed 64 KiB.
State: none.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from tandem.rules.ct_shown import shown_match
from tandem.rules.ir import Bucket, Group, Match, OFPP_ANY, Rule
from tandem.rules.ofwire import (
    OFError, OFPBRC_BAD_LEN, OFPBRC_BAD_MULTIPART, OFPET_BAD_REQUEST, OFPET_TABLE_FEATURES_FAILED,
    OFPT_MULTIPART_REPLY, OFPT_MULTIPART_REQUEST, OFPTFFC_EPERM, OFP_HEADER, OFP_MAX_MESSAGE, OFPBRC_BAD_EXPERIMENTER,
    WirePort, decode_instructions, decode_match, decode_port, encode_instructions, encode_match, encode_port, header,
    need, OFP_PORT, pad8, field_head,
)
from tandem.rules.ofwire_msgs import GROUP_TYPE_NAMES, OFPG_ANY, decode_buckets, encode_buckets

(OFPMP_DESC, OFPMP_FLOW, OFPMP_AGGREGATE, OFPMP_TABLE, OFPMP_PORT_STATS, OFPMP_QUEUE, OFPMP_GROUP,
 OFPMP_GROUP_DESC, OFPMP_GROUP_FEATURES, OFPMP_METER, OFPMP_METER_CONFIG, OFPMP_METER_FEATURES,
 OFPMP_TABLE_FEATURES, OFPMP_PORT_DESC) = range(14)
OFPMP_EXPERIMENTER = 0xFFFF
OFPMPF_MORE = 1
MP_HEAD = struct.Struct("!HH4x")
SUPPORTED = {OFPMP_DESC, OFPMP_FLOW, OFPMP_AGGREGATE, OFPMP_TABLE, OFPMP_PORT_STATS, OFPMP_GROUP,
             OFPMP_GROUP_DESC, OFPMP_GROUP_FEATURES, OFPMP_TABLE_FEATURES, OFPMP_PORT_DESC,
             OFPMP_METER, OFPMP_METER_CONFIG, OFPMP_METER_FEATURES}


@dataclass(frozen=True)
class FlowStatsRequest:
    table_id: int = 0xFF
    out_port: int = OFPP_ANY
    out_group: int = OFPG_ANY
    cookie: int = 0
    cookie_mask: int = 0
    match: Match = field(default_factory=Match)


@dataclass(frozen=True)
class MultipartRequest:
    type: int
    flags: int
    flow: FlowStatsRequest | None = None  # FLOW, AGGREGATE
    port_no: int = OFPP_ANY  # PORT_STATS
    group_id: int = 0xFFFFFFFC  # GROUP (OFPG_ALL)
    meter_id: int = 0xFFFFFFFF  # METER, METER_CONFIG (OFPM_ALL)


FLOW_REQ = struct.Struct("!B3xII4xQQ")


def decode_multipart_request(body: bytes) -> MultipartRequest:
    need(body, MP_HEAD.size, "multipart request")
    mtype, flags = MP_HEAD.unpack_from(body, 0)
    rest = body[MP_HEAD.size :]
    if mtype == OFPMP_EXPERIMENTER:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_EXPERIMENTER, "experimenter multipart requests are not supported")
    if mtype not in SUPPORTED:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_MULTIPART, f"multipart type {mtype} is not supported by OneSwitch")
    if mtype in (OFPMP_FLOW, OFPMP_AGGREGATE):
        need(rest, FLOW_REQ.size + 8, "flow stats request")
        table_id, out_port, out_group, cookie, cookie_mask = FLOW_REQ.unpack_from(rest, 0)
        match, msize = decode_match(rest[FLOW_REQ.size :])
        if FLOW_REQ.size + msize != len(rest):
            raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"flow stats request has {len(rest) - FLOW_REQ.size - msize} trailing bytes")
        return MultipartRequest(mtype, flags, flow=FlowStatsRequest(table_id, out_port, out_group, cookie, cookie_mask, match))
    if mtype in (OFPMP_PORT_STATS, OFPMP_GROUP):
        if len(rest) != 8:
            raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"multipart type {mtype} request body is {len(rest)} bytes, expected 8")
        (num,) = struct.unpack_from("!I", rest, 0)
        return MultipartRequest(mtype, flags, port_no=num) if mtype == OFPMP_PORT_STATS else MultipartRequest(mtype, flags, group_id=num)
    if mtype in (OFPMP_METER, OFPMP_METER_CONFIG):
        from tandem.rules.ofwire_meter import decode_meter_request

        return MultipartRequest(mtype, flags, meter_id=decode_meter_request(rest))
    if mtype == OFPMP_TABLE_FEATURES and rest:
        raise OFError(OFPET_TABLE_FEATURES_FAILED, OFPTFFC_EPERM, "OneSwitch's table features are fixed; setting them is not supported")
    if rest:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"multipart type {mtype} request must have an empty body, got {len(rest)} bytes")
    return MultipartRequest(mtype, flags)


def encode_multipart_request(xid: int, req: MultipartRequest) -> bytes:
    body = MP_HEAD.pack(req.type, req.flags)
    if req.type in (OFPMP_FLOW, OFPMP_AGGREGATE):
        f = req.flow or FlowStatsRequest()
        body += FLOW_REQ.pack(f.table_id, f.out_port, f.out_group, f.cookie, f.cookie_mask) + encode_match(f.match)
    elif req.type == OFPMP_PORT_STATS:
        body += struct.pack("!I4x", req.port_no)
    elif req.type == OFPMP_GROUP:
        body += struct.pack("!I4x", req.group_id)
    elif req.type in (OFPMP_METER, OFPMP_METER_CONFIG):
        body += struct.pack("!I4x", req.meter_id)
    return header(OFPT_MULTIPART_REQUEST, xid, body)


def encode_multipart_replies(xid: int, mtype: int, entries: list[bytes]) -> list[bytes]:
    """One or more MULTIPART_REPLY messages carrying ``entries`` (each kept whole)."""
    limit = OFP_MAX_MESSAGE - OFP_HEADER.size - MP_HEAD.size
    chunks: list[list[bytes]] = [[]]
    size = 0
    for e in entries:
        if size + len(e) > limit and chunks[-1]:
            chunks.append([])
            size = 0
        chunks[-1].append(e)
        size += len(e)
    return [header(OFPT_MULTIPART_REPLY, xid, MP_HEAD.pack(mtype, OFPMPF_MORE if i < len(chunks) - 1 else 0) + b"".join(c))
            for i, c in enumerate(chunks)]


def decode_multipart_reply(body: bytes) -> tuple[int, int, bytes]:
    need(body, MP_HEAD.size, "multipart reply")
    mtype, flags = MP_HEAD.unpack_from(body, 0)
    return mtype, flags, body[MP_HEAD.size :]


# ---------------------------------------------------------------- entries

def encode_desc(mfr: str, hw: str, sw: str, serial: str, dp: str) -> bytes:
    return struct.pack("!256s256s256s32s256s", mfr.encode(), hw.encode(), sw.encode(), serial.encode(), dp.encode())


FLOW_ENTRY = struct.Struct("!HBxIIHHHH4xQQQ")


@dataclass(frozen=True)
class FlowStatsEntry:
    rule: Rule
    duration_sec: int = 0
    duration_nsec: int = 0
    flags: int = 0
    packet_count: int = 0
    byte_count: int = 0


def encode_flow_stats(e: FlowStatsEntry) -> bytes:
    r = e.rule
    tail = encode_match(shown_match(r.match)) + encode_instructions(r.instructions)
    return FLOW_ENTRY.pack(FLOW_ENTRY.size + len(tail), r.table, e.duration_sec, e.duration_nsec, r.priority,
                           r.idle_timeout, r.hard_timeout, e.flags, r.cookie, e.packet_count, e.byte_count) + tail


def decode_flow_stats(buf: bytes) -> list[FlowStatsEntry]:
    out, off = [], 0
    while off + FLOW_ENTRY.size <= len(buf):
        length, table, dsec, dnsec, prio, idle, hard, flags, cookie, pkts, nbytes = FLOW_ENTRY.unpack_from(buf, off)
        if length < FLOW_ENTRY.size or off + length > len(buf):
            raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"flow stats entry at byte {off}: bad length {length}")
        entry = buf[off + FLOW_ENTRY.size : off + length]
        match, msize = decode_match(entry, strict=False)
        ins = decode_instructions(entry[msize:], strict=False)
        out.append(FlowStatsEntry(Rule(match, tuple(ins), table, prio, cookie, idle, hard), dsec, dnsec, flags, pkts, nbytes))
        off += length
    return out


def encode_aggregate(packet_count: int, byte_count: int, flow_count: int) -> bytes:
    return struct.pack("!QQI4x", packet_count, byte_count, flow_count)


def decode_aggregate(buf: bytes) -> tuple[int, int, int]:
    need(buf, 24, "aggregate reply")
    return struct.unpack_from("!QQI", buf, 0)  # type: ignore[return-value]


def encode_table_stats(table_id: int, active: int, lookups: int, matched: int) -> bytes:
    return struct.pack("!B3xIQQ", table_id, active, lookups, matched)


def decode_table_stats(buf: bytes) -> list[tuple[int, int, int, int]]:
    """TABLE multipart reply body -> [(table_id, active_count, lookup_count, matched_count)]."""
    if len(buf) % 24:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"table stats: {len(buf)} bytes is not a multiple of 24")
    return [struct.unpack_from("!B3xIQQ", buf, off) for off in range(0, len(buf), 24)]  # type: ignore[misc]


PORT_STATS = struct.Struct("!I4x12QII")


@dataclass(frozen=True)
class PortStatsEntry:
    port_no: int
    rx_packets: int = 0
    tx_packets: int = 0
    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_dropped: int = 0
    tx_dropped: int = 0
    rx_errors: int = 0
    tx_errors: int = 0
    rx_frame_err: int = 0
    rx_over_err: int = 0
    rx_crc_err: int = 0
    collisions: int = 0
    duration_sec: int = 0
    duration_nsec: int = 0


def _u64(v: int) -> int:
    return v & 0xFFFF_FFFF_FFFF_FFFF


def encode_port_stats(e: PortStatsEntry) -> bytes:
    return PORT_STATS.pack(e.port_no, *(_u64(v) for v in (e.rx_packets, e.tx_packets, e.rx_bytes, e.tx_bytes, e.rx_dropped,
                                                        e.tx_dropped, e.rx_errors, e.tx_errors, e.rx_frame_err,
                                                        e.rx_over_err, e.rx_crc_err, e.collisions)),
                           e.duration_sec, e.duration_nsec)


def decode_port_stats(buf: bytes) -> list[PortStatsEntry]:
    return [PortStatsEntry(*PORT_STATS.unpack_from(buf, off)) for off in range(0, len(buf) - PORT_STATS.size + 1, PORT_STATS.size)]


def encode_port_desc(ports: list[WirePort]) -> list[bytes]:
    return [encode_port(p) for p in ports]


def decode_port_desc(buf: bytes) -> list[WirePort]:
    return [decode_port(buf, off) for off in range(0, len(buf) - OFP_PORT.size + 1, OFP_PORT.size)]


GROUP_STATS = struct.Struct("!H2xII4xQQII")


def encode_group_stats(group_id: int, ref_count: int, packets: int, nbytes: int, buckets: list[tuple[int, int]],
                       duration_sec: int = 0, duration_nsec: int = 0) -> bytes:
    tail = b"".join(struct.pack("!QQ", p, b) for p, b in buckets)
    return GROUP_STATS.pack(GROUP_STATS.size + len(tail), group_id, ref_count, packets, nbytes, duration_sec, duration_nsec) + tail


def decode_group_stats(buf: bytes) -> list[tuple[int, int, int, list[tuple[int, int]]]]:
    out, off = [], 0
    while off + GROUP_STATS.size <= len(buf):
        length, gid, _ref, pkts, nbytes, _ds, _dn = GROUP_STATS.unpack_from(buf, off)
        if length < GROUP_STATS.size:
            break
        bk = [struct.unpack_from("!QQ", buf, o) for o in range(off + GROUP_STATS.size, off + length - 15, 16)]
        out.append((gid, pkts, nbytes, bk))
        off += length
    return out


def encode_group_desc(g: Group) -> bytes:
    tail = encode_buckets(g.buckets)
    return struct.pack("!HBxI", 8 + len(tail), GROUP_TYPE_NAMES.index(g.type), g.group_id) + tail


def decode_group_desc(buf: bytes) -> list[Group]:
    out, off = [], 0
    while off + 8 <= len(buf):
        length, gtype, gid = struct.unpack_from("!HBxI", buf, off)
        if length < 8 or off + length > len(buf):
            break
        out.append(Group(gid, GROUP_TYPE_NAMES[gtype], tuple(decode_buckets(buf[off + 8 : off + length], strict=False))))
        off += length
    return out


def encode_group_features(types: int = 0b1111, capabilities: int = 0b0101, max_groups: int = 0xFFFFFF00,
                          actions: int = (1 << 0) | (1 << 17) | (1 << 18) | (1 << 22) | (1 << 24) | (1 << 25)) -> bytes:
    return struct.pack("!II4I4I", types, capabilities, *(max_groups,) * 4, *(actions,) * 4)


# ---------------------------------------------------------------- table features

TF_HEAD = struct.Struct("!HB5x32sQQII")
OFPTFPT_INSTRUCTIONS, OFPTFPT_NEXT_TABLES, OFPTFPT_WRITE_ACTIONS, OFPTFPT_APPLY_ACTIONS = 0, 2, 4, 6
OFPTFPT_MATCH, OFPTFPT_WILDCARDS, OFPTFPT_WRITE_SETFIELD, OFPTFPT_APPLY_SETFIELD = 8, 10, 12, 14


def _prop(ptype: int, payload: bytes) -> bytes:
    raw = struct.pack("!HH", ptype, 4 + len(payload)) + payload
    return raw + b"\0" * (pad8(len(raw)) - len(raw))


def _oxm_ids(names: list[str], masked: bool = False) -> bytes:
    """The OXM (or, for Open vSwitch's extension fields, NXM) headers of ``names``."""
    return b"".join(field_head(n, masked) for n in names)


def encode_table_features(table_id: int, name: str, max_entries: int, n_tables: int, match_fields: list[str],
                          maskable: list[str], set_fields: list[str], instructions: list[int], actions: list[int]) -> bytes:
    ins = b"".join(struct.pack("!HH", t, 4) for t in instructions)
    acts = b"".join(struct.pack("!HH", t, 4) for t in actions)
    nxt = bytes(range(table_id + 1, n_tables))
    props = (_prop(OFPTFPT_INSTRUCTIONS, ins) + _prop(1, ins) + _prop(OFPTFPT_NEXT_TABLES, nxt) + _prop(3, nxt)
             + _prop(OFPTFPT_WRITE_ACTIONS, acts) + _prop(5, acts) + _prop(OFPTFPT_APPLY_ACTIONS, acts) + _prop(7, acts)
             + _prop(OFPTFPT_MATCH, _oxm_ids([f for f in match_fields if f not in maskable]) + _oxm_ids(maskable, True))
             + _prop(OFPTFPT_WILDCARDS, _oxm_ids(match_fields))
             + _prop(OFPTFPT_WRITE_SETFIELD, _oxm_ids(set_fields)) + _prop(13, _oxm_ids(set_fields))
             + _prop(OFPTFPT_APPLY_SETFIELD, _oxm_ids(set_fields)) + _prop(15, _oxm_ids(set_fields)))
    return TF_HEAD.pack(TF_HEAD.size + len(props), table_id, name.encode()[:31], 0xFFFF_FFFF_FFFF_FFFF,
                        0xFFFF_FFFF_FFFF_FFFF, 0, max_entries) + props
