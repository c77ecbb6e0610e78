"""OpenFlow 1.3 wire codec, part 1: header, OXM match, actions, instructions, ports.

Pure functions between the rule IR (``tandem.rules.ir``) and OpenFlow 1.3
bytes (OpenFlow Switch Specification 1.3.5 §7). Messages are built on these in
``ofwire_msgs.py`` and multipart bodies in ``ofwire_stats.py``.

Decoding untrusted bytes raises ``OFError`` carrying the OpenFlow error
(type, code) a switch must answer with, so the endpoint can reply with a
correct OFPT_ERROR and keep the connection. ``strict=False`` (used for what a
switch sends us) skips OXM fields the IR does not model instead of failing.
State: none. Cost: linear in message size.
"""

from __future__ import annotations

import operator
import struct
from dataclasses import dataclass

from tandem.rules import ir
from tandem.rules import nxm as NXM
from tandem.rules import packet_type as PT
from tandem.rules import ofwire_nx as NX
from tandem.rules import ofwire_clone as CLONE
from tandem.rules import ofwire_trunc as TRUNC
from tandem.rules import nsh as NSH
from tandem.rules import actset_output as ACTSET
from tandem.rules import encap as ENCAP
from tandem.rules import encap_set as ENCSET
from tandem.rules import decap as DECAP
from tandem.rules import decap_set as DECSET
from tandem.rules import tun_metadata as TM
from tandem.rules.ir import (
    Action, ApplyActions, ClearActions, DecTtl, FieldMatch, GotoTable, GroupAction, Instruction, Match,
    MeterInstruction, Output, PopVlan, PushVlan, RuleError, SetField, WriteActions, WriteMetadata,
    DecMplsTtl, PopMpls, PushMpls, SetMplsTtl, SetNwTtl, SetQueue,
)

OFP_VERSION = 0x04
OFP_HEADER = struct.Struct("!BBHI")
OFP_NO_BUFFER = 0xFFFFFFFF
OFP_MAX_MESSAGE = 0xFFFF

# message types
(OFPT_HELLO, OFPT_ERROR, OFPT_ECHO_REQUEST, OFPT_ECHO_REPLY, OFPT_EXPERIMENTER, OFPT_FEATURES_REQUEST,
 OFPT_FEATURES_REPLY, OFPT_GET_CONFIG_REQUEST, OFPT_GET_CONFIG_REPLY, OFPT_SET_CONFIG, OFPT_PACKET_IN,
 OFPT_FLOW_REMOVED, OFPT_PORT_STATUS, OFPT_PACKET_OUT, OFPT_FLOW_MOD, OFPT_GROUP_MOD, OFPT_PORT_MOD,
 OFPT_TABLE_MOD, OFPT_MULTIPART_REQUEST, OFPT_MULTIPART_REPLY, OFPT_BARRIER_REQUEST, OFPT_BARRIER_REPLY,
 OFPT_QUEUE_GET_CONFIG_REQUEST, OFPT_QUEUE_GET_CONFIG_REPLY, OFPT_ROLE_REQUEST, OFPT_ROLE_REPLY,
 OFPT_GET_ASYNC_REQUEST, OFPT_GET_ASYNC_REPLY, OFPT_SET_ASYNC, OFPT_METER_MOD) = range(30)

# error types and the codes we use
OFPET_HELLO_FAILED, OFPET_BAD_REQUEST, OFPET_BAD_ACTION, OFPET_BAD_INSTRUCTION, OFPET_BAD_MATCH = 0, 1, 2, 3, 4
OFPET_FLOW_MOD_FAILED, OFPET_GROUP_MOD_FAILED, OFPET_PORT_MOD_FAILED, OFPET_TABLE_MOD_FAILED = 5, 6, 7, 8
OFPET_SWITCH_CONFIG_FAILED, OFPET_ROLE_REQUEST_FAILED, OFPET_METER_MOD_FAILED = 10, 11, 12
OFPET_TABLE_FEATURES_FAILED = 13
OFPHFC_INCOMPATIBLE = 0
(OFPBRC_BAD_VERSION, OFPBRC_BAD_TYPE, OFPBRC_BAD_MULTIPART, OFPBRC_BAD_EXPERIMENTER, OFPBRC_BAD_EXP_TYPE,
 OFPBRC_EPERM, OFPBRC_BAD_LEN, OFPBRC_BUFFER_EMPTY, OFPBRC_BUFFER_UNKNOWN, OFPBRC_BAD_TABLE_ID,
 OFPBRC_IS_SLAVE, OFPBRC_BAD_PORT, OFPBRC_BAD_PACKET) = range(13)
OFPBAC_BAD_TYPE, OFPBAC_BAD_LEN, OFPBAC_BAD_OUT_PORT, OFPBAC_BAD_ARGUMENT = 0, 1, 4, 5
OFPBAC_BAD_EXPERIMENTER = 2
OFPBAC_BAD_OUT_GROUP, OFPBAC_MATCH_INCONSISTENT, OFPBAC_BAD_SET_TYPE, OFPBAC_BAD_SET_LEN = 9, 10, 13, 14
OFPBAC_BAD_SET_ARGUMENT = 15
OFPBAC_UNSUPPORTED_ORDER = 11
OFPBIC_UNKNOWN_INST, OFPBIC_UNSUP_INST, OFPBIC_BAD_TABLE_ID, OFPBIC_BAD_LEN = 0, 1, 2, 7
OFPBMC_BAD_TYPE, OFPBMC_BAD_LEN, OFPBMC_BAD_FIELD, OFPBMC_BAD_VALUE, OFPBMC_BAD_MASK = 0, 1, 6, 7, 8
OFPBMC_BAD_PREREQ, OFPBMC_DUP_FIELD = 9, 10
OFPBMC_BAD_WILDCARDS = 5
OFPFMFC_UNKNOWN, OFPFMFC_TABLE_FULL, OFPFMFC_BAD_TABLE_ID, OFPFMFC_OVERLAP = 0, 1, 2, 3
OFPFMFC_EPERM, OFPFMFC_BAD_TIMEOUT, OFPFMFC_BAD_COMMAND, OFPFMFC_BAD_FLAGS = 4, 5, 6, 7
OFPGMFC_GROUP_EXISTS, OFPGMFC_INVALID_GROUP, OFPGMFC_UNKNOWN_GROUP, OFPGMFC_BAD_TYPE = 0, 1, 8, 10
OFPGMFC_BAD_COMMAND, OFPGMFC_BAD_BUCKET, OFPGMFC_WATCH_UNSUPPORTED = 11, 12, 6
OFPRRFC_STALE, OFPRRFC_UNSUP, OFPRRFC_BAD_ROLE = 0, 1, 2
OFPTFFC_BAD_TABLE, OFPTFFC_EPERM = 0, 5


