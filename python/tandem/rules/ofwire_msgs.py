"""OpenFlow 1.3 wire codec, part 2: whole messages (both directions).

``encode_*`` build complete messages (header included); ``decode_*`` parse a
message *body* (the bytes after the 8-byte header) and raise
``ofwire.OFError`` with the error the receiver must send. Controller→switch
messages (FLOW_MOD, GROUP_MOD, PACKET_OUT, ROLE_REQUEST, SET_CONFIG …) are
decoded strictly; switch→controller ones (PACKET_IN, FLOW_REMOVED, ERROR …)
leniently, since a real switch may add fields the IR does not model.
``split_messages`` frames a byte stream. State: none.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from tandem.rules import ir
from tandem.rules.ct_shown import shown_match
from tandem.rules.ir import Action, Bucket, FlowMod, Group, Match, Rule, RuleError
from tandem.rules.ofwire import (
    OFP_HEADER, OFP_MAX_MESSAGE, OFP_NO_BUFFER, OFP_VERSION, OFError, OFPBAC_BAD_ARGUMENT, OFPBRC_BAD_LEN, OFPBRC_BAD_PORT,
    OFPET_BAD_ACTION, OFPET_BAD_INSTRUCTION, OFPET_BAD_REQUEST, OFPET_FLOW_MOD_FAILED, OFPET_GROUP_MOD_FAILED,
    OFPET_ROLE_REQUEST_FAILED, OFPBIC_BAD_TABLE_ID, OFPFMFC_BAD_COMMAND, OFPFMFC_BAD_FLAGS,
    OFPFMFC_BAD_TABLE_ID, OFPGMFC_BAD_BUCKET, OFPGMFC_BAD_COMMAND, OFPGMFC_BAD_TYPE, OFPGMFC_INVALID_GROUP,
    OFPRRFC_BAD_ROLE, OFPT_BARRIER_REPLY, OFPT_BARRIER_REQUEST, OFPT_ECHO_REPLY, OFPT_ECHO_REQUEST, OFPT_ERROR,
    OFPT_FEATURES_REPLY, OFPT_FEATURES_REQUEST, OFPT_FLOW_MOD, OFPT_FLOW_REMOVED, OFPT_GET_ASYNC_REPLY,
    OFPT_GET_CONFIG_REPLY, OFPT_GROUP_MOD, OFPT_HELLO, OFPT_PACKET_IN, OFPT_PACKET_OUT, OFPT_PORT_STATUS,
    OFPT_ROLE_REPLY, OFPT_ROLE_REQUEST, OFPT_SET_CONFIG, WirePort, decode_actions, decode_instructions, decode_instructions_cached,
    decode_match, decode_port, encode_actions, encode_instructions, encode_match, encode_port, header, need,
)

# ---------------------------------------------------------------- framing


class RawMessage(NamedTuple):
    """One framed message: header fields and the body after the 8-byte header.
    A named tuple: a controller's stream is split into thousands of these."""

    version: int
    type: int
    xid: int
    body: bytes

    @property
    def raw(self) -> bytes:
        return OFP_HEADER.pack(self.version, self.type, OFP_HEADER.size + len(self.body), self.xid) + self.body


class FramingError(Exception):
    """The byte stream cannot be split into messages (length < 8): the
    connection must be closed since message boundaries are lost."""


def split_messages(buf: bytearray) -> list[RawMessage]:
    """Remove and return every complete message at the front of ``buf``."""
    out = []
    off, end = 0, len(buf)
    unpack, hsize, new, cls = OFP_HEADER.unpack_from, OFP_HEADER.size, tuple.__new__, RawMessage
    try:
        while end - off >= hsize:
            version, mtype, length, xid = unpack(buf, off)
            if length < hsize:
                raise FramingError(f"message header declares length {length} < 8")
            if end - off < length:
                break
            out.append(new(cls, (version, mtype, xid, bytes(buf[off + hsize : off + length]))))
            off += length
    finally:
        del buf[:off]  # the messages returned (and those before a framing error) leave the buffer
    return out


