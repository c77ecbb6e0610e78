"""Nicira's TLV table messages: Open vSwitch's map from Geneve option (class, type,
length) to the fields ``tun_metadata0``…``63`` (``ovs-ofctl add-tlv-map``,
``del-tlv-map``, ``dump-tlv-map``). NXT_TLV_TABLE_MOD (add, delete, clear),
NXT_TLV_TABLE_REQUEST and its reply, and ``apply_tlv_mod``: a map after one
table mod, refused with Open vSwitch 3.1's errors (NXTTMFC_*, Nicira
experimenter errors in OpenFlow 1.3). Pure, no I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .ofwire import OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, OFError
from .ofwire_packet_in2 import nx_message

NXT_TLV_TABLE_MOD, NXT_TLV_TABLE_REQUEST, NXT_TLV_TABLE_REPLY = 24, 25, 26
TLV_SUBTYPES = frozenset({NXT_TLV_TABLE_MOD, NXT_TLV_TABLE_REQUEST})
NXTTMC_ADD, NXTTMC_DELETE, NXTTMC_CLEAR = 0, 1, 2
COMMANDS = {"add": NXTTMC_ADD, "delete": NXTTMC_DELETE, "clear": NXTTMC_CLEAR}
# Open vSwitch's errors (type 0xffff: Nicira experimenter errors in OpenFlow 1.2+)
NXTTMFC_BAD_COMMAND = (0xFFFF, 16)
NXTTMFC_BAD_OPT_LEN = (0xFFFF, 17)
NXTTMFC_BAD_FIELD_IDX = (0xFFFF, 18)
NXTTMFC_TABLE_FULL = (0xFFFF, 19)
NXTTMFC_ALREADY_MAPPED = (0xFFFF, 20)
NXTTMFC_DUP_ENTRY = (0xFFFF, 21)
MAX_FIELDS = 64  # tun_metadata0..63
MAX_OPTION_SPACE = 256  # bytes of option data in all (Open vSwitch's TUN_METADATA_TOT_OPT_SIZE)
MAX_OPTION_LEN = 124  # one option's data, a multiple of 4
_MAP = struct.Struct("!HBBH2x")


@dataclass(frozen=True)
class TlvMap:
    """One mapping: Geneve option ``option_class``/``option_type`` with
    ``option_len`` bytes of data is ``tun_metadata<index>``."""

    option_class: int
    option_type: int
    option_len: int
    index: int


def _encode_maps(maps: list[TlvMap] | tuple[TlvMap, ...]) -> bytes:
    return b"".join(_MAP.pack(m.option_class, m.option_type, m.option_len, m.index) for m in maps)


def encode_tlv_table_mod(xid: int, command: int, maps: list[TlvMap] | tuple[TlvMap, ...] = ()) -> bytes:
    return nx_message(xid, NXT_TLV_TABLE_MOD, struct.pack("!H6x", command) + _encode_maps(maps))


def encode_tlv_table_request(xid: int) -> bytes:
    return nx_message(xid, NXT_TLV_TABLE_REQUEST, b"")


def encode_tlv_table_reply(xid: int, maps: dict[int, TlvMap]) -> bytes:
    """The reply: Open vSwitch's limits, then the mappings in index order."""
    body = struct.pack("!IH10x", MAX_OPTION_SPACE, MAX_FIELDS) + _encode_maps([maps[i] for i in sorted(maps)])
    return nx_message(xid, NXT_TLV_TABLE_REPLY, body)


def _decode_maps(raw: bytes, what: str) -> list[TlvMap]:
    if len(raw) % _MAP.size:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"{what}: {len(raw)} bytes of mappings, not a multiple of 8")
    out = []
    for off in range(0, len(raw), _MAP.size):
        cls, typ, length, index = _MAP.unpack_from(raw, off)
        if length % 4 or length > MAX_OPTION_LEN:  # (as Open vSwitch checks, in this order)
            raise OFError(*NXTTMFC_BAD_OPT_LEN, f"{what}: option length {length} is not a multiple of 4 up to {MAX_OPTION_LEN}")
        if index >= MAX_FIELDS:
            raise OFError(*NXTTMFC_BAD_FIELD_IDX, f"{what}: tun_metadata{index} does not exist (0..{MAX_FIELDS - 1})")
        out.append(TlvMap(cls, typ, length, index))
    return out


def decode_tlv_table_mod(body: bytes) -> tuple[int, list[TlvMap]]:
    """(command, mappings) of an NXT_TLV_TABLE_MOD (``body``: after the OpenFlow header)."""
    if len(body) < 16:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"NXT_TLV_TABLE_MOD of {len(body)} bytes, need 16")
    (command,) = struct.unpack_from("!H", body, 8)
    if command > NXTTMC_CLEAR:
        raise OFError(*NXTTMFC_BAD_COMMAND, f"NXT_TLV_TABLE_MOD: command {command} is not add (0), delete (1) or clear (2)")
    return command, _decode_maps(body[16:], "NXT_TLV_TABLE_MOD")


def decode_tlv_table_reply(body: bytes) -> tuple[int, int, list[TlvMap]]:
    """(max option space, max fields, mappings) of an NXT_TLV_TABLE_REPLY body."""
    if len(body) < 24:
        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"NXT_TLV_TABLE_REPLY of {len(body)} bytes, need 24")
    space, fields = struct.unpack_from("!IH", body, 8)
    return space, fields, _decode_maps(body[24:], "NXT_TLV_TABLE_REPLY")


def apply_tlv_mod(table: dict[int, TlvMap], command: int, maps: list[TlvMap]) -> dict[int, TlvMap]:
    """The map (index -> mapping) after one table mod, as Open vSwitch 3.1 makes it:
    ``add`` maps each in turn and takes none if one fails (an index already mapped,
    an option already mapped to another index, more than 256 bytes of options in
    all); ``delete`` unmaps the indexes (an unmapped one is no error); ``clear``
    unmaps all. ``table`` is not changed."""
    if command == NXTTMC_CLEAR:
        return {}
    new = dict(table)
    if command == NXTTMC_DELETE:
        for m in maps:
            new.pop(m.index, None)
        return new
    for m in maps:
        if m.index in new:
            raise OFError(*NXTTMFC_ALREADY_MAPPED, f"NXT_TLV_TABLE_MOD: tun_metadata{m.index} is already mapped")
        if any((o.option_class, o.option_type) == (m.option_class, m.option_type) for o in new.values()):
            raise OFError(*NXTTMFC_DUP_ENTRY, f"NXT_TLV_TABLE_MOD: option class {m.option_class:#x} type "
                          f"{m.option_type:#x} is already mapped to another field")
        new[m.index] = m
        if sum(o.option_len for o in new.values()) > MAX_OPTION_SPACE:
            raise OFError(*NXTTMFC_TABLE_FULL, f"NXT_TLV_TABLE_MOD: more than {MAX_OPTION_SPACE} bytes of options in all")
    return new


__all__ = [
    "COMMANDS", "MAX_FIELDS", "MAX_OPTION_SPACE", "NXT_TLV_TABLE_MOD", "NXT_TLV_TABLE_REPLY", "NXT_TLV_TABLE_REQUEST",
    "NXTTMC_ADD", "NXTTMC_CLEAR", "NXTTMC_DELETE", "TLV_SUBTYPES", "TlvMap", "apply_tlv_mod", "decode_tlv_table_mod",
    "decode_tlv_table_reply", "encode_tlv_table_mod", "encode_tlv_table_reply", "encode_tlv_table_request",
]