class OFError(Exception):
    """Bytes that an OpenFlow 1.3 switch must refuse with OFPT_ERROR(type, code)."""

    def __init__(self, etype: int, code: int, message: str) -> None:
        super().__init__(message)
        self.etype = etype
        self.code = code

    def __str__(self) -> str:
        return f"{super().__str__()} (OpenFlow error type {self.etype} code {self.code})"


def need(buf: bytes | memoryview, size: int, what: str, etype: int = OFPET_BAD_REQUEST, code: int = OFPBRC_BAD_LEN) -> None:
    if len(buf) < size:
        raise OFError(etype, code, f"{what}: {len(buf)} bytes, need {size}")


def pad8(n: int) -> int:
    return (n + 7) // 8 * 8


def header(msg_type: int, xid: int, body: bytes = b"") -> bytes:
    size = OFP_HEADER.size + len(body)
    if size > OFP_MAX_MESSAGE:
        raise ValueError(f"OpenFlow message type {msg_type} of {size} bytes exceeds 65535")
    return OFP_HEADER.pack(OFP_VERSION, msg_type, size, xid) + body


# ---------------------------------------------------------------- OXM match

OFPXMC_OPENFLOW_BASIC = 0x8000
OFPMT_OXM = 1
OXM_FIELDS = NXM.OXM_FIELDS  # (name -> (OXM basic field number, byte width); defined with the other headers)
OXM_BY_NUMBER = {num: (name, width) for name, (num, width) in OXM_FIELDS.items()}


# (name, masked?) -> (OXM header bytes, width); built once
_OXM_HEADS = {
    (name, masked): (struct.pack("!I", OFPXMC_OPENFLOW_BASIC << 16 | num << 9 | int(masked) << 8 | width * (2 if masked else 1)), width)
    for name, (num, width) in OXM_FIELDS.items() for masked in (False, True)
}


# Open vSwitch's extension fields (pkt_mark, registers, tcp_flags, ip_frag, nw_ttl,
# mpls_ttl) are sent with their NXM headers (``nxm.OPERANDS``); OVS takes NXM headers
# in an OpenFlow 1.3 match and set_field. They sort after every OXM basic field.
_NXM_ENCODE = {f: (o.cls, o.number, o.width) for f, o in NXM.OPERANDS.items()
               if f in ir.FIELDS and f not in OXM_FIELDS}
_OXM_HEADS.update({
    (name, masked): (struct.pack("!I", cls << 16 | num << 9 | int(masked) << 8 | width * (2 if masked else 1)), width)
    for name, (cls, num, width) in _NXM_ENCODE.items() for masked in (False, True)
})


# the NSH fields' experimenter headers (8 bytes: the OXM header, then the experimenter id)
_OXM_HEADS.update({
    (name, masked): (struct.pack("!II", NXM.OXM_EXPERIMENTER << 16 | num << 9 | int(masked) << 8
                                 | 4 + width * (2 if masked else 1), NXM.NSH_EXPERIMENTER), width)
    for name, (num, width) in NXM.NSH_OXM.items() for masked in (False, True)
})


# actset_output's ONF experimenter header (8 bytes; never masked)
_OXM_HEADS["actset_output", False] = (struct.pack("!II", NXM.OXM_EXPERIMENTER << 16 | NXM.ACTSET_OUTPUT_OXM[0] << 9
                                                  | 4 + NXM.ACTSET_OUTPUT_OXM[1], NXM.ONF_EXPERIMENTER), NXM.ACTSET_OUTPUT_OXM[1])


def field_head(name: str, masked: bool = False) -> bytes:
    """The 4-byte OXM (or NXM) header of IR field ``name`` (for table features)."""
    return _OXM_HEADS[name, masked][0]


def _oxm_rank(name: str) -> int:
    f = OXM_FIELDS.get(name)
    if f is None and name in NXM.NSH_OXM:  # (after every OXM basic and NXM field; nsh_ttl after nsh_flags, as OVS)
        return 0x20000 + (3 if name == "nsh_ttl" else 2 * NXM.NSH_OXM[name][0])
    if name == "actset_output":  # (after the NSH fields)
        return 0x30000
    return f[0] if f is not None else 0x10000 + (_NXM_ENCODE[name][0] << 8) + _NXM_ENCODE[name][1]


def _oxm(name: str, value: int, mask: int | None) -> bytes:
    if name in TM_FIELDS:  # (a set_field's: the fewest bytes, as Open vSwitch; rules/tun_metadata.py)
        return TM.encode_oxm(name, value, mask, fewest=True)
    head, width = _OXM_HEADS[name, mask is not None]
    if mask is None:
        return head + value.to_bytes(width, "big")
    return head + value.to_bytes(width, "big") + mask.to_bytes(width, "big")


_OXM_ORDER: dict[tuple, tuple[int, ...]] = {}  # field names (Match order) -> their OXM order


def encode_oxms(match: Match) -> bytes:
    """OXM TLVs in OXM field-number order, which puts every prerequisite
    (eth_type, ip_proto, vlan_vid) before the fields that depend on it."""
    fields = match.fields
    names = tuple([kv[0] for kv in fields])
    if "vlan_pcp" in names and match.get("vlan_pcp").mask is not None:  # (OVS's whole-TCI match)
        return _encode_tci(match)
    order = _OXM_ORDER.get(names)
    if order is None:
        for key in names:
            if isinstance(key, ir.PofField):
                raise RuleError(f"POF field {key.name} has no OpenFlow 1.3 wire form")
        order = tuple(sorted(range(len(names)), key=lambda i: _oxm_rank(names[i])))  # type: ignore[arg-type]
        if len(_OXM_ORDER) >= 4096:
            _OXM_ORDER.clear()
        _OXM_ORDER[names] = order
    heads = _OXM_HEADS
    out = []
    for i in order:
        key, fm = fields[i]
        mask = fm.mask
        if key in TM_FIELDS:  # (its TLV map's length: rules/tun_metadata.py)
            out.append(TM.encode_oxm(key, fm.value, mask))
            continue
        head, width = heads[key, mask is not None]
        out.append(head + fm.value.to_bytes(width, "big") if mask is None
                   else head + fm.value.to_bytes(width, "big") + mask.to_bytes(width, "big"))
    return b"".join(out)


_NXM_VLAN_TCI_M = struct.pack("!I", NXM.NXM_0 << 16 | 4 << 9 | 1 << 8 | 4)  # NXM_OF_VLAN_TCI_W