# ---------------------------------------------------------------- simple messages

OFPHET_VERSIONBITMAP = 1


def encode_hello(xid: int = 0, versions: tuple[int, ...] = (OFP_VERSION,)) -> bytes:
    bitmap = 0
    for v in versions:
        bitmap |= 1 << v
    return header(OFPT_HELLO, xid, struct.pack("!HHI", OFPHET_VERSIONBITMAP, 8, bitmap))


def hello_versions(version: int, body: bytes) -> set[int]:
    """Versions a peer's HELLO offers: its bitmap element if present, else
    every version up to the header's."""
    off = 0
    while off + 4 <= len(body):
        etype, elen = struct.unpack_from("!HH", body, off)
        if elen < 4:
            break
        if etype == OFPHET_VERSIONBITMAP and off + elen <= len(body):
            vs = set()
            for i in range((elen - 4) // 4):
                (word,) = struct.unpack_from("!I", body, off + 4 + 4 * i)
                vs |= {32 * i + b for b in range(32) if word >> b & 1}
            return vs
        off += (elen + 7) // 8 * 8
    return set(range(1, version + 1))


def encode_error(xid: int, etype: int, code: int, data: bytes = b"") -> bytes:
    # type 0xffff: an experimenter error, Nicira's (Open vSwitch's own codes, e.g. NXBAC_BAD_CONJUNCTION)
    exp = struct.pack("!I", 0x0000_2320) if etype == 0xFFFF else b""
    return header(OFPT_ERROR, xid, struct.pack("!HH", etype, code) + exp + data[:64])


def decode_error(body: bytes) -> tuple[int, int, bytes]:
    need(body, 4, "error message")
    etype, code = struct.unpack_from("!HH", body, 0)
    return etype, code, body[4:]


def encode_echo_request(xid: int, data: bytes = b"") -> bytes:
    return header(OFPT_ECHO_REQUEST, xid, data)


def encode_echo_reply(xid: int, data: bytes = b"") -> bytes:
    return header(OFPT_ECHO_REPLY, xid, data)


def encode_features_request(xid: int) -> bytes:
    return header(OFPT_FEATURES_REQUEST, xid)


OFPC_FLOW_STATS, OFPC_TABLE_STATS, OFPC_PORT_STATS, OFPC_GROUP_STATS = 1, 2, 4, 8


def encode_features_reply(xid: int, dpid: int, n_buffers: int, n_tables: int, capabilities: int) -> bytes:
    return header(OFPT_FEATURES_REPLY, xid, struct.pack("!QIBB2xII", dpid, n_buffers, n_tables, 0, capabilities, 0))


def decode_features_reply(body: bytes) -> tuple[int, int, int, int]:
    need(body, 24, "features reply")
    dpid, n_buffers, n_tables, _aux, caps, _ = struct.unpack_from("!QIBB2xII", body, 0)
    return dpid, n_buffers, n_tables, caps


def encode_get_config_reply(xid: int, flags: int, miss_send_len: int) -> bytes:
    return header(OFPT_GET_CONFIG_REPLY, xid, struct.pack("!HH", flags, miss_send_len))


def encode_set_config(xid: int, flags: int, miss_send_len: int) -> bytes:
    return header(OFPT_SET_CONFIG, xid, struct.pack("!HH", flags, miss_send_len))


def decode_switch_config(body: bytes) -> tuple[int, int]:
    need(body, 4, "switch config")
    if len(body) != 4:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"switch config body is {len(body)} bytes, expected 4")
    return struct.unpack_from("!HH", body, 0)  # type: ignore[return-value]


def encode_barrier_request(xid: int) -> bytes:
    return header(OFPT_BARRIER_REQUEST, xid)


def encode_barrier_reply(xid: int) -> bytes:
    return header(OFPT_BARRIER_REPLY, xid)