def _encode_tci(match: Match) -> bytes:
    """A match with a masked ``vlan_pcp``: the VLAN fields as one NXM_OF_VLAN_TCI (TCI =
    PCP << 13 | the OXM VID, whose present bit is the TCI's CFI bit), in vlan_vid's place."""
    tci, mask = ir.tci_match(match)
    rest = encode_oxms(match.without("vlan_pcp").without("vlan_vid"))
    tlv = _NXM_VLAN_TCI_M + struct.pack("!HH", tci, mask)
    # after the fields that rank before vlan_vid (in_port, metadata, eth_*): walk the rest's TLVs
    off = 0
    while off < len(rest):
        (h,) = struct.unpack_from("!I", rest, off)
        cls, num = h >> 16, (h >> 9) & 0x7F
        if cls != OFPXMC_OPENFLOW_BASIC or num > OXM_FIELDS["vlan_vid"][0]:
            break
        off += 4 + (h & 0xFF)
    return rest[:off] + tlv + rest[off:]


def encode_match(match: Match) -> bytes:
    """ofp_match (OXM), padded to 8 bytes."""
    oxms = encode_oxms(match)
    raw = struct.pack("!HH", OFPMT_OXM, 4 + len(oxms)) + oxms
    return raw + b"\0" * (pad8(len(raw)) - len(raw))


# unmasked OXM header -> (field, width, bits) for the fields that need no conversion
_OXM_EXACT = {
    OFPXMC_OPENFLOW_BASIC << 16 | num << 9 | width: (name, width, ir.FIELDS[name].bits)
    for name, (num, width) in OXM_FIELDS.items() if name in ir.FIELDS
}
_OXM_EXACT.update({cls << 16 | num << 9 | width: (name, width, ir.FIELDS[name].bits)
                   for name, (cls, num, width) in _NXM_ENCODE.items()})
del _OXM_EXACT[NXM.NXM_1 << 16 | NXM.OPERANDS["recirc_id"].number << 9 | 4]  # (its value is checked: decode_oxm)


def field_header(buf: bytes, off: int, what: str, etype: int, code: int) -> tuple[tuple, int, int, int]:
    """The OXM/NXM header at ``buf[off:]``: (key for ``NXM.HEADERS`` / OXM lookup,
    has_mask, payload length without the experimenter id, header size 4 or 8)."""
    if len(buf) - off < 4:
        raise OFError(etype, code, f"{what}: header at byte {off}: {len(buf) - off} bytes, need 4")
    h = _U32.unpack_from(buf, off)[0]
    cls, num, has_mask, length = h >> 16, (h >> 9) & 0x7F, (h >> 8) & 1, h & 0xFF
    if cls != NXM.OXM_EXPERIMENTER:
        return (cls, num), has_mask, length, 4
    if len(buf) - off < 8 or length < 4:
        raise OFError(etype, code, f"{what}: experimenter header at byte {off} is cut short")
    return (cls, num, _U32.unpack_from(buf, off + 4)[0]), has_mask, length - 4, 8


def header_field(key: tuple) -> NXM.Header | None:
    """What a header means, or None if Tandem does not know it."""
    if key[0] == OFPXMC_OPENFLOW_BASIC and len(key) == 2:
        known = OXM_BY_NUMBER.get(key[1])
        if known is not None:
            return NXM.Header(known[0], known[1]) if known[0] in ir.FIELDS else None
    return NXM.HEADERS.get(key)


def header_name(key: tuple) -> str:
    if key[0] == OFPXMC_OPENFLOW_BASIC and key[1] in OXM_BY_NUMBER:
        return OXM_BY_NUMBER[key[1]][0]
    return f"OXM class {key[0]:#x} field {key[1]}" + (f" experimenter {key[2]:#x}" if len(key) > 2 else "")


def convert_value(h: NXM.Header, value: int, mask: int | None, what: str, etype: int,
                  code: int) -> list[tuple[str, int, int | None]]:
    """A header's value (and mask) as IR (field, value, mask) parts: register views
    split into registers, NXM_OF_IN_PORT's 16-bit port numbers widened, the IP
    TOS byte and the 802.1Q TCI turned into their OpenFlow 1.3 fields. Raises
    OFError(etype, code) for what the IR cannot hold."""
    if h.field.startswith("x"):  # xregN / xxregN
        return ir.split_register(h.field, value, mask)
    if h.conv == "in_port16":
        return [("in_port", value + 0xFFFF_0000 if value >= 0xFF00 else value, None)]
    if h.conv == "tos":
        if value & 3 or (mask is not None and mask & 0xFC != 0xFC):
            raise OFError(etype, code, f"{what}: IP TOS {value:#x}: the ECN bits cannot be matched or set here")
        return [("ip_dscp", value >> 2, None)]
    if h.conv == "vlan_tci":
        m = 0xFFFF if mask is None else mask
        value &= m
        if m & ir.OFPVID_PRESENT and not value & ir.OFPVID_PRESENT:
            if value:
                raise OFError(etype, code, f"{what}: vlan_tci {value:#x}: no VLAN (CFI 0) but other bits set")
            return [("vlan_vid", 0, None)]
        out: list[tuple[str, int, int | None]] = []
        vid_mask = m & 0x1FFF
        if vid_mask:
            out.append(("vlan_vid", value & 0x1FFF, None if vid_mask == 0x1FFF else vid_mask))
        if m >> 13 == 7 and m & ir.OFPVID_PRESENT:
            out.append(("vlan_pcp", value >> 13, None))
        elif m >> 13:  # a partly masked PCP, or any PCP bits without the tag bit (untagged frames too):
            out.append(("vlan_pcp", value >> 13, m >> 13))  # the IR holds it masked (ir.tci_match)
        return out
    bits = ir.FIELDS[h.field].bits
    if mask is not None and h.trim:
        mask &= (1 << bits) - 1
    return [(h.field, value, mask)]


_DP_HASH = (NXM.NXM_1, 35)  # NXM_NX_DP_HASH
_TUN_METADATA = (40, 103)  # NXM_NX_TUN_METADATA0 .. 63
NXFMFC_INVALID_TLV_FIELD = (0xFFFF, 37)  # Open vSwitch's, a Nicira experimenter error in OpenFlow 1.3


def decode_oxm(buf: bytes | memoryview, strict: bool = True) -> tuple[list[tuple[str, FieldMatch]], int]:
    """Parse a run of OXM TLVs. Returns (fields, bytes consumed)."""
    if not isinstance(buf, bytes):
        buf = bytes(buf)
    fields: list[tuple[str, FieldMatch]] = []
    seen: set[str] = set()
    off, end = 0, len(buf)
    ir_fields = ir.FIELDS
    unpack, exact, from_bytes, new, fm_cls = _U32.unpack_from, _OXM_EXACT, int.from_bytes, tuple.__new__, FieldMatch
    while off < end:
        if end - off < 4:
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_LEN, f"OXM header at byte {off}: {end - off} bytes, need 4")
        h = unpack(buf, off)[0]
        fast = exact.get(h)
        if fast is not None:  # the common case: an exact match on a supported field (same checks, fewer steps)
            name, width, bits = fast
            nxt = off + 4 + width
            if nxt > end:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_LEN, f"OXM at byte {off}: length {width} runs past the match")
            if name in seen:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_DUP_FIELD, f"match field {name} appears twice")
            seen.add(name)
            value = from_bytes(buf[off + 4:nxt], "big")
            if value >> bits:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE, f"match field {name}: value {value:#x} wider than {bits} bits")
            fields.append((name, new(fm_cls, (value, None))))  # = FieldMatch(value, None), without its Python __new__
            off = nxt
            continue
        key, has_mask, length, hsize = field_header(buf, off, "OXM", OFPET_BAD_MATCH, OFPBMC_BAD_LEN)
        if off + hsize + length > end:
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_LEN, f"OXM at byte {off}: length {length} runs past the match")
        payload = buf[off + hsize : off + hsize + length]
        off += hsize + length
        known = header_field(key)
        if key == (OFPXMC_OPENFLOW_BASIC, PT.OXM_PACKET_TYPE):  # (OpenFlow 1.5's packet_type: rules/packet_type.py)
            if length != 4:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_LEN if not has_mask else OFPBMC_BAD_MASK,
                              f"OXM packet_type: length {length}, expected 4 (it cannot be masked)")
            value = int.from_bytes(payload, "big")
            if value != PT.PACKET_TYPE_ETHERNET and strict:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE, PT.unsupported(value))
            continue
        if known is None:
            if strict and key[0] == NXM.NXM_1 and _TUN_METADATA[0] <= key[1] <= _TUN_METADATA[1] and len(key) == 2:
                # (as Open vSwitch answers while no TLV map names the field: OneSwitch relays no NXT_TLV_TABLE_MOD)
                raise OFError(*NXFMFC_INVALID_TLV_FIELD, f"{header_name(key)}: no TLV map names it (tun_metadata)")
            if strict and key == _DP_HASH:  # (as Open vSwitch: a controller's flow may not match the datapath's hash)
                raise OFError(OFPET_BAD_REQUEST, OFPBRC_EPERM, "dp_hash cannot be matched in an OpenFlow flow")
            if strict:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_FIELD, f"{header_name(key)} is not supported by OneSwitch")
            continue
        width = known.width
        name = known.field
        width = TM.wire_width(name, width, length, has_mask)  # (tun_metadata: variable length)
        if length != width * (2 if has_mask else 1):
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_LEN, f"OXM {name}: length {length}, expected {width * (2 if has_mask else 1)}")
        value = int.from_bytes(payload[:width], "big")
        mask = int.from_bytes(payload[width:], "big") if has_mask else None
        value, mask = TM.wire_fit(name, value, mask, width)  # (tun_metadata: longer than its map, cut as OVS cuts it)
        view_bits = NXM.OPERANDS[name].bits if name in ir.REG_VIEWS else ir_fields[name].bits
        if mask is not None and name not in ir.REG_VIEWS and not ir_fields[name].maskable and not known.conv:
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_MASK, f"match field {name} cannot be masked")
        if not known.conv and (value >> view_bits or (mask is not None and not known.trim and mask >> view_bits)):
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE, f"match field {name}: value {value:#x} wider than {view_bits} bits")
        if mask is not None and value & ~mask:
            if strict:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_WILDCARDS, f"match field {name}: value {value:#x} has bits outside mask {mask:#x}")
            value &= mask
        if name == "recirc_id" and value and strict:  # (as Open vSwitch answers a controller)
            raise OFError(OFPET_BAD_REQUEST, OFPBRC_EPERM, f"match field {name}: value {value:#x}: a controller's flow "
                          "may match only 0 (a packet not recirculated)")
        if name == "actset_output" and strict and not ACTSET.is_port_value(value):  # (as Open vSwitch answers)
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE, f"match field {name}: {value:#x} is no port "
                          f"(0..{ACTSET.MAX_PORT:#x} or a reserved port)")
        parts = convert_value(known, value, mask, f"match field {name}", OFPET_BAD_MATCH, OFPBMC_BAD_VALUE)
        if name in ir.REG_VIEWS:  # as OVS: a view may not overlap a register matched before
            first, count = ir.REG_VIEWS[name]
            covered = [f"reg{first + k}" for k in range(count)]
        else:
            covered = [name]
        if any(c in seen for c in covered):
            raise OFError(OFPET_BAD_MATCH, OFPBMC_DUP_FIELD, f"match field {name} appears twice (or overlaps a register)")
        for fname, v, m in parts:
            if fname in seen:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_DUP_FIELD, f"match field {fname} appears twice")
            spec = ir_fields[fname]
            if m is not None:
                if m == (1 << spec.bits) - 1 and known.conv != "vlan_tci":  # (convert_value chose the TCI's: ir.tci_match)
                    m = None
                elif not spec.maskable and known.conv != "vlan_tci":
                    raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_MASK, f"match field {fname} cannot be masked")
            seen.add(fname)
            fields.append((fname, FieldMatch(v, m)))
    return fields, off


def check_prereqs(fields: list[tuple[str, FieldMatch]]) -> None:
    for k, _ in fields:
        if k in _HAS_PREREQS:
            break
    else:
        return  # no field has a prerequisite (in_port, eth_*, eth_type, vlan_vid, metadata ...)
    have = {k: fm for k, fm in fields}
    frag = have.get("ip_frag")
    if frag is not None and frag.value & ir.IP_FRAG_LATER:
        for key in have.keys() & ir.L4_HEADER_FIELDS:
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_PREREQ, f"match field {key}: a non-first fragment (ip_frag) has no transport header")
    for key in have:
        spec = ir.FIELDS[key]
        if spec.prereq_ct:
            st = have.get("ct_state")
            if st is None or not ir.ct_state_valid(st.value, st.mask):
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_PREREQ, f"match field {key} needs ct_state +trk-inv")
        for pf, pv in spec.prereqs:
            fm = have.get(pf)
            if pf == "vlan_vid":
                ok = fm is not None and bool(fm.value & ir.OFPVID_PRESENT) or have[key].mask is not None  # (ir.tci_match)
            else:
                ok = fm is not None and fm.mask is None and fm.value == pv
            if not ok:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_PREREQ, f"match field {key} needs {pf}={pv:#x}")
        for pf, options in spec.prereq_any:
            fm = have.get(pf)
            if fm is None or fm.mask is not None or fm.value not in options:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_PREREQ, f"match field {key} needs {pf} in {{{', '.join(hex(o) for o in options)}}}")
        for pf in spec.prereq_zero:
            fm = have.get(pf)
            if fm is not None and fm.value != 0:
                raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_PREREQ, f"match field {key} needs {pf} 0 (or unmatched)")