OFPCR_ROLE_NOCHANGE, OFPCR_ROLE_EQUAL, OFPCR_ROLE_MASTER, OFPCR_ROLE_SLAVE = 0, 1, 2, 3


def decode_role_request(body: bytes) -> tuple[int, int]:
    if len(body) != 16:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"role request body is {len(body)} bytes, expected 16")
    role, gen = struct.unpack_from("!I4xQ", body, 0)
    if role > OFPCR_ROLE_SLAVE:
        raise OFError(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_BAD_ROLE, f"role {role} is not one of 0..3")
    return role, gen


def encode_role_reply(xid: int, role: int, generation_id: int) -> bytes:
    return header(OFPT_ROLE_REPLY, xid, struct.pack("!I4xQ", role, generation_id))


def encode_get_async_reply(xid: int, masks: tuple[int, int, int, int, int, int]) -> bytes:
    return header(OFPT_GET_ASYNC_REPLY, xid, struct.pack("!6I", *masks))


def decode_async_config(body: bytes) -> tuple[int, ...]:
    if len(body) != 24:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"async config body is {len(body)} bytes, expected 24")
    return struct.unpack("!6I", body)


# ---------------------------------------------------------------- FLOW_MOD

FLOW_MOD_CMD_NAMES = ("add", "modify", "modify_strict", "delete", "delete_strict")
OFPFF_SEND_FLOW_REM, OFPFF_CHECK_OVERLAP, OFPFF_RESET_COUNTS, OFPFF_NO_PKT_COUNTS, OFPFF_NO_BYT_COUNTS = 1, 2, 4, 8, 16
FLOW_MOD_FIXED = struct.Struct("!QQBBHHHIIIH2x")


@dataclass(frozen=True)
class WireFlowMod:
    """A decoded FLOW_MOD: the IR change plus the wire-only fields."""

    mod: FlowMod
    buffer_id: int = OFP_NO_BUFFER
    flags: int = 0


def encode_flow_mod(xid: int, mod: FlowMod, buffer_id: int = OFP_NO_BUFFER, flags: int | None = None) -> bytes:
    r = mod.rule
    if flags is None:
        flags = (OFPFF_SEND_FLOW_REM if mod.send_flow_rem else 0) | (OFPFF_CHECK_OVERLAP if mod.check_overlap else 0)
    table = ir.OFPTT_ALL if mod.all_tables else r.table
    return encode_rule_flow_mod(xid, FLOW_MOD_CMD_NAMES.index(mod.command), r, flags, table, mod.cookie_mask,
                                mod.out_port, mod.out_group, buffer_id)


_FLOW_MOD_HEAD = struct.Struct("!BBHI" + FLOW_MOD_FIXED.format[1:])  # header + fixed part, packed at once


_ADD_WIRE_BY_ID: dict[int, tuple[Rule, int, bytes]] = {}  # id -> (rule, flags, body): see note_add_wire


def note_add_wire(r: Rule, flags: int, body: bytes) -> None:
    """Remember ``body`` as the body (after the header) of ``encode_rule_flow_mod(xid,
    0, r, flags)``, the ADD of this rule object, for a caller that already has
    the bytes (OneSwitch's FLOW_MOD fast lane splices them from the controller's
    message); the caller vouches they are equal. Held by the object's identity
    (the entry keeps the object, so its id is not reused), used once, bounded."""
    if len(_ADD_WIRE_BY_ID) >= 1 << 15:  # more than the FLOW_MODs a session keeps in flight
        _ADD_WIRE_BY_ID.clear()
    _ADD_WIRE_BY_ID[id(r)] = (r, flags, body)