_U32 = struct.Struct("!I")
_U16_PAIR = struct.Struct("!HH")
_HAS_PREREQS = frozenset(k for k, spec in ir.FIELDS.items() if spec.prereqs or spec.prereq_any or spec.prereq_ct)
_BY_NAME = operator.itemgetter(0)


def _checked_match(fields: list[tuple[str, FieldMatch]]) -> Match:
    """A Match from fields decode_oxm has already checked (no duplicates, values and masks
    within the field's width, masks only on maskable fields, value inside its mask):
    Match's own checks would repeat that work on the FLOW_MOD hot path. OXM keys are
    field names, which Match orders by name."""
    m = object.__new__(Match)
    object.__setattr__(m, "fields", tuple(sorted(fields, key=_BY_NAME)))
    return m


def decode_match(buf: bytes | memoryview, strict: bool = True) -> tuple[Match, int]:
    """Parse an ofp_match at the start of ``buf``. Returns (match, padded size)."""
    need(buf, 4, "ofp_match", OFPET_BAD_MATCH, OFPBMC_BAD_LEN)
    mtype, length = _U16_PAIR.unpack_from(buf, 0)
    if mtype != OFPMT_OXM:
        raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_TYPE, f"match type {mtype} is not OXM (1)")
    if length < 4 or pad8(length) > len(buf):
        raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_LEN, f"match length {length} does not fit {len(buf)} bytes")
    fields, _ = decode_oxm(buf[4:length], strict)
    if strict:
        check_prereqs(fields)
    if strict and ("eth_type", FieldMatch(NSH.ETH_TYPE_NSH)) in fields:
        try:
            NSH.check_match({k: (fm.value, fm.mask) for k, fm in fields})
        except RuleError as e:  # (an MD type Open vSwitch refuses)
            raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE, str(e)) from None
    try:
        return _checked_match(fields), pad8(length)
    except RuleError as e:
        raise OFError(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE, str(e)) from None


# ---------------------------------------------------------------- actions

OFPAT_OUTPUT, OFPAT_COPY_TTL_OUT, OFPAT_COPY_TTL_IN = 0, 11, 12
OFPAT_PUSH_VLAN, OFPAT_POP_VLAN, OFPAT_GROUP, OFPAT_DEC_NW_TTL, OFPAT_SET_FIELD = 17, 18, 22, 24, 25
OFPAT_SET_MPLS_TTL, OFPAT_DEC_MPLS_TTL, OFPAT_PUSH_MPLS, OFPAT_POP_MPLS = 15, 16, 19, 20
OFPAT_SET_QUEUE, OFPAT_SET_NW_TTL = 21, 23
OFPAT_EXPERIMENTER = 0xFFFF


def encode_action(a: Action) -> bytes:
    if isinstance(a, Output):
        return struct.pack("!HHIH6x", OFPAT_OUTPUT, 16, a.port, a.max_len)
    if isinstance(a, GroupAction):
        return struct.pack("!HHI", OFPAT_GROUP, 8, a.group_id)
    if isinstance(a, PushVlan):
        return struct.pack("!HHH2x", OFPAT_PUSH_VLAN, 8, a.ethertype)
    if isinstance(a, PopVlan):
        return struct.pack("!HH4x", OFPAT_POP_VLAN, 8)
    if isinstance(a, DecTtl):
        if a.ids is not None:  # Open vSwitch's dec_ttl(ids)
            return NX.encode_nx(a, _oxm)
        return struct.pack("!HH4x", OFPAT_DEC_NW_TTL, 8)
    if isinstance(a, PushMpls):
        return struct.pack("!HHH2x", OFPAT_PUSH_MPLS, 8, a.ethertype)
    if isinstance(a, PopMpls):
        return struct.pack("!HHH2x", OFPAT_POP_MPLS, 8, a.ethertype)
    if isinstance(a, SetMplsTtl):
        return struct.pack("!HHB3x", OFPAT_SET_MPLS_TTL, 8, a.ttl)
    if isinstance(a, DecMplsTtl):
        return struct.pack("!HH4x", OFPAT_DEC_MPLS_TTL, 8)
    if isinstance(a, SetNwTtl):
        return struct.pack("!HHB3x", OFPAT_SET_NW_TTL, 8, a.ttl)
    if isinstance(a, SetQueue):
        return struct.pack("!HHI", OFPAT_SET_QUEUE, 8, a.queue_id)
    if isinstance(a, SetField):
        if not isinstance(a.field, str):
            raise RuleError(f"set_field on POF field {a.field.name} has no OpenFlow 1.3 wire form")
        if a.mask is not None:
            return NX.encode_nx(a, _oxm)
        oxm = _oxm(a.field, a.value, None)
        size = pad8(4 + len(oxm))
        return struct.pack("!HH", OFPAT_SET_FIELD, size) + oxm + b"\0" * (size - 4 - len(oxm))
    if isinstance(a, _NX_ACTIONS):
        return NX.encode_nx(a, _oxm)
    if isinstance(a, ir.Clone):
        return CLONE.encode_clone(a, encode_actions)
    if isinstance(a, ir.OutputTrunc):
        return TRUNC.encode_output_trunc(a)
    raise RuleError(f"action {a!r} has no OpenFlow 1.3 wire form")


_NX_ACTIONS = (ir.MoveField, ir.StackPush, ir.StackPop, ir.Note, ir.Exit, ir.PopQueue, ir.Sample, ir.CheckPktLarger,
               ir.Conjunction, ir.Resubmit, ir.OutputReg, ir.Ct, ir.CtClear, ir.Learn, ir.Controller, ir.Multipath, ir.Bundle)
_NX_ACTIONS = _NX_ACTIONS + (ir.FinTimeout,)  # (fin_timeout)


_NX_ACTIONS = _NX_ACTIONS + (ir.DecNshTtl,)  # (nsh)
_NX_ACTIONS = _NX_ACTIONS + (ir.EncapNsh, ir.EncapEthernet)  # (encap)
_NX_ACTIONS = _NX_ACTIONS + (ir.Decap,)  # (decap)
_NX_ACTIONS = _NX_ACTIONS + (ir.DeleteField,)  # (tun_metadata)
TM_FIELDS = frozenset(ir.TUN_METADATA_FIELDS)


def _set_field_entry(body: bytes, off: int, etype: int = OFPET_BAD_ACTION) -> list[tuple[str, int, int | None]]:
    """The one OXM TLV of a set_field (or reg_load2) at ``body[off:]`` as IR
    (field, value, mask) parts; the rest of ``body`` must be zero padding."""
    key, has_mask, length, hsize = field_header(body, off, "set_field", etype, OFPBAC_BAD_SET_LEN)
    known = header_field(key)
    if known is None:
        raise OFError(etype, OFPBAC_BAD_SET_TYPE, f"set_field on {header_name(key)} is not supported")
    width = known.width
    width = TM.wire_width(known.field, width, length, has_mask, write=True)  # (tun_metadata: variable length; ANY)
    if length != width * (2 if has_mask else 1) or off + hsize + length > len(body):
        raise OFError(etype, OFPBAC_BAD_SET_LEN, f"set_field {known.field}: bad length {length}")
    if any(body[off + hsize + length:]):
        raise OFError(etype, OFPBAC_BAD_SET_ARGUMENT, f"set_field {known.field}: padding is not zero")
    at = off + hsize
    value = int.from_bytes(body[at:at + width], "big")
    mask = int.from_bytes(body[at + width:at + 2 * width], "big") if has_mask else None
    value, mask = TM.wire_fit(known.field, value, mask, width)  # (tun_metadata: longer than its map, cut as OVS cuts it)
    if mask is not None and known.conv:
        raise OFError(etype, OFPBAC_BAD_SET_ARGUMENT, f"set_field {known.field}: this header cannot be masked here")
    return convert_value(known, value, mask, f"set_field {known.field}", etype, OFPBAC_BAD_SET_ARGUMENT)


def encode_actions(actions: tuple[Action, ...] | list[Action]) -> bytes:
    return b"".join(encode_action(a) for a in actions)


def decode_actions(buf: bytes | memoryview, strict: bool = True, bucket: bool = False,
                   packet_out: bool = False) -> list[Action]:
    """The actions of a bucket, packet-out or write_actions (a Nicira write_metadata,
    an instruction, is refused as Open vSwitch refuses it there). In a ``bucket``,
    which Open vSwitch runs as an action set, check_pkt_larger, clone and
    output_trunc are taken and do nothing, as there; a ``packet_out`` takes clone,
    check_pkt_larger and output_trunc (OneSwitch's endpoint carries them out: docs/endpoint.md)."""
    out = _decode_actions(buf, strict)
    if any(isinstance(a, WriteMetadata) for a in out):
        raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, "Nicira write_metadata is an instruction: only last in apply_actions")
    why = ENCSET.packet_out_problem(out) if packet_out and ENCAP.has_encap(out) else None  # (encap_set.py)
    if why:
        raise OFError(OFPET_BAD_ACTION, *why)
    if ENCAP.has_encap(out) and not packet_out and (bucket or not ENCSET.written_encap(out) or ENCAP.has_encap(
            [a for a in out if type(a) is not ir.EncapEthernet])):  # (docs/endpoint.md; written: encap_set.py)
        raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, "encap is supported in a flow's apply_actions only")
    if DECAP.has_decap(out) and (bucket or packet_out or not DECSET.written_decap(out)):  # (written: decap_set.py)
        raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, "decap is supported in a flow's apply_actions only")
    if bucket:
        return out
    if not packet_out and any(isinstance(a, ir.CheckPktLarger) for a in out):  # (docs/endpoint.md: OVS forks what follows)
        raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, "check_pkt_larger is supported in a flow's apply_actions only")
    if not packet_out and any(isinstance(a, ir.Clone) for a in out):  # (docs/endpoint.md)
        raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, "clone is supported in a flow's apply_actions only")
    if not packet_out and any(isinstance(a, ir.OutputTrunc) for a in out):  # (docs/endpoint.md; a PACKET_OUT's: poctl)
        raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, "output(port=P,max_len=N) is supported in a flow's apply_actions only")
    return out


def _decode_actions(buf: bytes | memoryview, strict: bool = True) -> list:
    """Actions, with a Nicira write_metadata as a ``WriteMetadata`` instruction where it stood."""
    out: list = []
    off = 0
    while off < len(buf):
        need(buf[off:], 4, f"action at byte {off}", OFPET_BAD_ACTION, OFPBAC_BAD_LEN)
        atype, alen = struct.unpack_from("!HH", buf, off)
        if alen < 8 or alen % 8 or off + alen > len(buf):
            raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_LEN, f"action type {atype} at byte {off}: bad length {alen}")
        body = bytes(buf[off : off + alen])
        off += alen
        if atype == OFPAT_OUTPUT:
            if alen != 16:
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_LEN, f"output action length {alen}, expected 16")
            port, max_len = struct.unpack_from("!IH", body, 4)
            if 0xFFFFFF00 < port < ir.OFPP_IN_PORT or port == ir.OFPP_ANY:  # (port 0 is no port: Open vSwitch takes it)
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_OUT_PORT, f"output to invalid port {port:#x}")
            out.append(Output(port, max_len))
        elif atype == OFPAT_GROUP:
            (gid,) = struct.unpack_from("!I", body, 4)
            if gid > 0xFFFFFF00:
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_OUT_GROUP, f"group action to reserved group {gid:#x}")
            out.append(GroupAction(gid))
        elif atype == OFPAT_PUSH_VLAN:
            (eth,) = struct.unpack_from("!H", body, 4)
            if eth not in (ir.ETH_TYPE_VLAN, ir.ETH_TYPE_QINQ):
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT, f"push_vlan ethertype {eth:#x} is not 0x8100/0x88a8")
            out.append(PushVlan(eth))
        elif atype == OFPAT_POP_VLAN:
            out.append(PopVlan())
        elif atype == OFPAT_DEC_NW_TTL:
            out.append(DecTtl())
        elif atype in (OFPAT_PUSH_MPLS, OFPAT_POP_MPLS):
            if alen != 8:
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_LEN, f"push/pop_mpls action length {alen}, expected 8")
            (eth,) = struct.unpack_from("!H", body, 4)
            if atype == OFPAT_PUSH_MPLS:
                if eth not in (ir.ETH_TYPE_MPLS, ir.ETH_TYPE_MPLS_MC):
                    raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT, f"push_mpls ethertype {eth:#x} is not 0x8847/0x8848")
                out.append(PushMpls(eth))
            else:
                out.append(PopMpls(eth))
        elif atype in (OFPAT_SET_MPLS_TTL, OFPAT_SET_NW_TTL):
            if alen != 8:
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_LEN, f"set TTL action length {alen}, expected 8")
            out.append(SetMplsTtl(body[4]) if atype == OFPAT_SET_MPLS_TTL else SetNwTtl(body[4]))
        elif atype == OFPAT_DEC_MPLS_TTL:
            out.append(DecMplsTtl())
        elif atype == OFPAT_SET_QUEUE:
            if alen != 8:
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_LEN, f"set_queue action length {alen}, expected 8")
            out.append(SetQueue(struct.unpack_from("!I", body, 4)[0]))
        elif atype == OFPAT_SET_FIELD:
            need(body, 8, "set_field action", OFPET_BAD_ACTION, OFPBAC_BAD_SET_LEN)
            if (struct.unpack_from("!I", body, 4)[0] >> 8) & 1:
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_SET_LEN, "set_field with a mask (OpenFlow 1.3 has none)")
            for name, value, _ in _set_field_entry(body, 4):
                try:
                    out.append(SetField(name, value))
                except RuleError as e:
                    raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_SET_ARGUMENT, str(e)) from None
        elif atype == OFPAT_EXPERIMENTER and TRUNC.is_output_trunc(body):
            try:
                out.append(TRUNC.decode_output_trunc(body))
            except NX.NxError as e:
                if strict:
                    raise OFError(e.etype, e.code, str(e)) from None
        elif atype == OFPAT_EXPERIMENTER and CLONE.is_clone(body):
            try:
                out.append(CLONE.decode_clone(body, lambda b: _decode_actions(b, strict)))
            except NX.NxError as e:
                if strict:
                    raise OFError(e.etype, e.code, str(e)) from None
        elif atype == OFPAT_EXPERIMENTER:
            try:
                out += NX.decode_nx(body, strict, _set_field_entry)
            except NX.NxError as e:
                if strict:
                    raise OFError(e.etype, e.code, str(e)) from None
        else:
            if strict:
                raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, f"action type {atype} is not supported by OneSwitch")
    return out