def encode_rule_flow_mod(xid: int, command: int, r: Rule, flags: int = 0, table: int | None = None,
                         cookie_mask: int = 0, out_port: int = ir.OFPP_ANY, out_group: int = ir.OFPG_ANY,
                         buffer_id: int = OFP_NO_BUFFER) -> bytes:
    """A FLOW_MOD for rule ``r`` (command: index into FLOW_MOD_CMD_NAMES) without a
    FlowMod object: what a backend sends for every physical op."""
    if not command and _ADD_WIRE_BY_ID:
        hit = _ADD_WIRE_BY_ID.pop(id(r), None)
        if hit is not None and hit[0] is r and hit[1] == flags and table is None and not cookie_mask \
                and out_port == ir.OFPP_ANY and out_group == ir.OFPG_ANY and buffer_id == OFP_NO_BUFFER:
            body = hit[2]
            return OFP_HEADER.pack(OFP_VERSION, OFPT_FLOW_MOD, OFP_HEADER.size + len(body), xid) + body
    tail = encode_match(r.match) + encode_instructions(r.instructions)
    size = _FLOW_MOD_HEAD.size + len(tail)
    if size > OFP_MAX_MESSAGE:
        raise ValueError(f"OpenFlow message type {OFPT_FLOW_MOD} of {size} bytes exceeds 65535")
    return _FLOW_MOD_HEAD.pack(OFP_VERSION, OFPT_FLOW_MOD, size, xid, r.cookie, cookie_mask,
                               r.table if table is None else table, command, r.idle_timeout, r.hard_timeout,
                               r.priority, buffer_id, out_port, out_group, flags) + tail


def decode_flow_mod(body: bytes) -> WireFlowMod:
    need(body, FLOW_MOD_FIXED.size + 8, "flow mod")
    (cookie, cookie_mask, table, command, idle, hard, priority, buffer_id, out_port, out_group,
     flags) = FLOW_MOD_FIXED.unpack_from(body, 0)
    if command >= len(FLOW_MOD_CMD_NAMES):
        raise OFError(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_COMMAND, f"flow mod command {command} is not 0..4")
    if flags & ~0x1F:
        raise OFError(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_FLAGS, f"flow mod flags {flags:#x} has unknown bits")
    cmd = FLOW_MOD_CMD_NAMES[command]
    all_tables = table == ir.OFPTT_ALL
    if all_tables and not cmd.startswith("delete"):
        raise OFError(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_TABLE_ID, f"table ALL is only valid for deletes, not {cmd}")
    if table > ir.MAX_TABLE and not all_tables:
        raise OFError(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_TABLE_ID, f"table {table} outside 0..{ir.MAX_TABLE}")
    match, msize = decode_match(body[FLOW_MOD_FIXED.size :])
    instructions = decode_instructions_cached(bytes(body[FLOW_MOD_FIXED.size + msize :]))
    for ins in instructions:
        if isinstance(ins, ir.GotoTable) and (ins.table <= (0 if all_tables else table) or ins.table > ir.MAX_TABLE):
            raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_TABLE_ID, f"goto_table:{ins.table} must point forward from table {table}")
    try:
        # every check of Rule() was made above (table, 16/64-bit fields, one instruction of each
        # type in order, goto forward): build it without repeating them (the FLOW_MOD hot path)
        rule = ir._new_rule(match, instructions, 0 if all_tables else table, priority, cookie, idle, hard)
    except RuleError as e:
        raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_TABLE_ID if "goto" in str(e) else 0, str(e)) from None
    # FlowMod's own checks (a known command; table ALL only for deletes) were made above
    mod = _new(FlowMod)
    _setattr(mod, "__dict__", {"command": cmd, "rule": rule, "cookie_mask": cookie_mask, "out_port": out_port,
                               "out_group": out_group, "all_tables": all_tables,
                               "send_flow_rem": bool(flags & OFPFF_SEND_FLOW_REM),
                               "check_overlap": bool(flags & OFPFF_CHECK_OVERLAP)})
    wf = _new(WireFlowMod)
    _setattr(wf, "__dict__", {"mod": mod, "buffer_id": buffer_id, "flags": flags})
    return wf


_new = object.__new__
_setattr = object.__setattr__


# ---------------------------------------------------------------- GROUP_MOD