# ---------------------------------------------------------------- instructions

OFPIT_GOTO_TABLE, OFPIT_WRITE_METADATA, OFPIT_WRITE_ACTIONS, OFPIT_APPLY_ACTIONS = 1, 2, 3, 4
OFPIT_CLEAR_ACTIONS, OFPIT_METER, OFPIT_EXPERIMENTER = 5, 6, 0xFFFF


def encode_instruction(ins: Instruction) -> bytes:
    if isinstance(ins, MeterInstruction):
        return struct.pack("!HHI", OFPIT_METER, 8, ins.meter_id)
    if isinstance(ins, GotoTable):
        return struct.pack("!HHB3x", OFPIT_GOTO_TABLE, 8, ins.table)
    if isinstance(ins, WriteMetadata):
        return struct.pack("!HH4xQQ", OFPIT_WRITE_METADATA, 24, ins.value, ins.mask)
    if isinstance(ins, ClearActions):
        return struct.pack("!HH4x", OFPIT_CLEAR_ACTIONS, 8)
    if isinstance(ins, (ApplyActions, WriteActions)):
        acts = encode_actions(ins.actions)
        kind = OFPIT_APPLY_ACTIONS if isinstance(ins, ApplyActions) else OFPIT_WRITE_ACTIONS
        return struct.pack("!HH4x", kind, 8 + len(acts)) + acts
    raise RuleError(f"instruction {ins!r} has no OpenFlow 1.3 wire form")


_INSTRUCTIONS_WIRE: dict[tuple[Instruction, ...], bytes] = {}
_INSTRUCTIONS_BY_ID: dict[int, tuple[tuple[Instruction, ...], bytes]] = {}


def encode_instructions(instructions: tuple[Instruction, ...]) -> bytes:
    """Instructions to wire bytes; remembered by value (rules share a few instruction
    lists: output:N, the PCIe tag push, goto), bounded like decode_instructions_cached.
    Translated rules share one tuple object per list, so the object itself is looked
    up first (hashing a tuple of instructions runs Python code per action); the entry
    holds the tuple, so its id cannot be reused while remembered."""
    hit = _INSTRUCTIONS_BY_ID.get(id(instructions))
    if hit is not None and hit[0] is instructions:
        return hit[1]
    try:
        got = _INSTRUCTIONS_WIRE.get(instructions)
    except TypeError:  # an unhashable part: encode without remembering
        return b"".join(encode_instruction(i) for i in instructions)
    if got is None:
        got = b"".join(encode_instruction(i) for i in instructions)
        if len(_INSTRUCTIONS_WIRE) >= 4096:
            _INSTRUCTIONS_WIRE.clear()
        _INSTRUCTIONS_WIRE[instructions] = got
    if len(_INSTRUCTIONS_BY_ID) >= 4096:
        _INSTRUCTIONS_BY_ID.clear()
    _INSTRUCTIONS_BY_ID[id(instructions)] = (instructions, got)
    return got


_INSTRUCTIONS_SEEN: dict[bytes, tuple[Instruction, ...]] = {}


def decode_instructions_cached(buf: bytes) -> tuple[Instruction, ...]:
    """decode_instructions (strict), in Rule's instruction order, remembered by the bytes: controllers send the same
    few instruction lists (output:N, goto_table:1 ...) again and again. The result is
    immutable; errors are not remembered. Bounded: cleared when it grows past 4096."""
    got = _INSTRUCTIONS_SEEN.get(buf)
    if got is None:
        # in Rule's order (as Rule() would sort them), so a decoder may build the Rule directly
        got = tuple(sorted(decode_instructions(buf), key=lambda i: ir.INSTRUCTION_ORDER[type(i)]))
        if len(_INSTRUCTIONS_SEEN) >= 4096:
            _INSTRUCTIONS_SEEN.clear()
        _INSTRUCTIONS_SEEN[buf] = got
    return got