GROUP_CMD_NAMES = ("add", "modify", "delete")
GROUP_TYPE_NAMES = ("all", "select", "indirect", "fast_failover")
OFPG_MAX, OFPG_ALL, OFPG_ANY = 0xFFFFFF00, 0xFFFFFFFC, 0xFFFFFFFF
BUCKET = struct.Struct("!HHII4x")


def encode_buckets(buckets: tuple[Bucket, ...]) -> bytes:
    out = b""
    for b in buckets:
        acts = encode_actions(b.actions)
        out += BUCKET.pack(BUCKET.size + len(acts), b.weight, b.watch_port, b.watch_group) + acts
    return out


def decode_buckets(buf: bytes, strict: bool = True) -> list[Bucket]:
    out, off = [], 0
    while off < len(buf):
        if len(buf) - off < BUCKET.size:
            raise OFError(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET, f"bucket at byte {off}: {len(buf) - off} bytes, need 16")
        blen, weight, watch_port, watch_group = BUCKET.unpack_from(buf, off)
        if blen < BUCKET.size or blen % 8 or off + blen > len(buf):
            raise OFError(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET, f"bucket at byte {off}: bad length {blen}")
        acts = decode_actions(buf[off + BUCKET.size : off + blen], strict, bucket=True)
        out.append(Bucket(tuple(acts), weight, watch_port, watch_group))
        off += blen
    return out


def encode_group_mod(xid: int, command: str, group: Group) -> bytes:
    """A delete carries no buckets (Open vSwitch refuses a delete with buckets)."""
    body = struct.pack("!HBxI", GROUP_CMD_NAMES.index(command), GROUP_TYPE_NAMES.index(group.type), group.group_id)
    return header(OFPT_GROUP_MOD, xid, body + (encode_buckets(group.buckets) if command != "delete" else b""))


def decode_group_mod(body: bytes) -> tuple[str, Group]:
    need(body, 8, "group mod")
    command, gtype, gid = struct.unpack_from("!HBxI", body, 0)
    if command >= len(GROUP_CMD_NAMES):
        raise OFError(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_COMMAND, f"group mod command {command} is not 0..2")
    if gtype >= len(GROUP_TYPE_NAMES):
        raise OFError(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_TYPE, f"group type {gtype} is not 0..3")
    cmd = GROUP_CMD_NAMES[command]
    if gid > OFPG_MAX and not (cmd == "delete" and gid == OFPG_ALL):
        raise OFError(OFPET_GROUP_MOD_FAILED, OFPGMFC_INVALID_GROUP, f"group id {gid:#x} is reserved")
    buckets = decode_buckets(body[8:])
    try:
        return cmd, Group(gid, GROUP_TYPE_NAMES[gtype], tuple(buckets) if cmd != "delete" else ())
    except RuleError as e:
        raise OFError(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET, str(e)) from None


# ---------------------------------------------------------------- PACKET_OUT / PACKET_IN

PACKET_OUT_FIXED = struct.Struct("!IIH6x")


@dataclass(frozen=True)
class WirePacketOut:
    buffer_id: int
    in_port: int
    actions: tuple[Action, ...]
    data: bytes


def encode_packet_out(xid: int, po: WirePacketOut) -> bytes:
    acts = encode_actions(po.actions)
    return header(OFPT_PACKET_OUT, xid, PACKET_OUT_FIXED.pack(po.buffer_id, po.in_port, len(acts)) + acts + po.data)


def decode_packet_out(body: bytes) -> WirePacketOut:
    need(body, PACKET_OUT_FIXED.size, "packet out")
    buffer_id, in_port, alen = PACKET_OUT_FIXED.unpack_from(body, 0)
    if PACKET_OUT_FIXED.size + alen > len(body):
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"packet out actions_len {alen} runs past the message")
    if in_port == 0 or (0xFFFFFF00 < in_port and in_port not in (ir.OFPP_CONTROLLER, ir.OFPP_LOCAL, ir.OFPP_ANY)):
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_PORT, f"packet out in_port {in_port:#x} is invalid")
    acts = decode_actions(body[PACKET_OUT_FIXED.size : PACKET_OUT_FIXED.size + alen], packet_out=True)
    for a in acts:
        if isinstance(a, ir.Output) and a.port == ir.OFPP_TABLE and buffer_id == OFP_NO_BUFFER and len(body) == PACKET_OUT_FIXED.size + alen:
            raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT, "output:TABLE in a packet out without a packet")
    return WirePacketOut(buffer_id, in_port, tuple(acts), body[PACKET_OUT_FIXED.size + alen :])