def decode_instructions(buf: bytes | memoryview, strict: bool = True) -> list[Instruction]:
    out: list[Instruction] = []
    seen: set[int] = set()
    off = 0
    while off < len(buf):
        need(buf[off:], 4, f"instruction at byte {off}", OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN)
        itype, ilen = struct.unpack_from("!HH", buf, off)
        if ilen < 8 or ilen % 8 or off + ilen > len(buf):
            raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN, f"instruction type {itype} at byte {off}: bad length {ilen}")
        body = bytes(buf[off : off + ilen])
        off += ilen
        if itype in seen:
            raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_UNSUP_INST, f"instruction type {itype} appears twice")
        seen.add(itype)
        if itype == OFPIT_GOTO_TABLE:
            if ilen != 8:
                raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN, "goto_table length must be 8")
            out.append(GotoTable(body[4]))
        elif itype == OFPIT_WRITE_METADATA:
            if ilen != 24:
                raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN, "write_metadata length must be 24")
            value, mask = struct.unpack_from("!QQ", body, 8)
            out.append(WriteMetadata(value, mask))
        elif itype == OFPIT_APPLY_ACTIONS:
            acts = tuple(_decode_actions(body[8:], strict))
            if any(isinstance(a, WriteMetadata) for a in acts):
                out.append(_nx_write_metadata(acts, buf))
                acts = acts[:-1]
                if not acts:  # (Open vSwitch sends no apply_actions back then)
                    continue
            why = ENCAP.form_problem(acts) if ENCAP.has_encap(acts) else None  # (encap.py)
            why = None if why and ENCSET.open_at_end(acts) else why  # (encap_set.py: checked with write_actions below)
            if why:
                raise OFError(OFPET_BAD_ACTION, 3, why)  # OFPBAC_BAD_EXP_TYPE, as the Nicira forms OneSwitch does not run
            why = DECAP.form_problem(acts) if DECAP.has_decap(acts) else None  # (decap.py; the match: endpoint)
            why = None if why and DECSET.open_at_end(acts) else why  # (decap_set.py: checked with write_actions below)
            if why:
                raise OFError(OFPET_BAD_ACTION, 3, why)
            out.append(ApplyActions(acts))
        elif itype == OFPIT_WRITE_ACTIONS:
            acts = tuple(decode_actions(body[8:], strict))
            if itype == OFPIT_WRITE_ACTIONS:
                for a in acts:
                    if type(a) in ir.NOT_IN_ACTION_SET:
                        raise OFError(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE, f"{type(a).__name__} cannot be written to the action set")
            out.append(WriteActions(acts))
        elif itype == OFPIT_CLEAR_ACTIONS:
            out.append(ClearActions())
        elif itype == OFPIT_METER:
            if ilen != 8:
                raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN, "meter instruction length must be 8")
            (meter_id,) = struct.unpack_from("!I", body, 4)
            try:
                out.append(MeterInstruction(meter_id))
            except RuleError as e:
                raise OFError(OFPET_METER_MOD_FAILED, 2, str(e)) from None  # OFPMMFC_INVALID_METER
        else:
            if strict:
                raise OFError(OFPET_BAD_INSTRUCTION, OFPBIC_UNKNOWN_INST, f"instruction type {itype} is unknown")
    why = ENCSET.problem(next((i.actions for i in out if type(i) is ApplyActions), ()), out) \
        if _ENCAP_HEAD in bytes(buf) else None  # (encap_set.py; the action's bytes: a cheap pre-test)
    if why:
        raise OFError(OFPET_BAD_ACTION, 3, why)  # OFPBAC_BAD_EXP_TYPE, as the encap forms OneSwitch does not run
    why = DECSET.problem(next((i.actions for i in out if type(i) is ApplyActions), ()), out) \
        if _DECAP_HEAD in bytes(buf) and _decap_split(out) else None  # (decap_set.py)
    if why:
        raise OFError(OFPET_BAD_ACTION, 3, why)  # OFPBAC_BAD_EXP_TYPE, as the decap forms OneSwitch does not run
    if sum(isinstance(i, WriteMetadata) for i in out) > 1:  # a Nicira one and OpenFlow's
        raise OFError(OFPET_BAD_ACTION, OFPBAC_UNSUPPORTED_ORDER, "write_metadata twice (a Nicira action and the instruction)")
    why = ir.conjunction_problem(out) if _CONJ_HEAD in bytes(buf) else None  # (the action's bytes: a cheap pre-test)
    if why:
        raise OFError(*NX.BAD_CONJUNCTION, why)
    return out


_CONJ_HEAD = struct.pack("!IH", NX.NX_VENDOR_ID, NX.NXAST_CONJUNCTION)
_ENCAP_HEAD = struct.pack("!IH", NX.NX_VENDOR_ID, ENCAP.NXAST_ENCAP)
_DECAP_HEAD = struct.pack("!IH", NX.NX_VENDOR_ID, DECAP.NXAST_DECAP)


def _decap_split(instrs) -> bool:
    """Does a rule's write_actions hold a decap, or its apply-actions end in a lone decap (decap_set.py)?"""
    return any(type(i) is WriteActions and DECSET.written_decap(i.actions) for i in instrs) or any(
        type(i) is ApplyActions and DECSET.open_at_end(i.actions) for i in instrs)


def _nx_write_metadata(acts: tuple, buf: bytes | memoryview) -> WriteMetadata:
    """The Nicira write_metadata in apply_actions, which Open vSwitch makes the
    write_metadata instruction: only as the last action, and only without
    clear_actions or write_actions (which would run before it), else UNSUPPORTED_ORDER."""
    last = acts[-1]
    if not isinstance(last, WriteMetadata) or sum(isinstance(a, WriteMetadata) for a in acts) > 1:
        raise OFError(OFPET_BAD_ACTION, OFPBAC_UNSUPPORTED_ORDER, "Nicira write_metadata must be the last apply action")
    off = 0
    while off + 4 <= len(buf):
        itype, ilen = struct.unpack_from("!HH", buf, off)
        if itype in (OFPIT_CLEAR_ACTIONS, OFPIT_WRITE_ACTIONS, OFPIT_WRITE_METADATA):
            raise OFError(OFPET_BAD_ACTION, OFPBAC_UNSUPPORTED_ORDER,
                          "Nicira write_metadata in apply_actions runs after clear_actions, write_actions and write_metadata")
        off += max(ilen, 8)
    return last


# ---------------------------------------------------------------- ports

OFP_PORT = struct.Struct("!I4x6s2x16sIIIIIIII")
OFPPS_LINK_DOWN = 1
OFPPC_PORT_DOWN = 1
OFPPF_10GB_FD, OFPPF_COPPER = 1 << 6, 1 << 11


@dataclass(frozen=True)
class WirePort:
    port_no: int
    name: str
    hw_addr: int = 0
    config: int = 0
    state: int = 0
    curr: int = OFPPF_10GB_FD | OFPPF_COPPER
    advertised: int = 0
    supported: int = 0
    peer: int = 0
    curr_speed: int = 10_000_000
    max_speed: int = 10_000_000


def encode_port(p: WirePort) -> bytes:
    return OFP_PORT.pack(p.port_no, p.hw_addr.to_bytes(6, "big"), p.name.encode()[:15].ljust(16, b"\0"), p.config,
                         p.state, p.curr, p.advertised, p.supported, p.peer, p.curr_speed, p.max_speed)


def decode_port(buf: bytes | memoryview, off: int = 0) -> WirePort:
    need(buf[off:], OFP_PORT.size, "ofp_port")
    no, hw, name, *rest = OFP_PORT.unpack_from(buf, off)
    return WirePort(no, name.split(b"\0", 1)[0].decode(errors="replace"), int.from_bytes(hw, "big"), *rest)