PACKET_IN_FIXED = struct.Struct("!IHBBQ")
OFPR_NO_MATCH, OFPR_ACTION, OFPR_INVALID_TTL = 0, 1, 2


@dataclass(frozen=True)
class WirePacketIn:
    buffer_id: int
    total_len: int
    reason: int
    table_id: int
    cookie: int
    match: Match
    data: bytes


def encode_packet_in(xid: int, pi: WirePacketIn) -> bytes:
    body = PACKET_IN_FIXED.pack(pi.buffer_id, pi.total_len, pi.reason, pi.table_id, pi.cookie)
    from .ofwire_packet_in_match import encode_packet_in_match  # (Open vSwitch's order of the fields)

    return header(OFPT_PACKET_IN, xid, body + encode_packet_in_match(pi.match) + b"\0\0" + pi.data)


def decode_packet_in(body: bytes) -> WirePacketIn:
    need(body, PACKET_IN_FIXED.size + 8, "packet in")
    buffer_id, total_len, reason, table_id, cookie = PACKET_IN_FIXED.unpack_from(body, 0)
    match, msize = decode_match(body[PACKET_IN_FIXED.size :], strict=False)
    data = body[PACKET_IN_FIXED.size + msize + 2 :]
    return WirePacketIn(buffer_id, total_len, reason, table_id, cookie, match, data)


# ---------------------------------------------------------------- FLOW_REMOVED / PORT_STATUS

FLOW_REMOVED_FIXED = struct.Struct("!QHBBIIHHQQ")
OFPRR_IDLE_TIMEOUT, OFPRR_HARD_TIMEOUT, OFPRR_DELETE, OFPRR_GROUP_DELETE = 0, 1, 2, 3


@dataclass(frozen=True)
class WireFlowRemoved:
    rule: Rule
    reason: int
    duration_sec: int
    duration_nsec: int
    packet_count: int
    byte_count: int


def encode_flow_removed(xid: int, fr: WireFlowRemoved) -> bytes:
    r = fr.rule
    body = FLOW_REMOVED_FIXED.pack(r.cookie, r.priority, fr.reason, r.table, fr.duration_sec, fr.duration_nsec,
                                   r.idle_timeout, r.hard_timeout, fr.packet_count, fr.byte_count)
    return header(OFPT_FLOW_REMOVED, xid, body + encode_match(shown_match(r.match)))


def decode_flow_removed(body: bytes) -> WireFlowRemoved:
    need(body, FLOW_REMOVED_FIXED.size + 8, "flow removed")
    cookie, prio, reason, table, dsec, dnsec, idle, hard, pkts, nbytes = FLOW_REMOVED_FIXED.unpack_from(body, 0)
    match, _ = decode_match(body[FLOW_REMOVED_FIXED.size :], strict=False)
    return WireFlowRemoved(Rule(match, (), table, prio, cookie, idle, hard), reason, dsec, dnsec, pkts, nbytes)


OFPPR_ADD, OFPPR_DELETE, OFPPR_MODIFY = 0, 1, 2


def encode_port_status(xid: int, reason: int, port: WirePort) -> bytes:
    return header(OFPT_PORT_STATUS, xid, struct.pack("!B7x", reason) + encode_port(port))


def decode_port_status(body: bytes) -> tuple[int, WirePort]:
    need(body, 8 + 64, "port status")
    return body[0], decode_port(body, 8)
