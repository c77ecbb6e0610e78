"""OpenFlow 1.3 wire codec, Open vSwitch's experimenter (Nicira) actions:
``move`` (NXAST_REG_MOVE; ONF's copy_field is read too), ``load`` / masked
``set_field`` (NXAST_REG_LOAD and NXAST_REG_LOAD2), ``push`` / ``pop``
(NXAST_STACK_PUSH/POP), ``note``, ``exit``, ``pop_queue``, ``sample``
(SAMPLE/SAMPLE2/SAMPLE3), ``dec_ttl(ids)`` (DEC_TTL_CNT_IDS), as Open vSwitch
3.1 encodes them in OpenFlow 1.3 (``lib/ofp-actions.c``); ``set_tunnel`` and
``set_tunnel64`` are read as a set_field on tunnel_id and ``write_metadata``
as the instruction (ofwire places it), as OVS reads them. The other Nicira
actions are refused with OFPBAC_BAD_EXP_TYPE naming them (docs/endpoint.md
says why; NX_OF10_ONLY: the ones OVS itself takes in OpenFlow 1.0 only).

Used by ``ofwire.encode_action`` / ``decode_actions``. Pure.
"""

from __future__ import annotations

import struct

from tandem.rules import ir
from tandem.rules import nxm as NXM
from tandem.rules.ir import (
    Action, Exit, MoveField, Note, OutputReg, Resubmit, RuleError, SetField, StackPop, StackPush, Subfield,
)
from tandem.rules.ir import CheckPktLarger, Conjunction, DecTtl, PopQueue, Sample, WriteMetadata
from tandem.rules.ir import DecNshTtl
from tandem.rules import ofwire_ct as CT
from tandem.rules import ofwire_learn as LEARN
from tandem.rules import nx_controller as CTL
from tandem.rules import ofwire_hash as HASH
from tandem.rules import nx_fin_timeout as FIN
from tandem.rules import encap as ENC
from tandem.rules import decap as DEC
from tandem.rules import tun_metadata as TM
from tandem.rules.nsh_ttl_load import nsh_ttl_masked
from tandem.rules import nsh_ttl_load as NTL

NX_VENDOR_ID = 0x0000_2320
NXAST_REG_MOVE, NXAST_REG_LOAD, NXAST_NOTE, NXAST_EXIT, NXAST_STACK_PUSH, NXAST_STACK_POP = 6, 7, 8, 17, 27, 28
NXAST_REG_LOAD2 = 33
NXAST_SET_TUNNEL, NXAST_POP_QUEUE, NXAST_SET_TUNNEL64, NXAST_DEC_TTL_CNT_IDS, NXAST_WRITE_METADATA = 2, 5, 9, 21, 22
NXAST_SAMPLE, NXAST_SAMPLE2, NXAST_SAMPLE3 = 29, 38, 41
NXAST_CHECK_PKT_LARGER = 49
NXAST_CONJUNCTION = 34
NXAST_RESUBMIT, NXAST_RESUBMIT_TABLE = 1, 14
NXAST_OUTPUT_REG, NXAST_OUTPUT_REG2 = 15, 32
ONFACT_COPY_FIELD = 3200
# Nicira actions Open vSwitch knows and Tandem does not run (subtype -> OVS's name)
NX_REFUSED = {
    44: "resubmit(...,ct)", 4: "set_queue (NX)",
    18: "dec_ttl (NX)",
    36: "nat", 46: "encap", 47: "decap",
    48: "dec_nsh_ttl", 23: "push_mpls (NX)", 24: "pop_mpls (NX)", 25: "set_mpls_ttl (NX)", 26: "dec_mpls_ttl (NX)",
    30: "set_mpls_label (NX)", 31: "set_mpls_tc (NX)", 40: "group (NX)",
    50: "delete_field", 254: "debug_slow", 255: "debug_recirc",
}
NXAST_DEC_NSH_TTL = 48
NX_REFUSED.pop(NXAST_DEC_NSH_TTL)  # (nsh: decoded)
NX_REFUSED.pop(ENC.NXAST_ENCAP)  # (encap: decoded, its one form run: encap.py)
NX_REFUSED.pop(DEC.NXAST_DECAP)  # (decap: decoded, its one form run: decap.py)
NX_REFUSED.pop(TM.NXAST_DELETE_FIELD)  # (tun_metadata: decoded)

# Nicira spellings of OpenFlow 1.3's own actions that Open vSwitch 3.1 takes in OpenFlow 1.0
# only: in OpenFlow 1.3 it refuses them with OFPBAC_BAD_EXP_TYPE, and so does OneSwitch
NX_OF10_ONLY = frozenset({4, 18, 23, 24, 25, 26, 30, 31, 40})

# OpenFlow error codes (same numbers as ofwire's; repeated here so this module does not import it)
_BAD_ACTION, _BAD_MATCH = 2, 4
_BAD_LEN, _BAD_EXPERIMENTER, _BAD_EXP_TYPE, _BAD_ARGUMENT, _BAD_SET_LEN, _BAD_SET_ARGUMENT = 1, 2, 3, 5, 14, 15
_BAD_FIELD = 6
# Open vSwitch's NXBAC_BAD_CONJUNCTION, which OpenFlow 1.3 has no code for: an
# experimenter error (type 0xffff) of Nicira's, exp_type 15 (as OVS 3.1 answers it).
BAD_CONJUNCTION = (0xFFFF, 15)

_BY_KEY: dict[tuple[int, int], tuple[str, int]] = {  # operand header (class, number) -> (field, usable bits)
    (NXM.OXM_BASIC, num): (name, NXM.OPERANDS[name].bits) for name, (num, _) in NXM.OXM_FIELDS.items()
    if name in NXM.OPERANDS}
for _f, _o in ((f, o) for f, o in NXM.OPERANDS.items() if o.experimenter is None):
    _BY_KEY[(_o.cls, _o.number)] = (_f, _o.bits)
_BY_KEY[(NXM.NXM_0, 0)] = ("in_port", 16)  # NXM_OF_IN_PORT: the same port in 16 bits
_BY_EXPERIMENTER: dict[tuple[int, int], tuple[str, int]] = {  # (number, experimenter id) -> (field, usable bits)
    (_o.number, _o.experimenter): (_f, _o.bits) for _f, _o in NXM.OPERANDS.items() if _o.experimenter is not None}


class NxError(Exception):
    """Bytes to refuse with OFPT_ERROR(type, code) (ofwire turns it into its OFError)."""

    def __init__(self, etype: int, code: int, message: str) -> None:
        super().__init__(message)
        self.etype, self.code = etype, code


def _pad(raw: bytes) -> bytes:
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


def _head(subtype: int) -> bytes:
    return struct.pack("!HHIH", 0xFFFF, 0, NX_VENDOR_ID, subtype)


def _operand_header(field: str) -> bytes:
    o = NXM.OPERANDS[field]
    if o.experimenter is not None:  # (an experimenter OXM: its length counts the 4-byte experimenter id)
        return struct.pack("!II", o.cls << 16 | o.number << 9 | (4 + o.width), o.experimenter)
    if field in ir.TUN_METADATA_FIELDS:  # (its TLV map's length: rules/tun_metadata.py)
        return struct.pack("!I", o.cls << 16 | o.number << 9 | TM.wire_length(field))
    return struct.pack("!I", o.cls << 16 | o.number << 9 | o.width)


def encode_nx(a: Action, oxm) -> bytes:
    """Wire bytes of a Nicira action; ``oxm(field, value, mask)`` is ofwire's OXM TLV encoder."""
    if isinstance(a, SetField):  # masked: reg_load2 with a masked OXM (what OVS sends for a masked OXM-only field)
        mask = NTL.wire_mask(a.mask) if a.field == "nsh_ttl" else a.mask  # (nsh_ttl_load.py)
        return _pad(_head(NXAST_REG_LOAD2) + oxm(a.field, a.value, mask))
    if isinstance(a, MoveField):
        return _pad(_head(NXAST_REG_MOVE) + struct.pack("!HHH", a.src.n_bits, a.src.ofs, a.dst.ofs)
                    + _operand_header(a.src.field) + _operand_header(a.dst.field))
    if isinstance(a, (StackPush, StackPop)):
        sf = a.src if isinstance(a, StackPush) else a.dst
        sub = NXAST_STACK_PUSH if isinstance(a, StackPush) else NXAST_STACK_POP
        head = _operand_header(sf.field)  # (4 or 8 bytes; the action stays 24 bytes, as Open vSwitch's)
        return _pad(_head(sub) + struct.pack("!H", sf.ofs) + head + struct.pack("!H", sf.n_bits) + bytes(10 - len(head)))
    if isinstance(a, Note):
        return _pad(_head(NXAST_NOTE) + a.data)
    if isinstance(a, Exit):
        return _pad(_head(NXAST_EXIT) + bytes(6))
    if isinstance(a, PopQueue):
        return _pad(_head(NXAST_POP_QUEUE) + bytes(6))
    if isinstance(a, DecNshTtl):
        return _pad(_head(NXAST_DEC_NSH_TTL) + bytes(6))
    if isinstance(a, ENC.ENCAP_TYPES):
        return ENC.encode_encap(a)
    if isinstance(a, DEC.Decap):
        return DEC.encode_decap(a)
    if isinstance(a, DecTtl) and a.ids is not None:
        return _pad(_head(NXAST_DEC_TTL_CNT_IDS) + struct.pack("!H4x", len(a.ids))
                    + struct.pack(f"!{len(a.ids)}H", *a.ids))
    if isinstance(a, CheckPktLarger):
        return _pad(_head(NXAST_CHECK_PKT_LARGER) + struct.pack("!HH", a.pkt_len, a.dst.ofs) + _operand_header(a.dst.field))
    if isinstance(a, Sample):
        body = struct.pack("!HIII", a.probability, a.collector_set_id, a.obs_domain_id, a.obs_point_id)
        if a.subtype != NXAST_SAMPLE:
            body += struct.pack("!H", a.sampling_port) + (struct.pack("!B", a.direction) if a.subtype == NXAST_SAMPLE3 else b"")
        return _pad(_head(a.subtype) + body)
    if isinstance(a, Conjunction):  # nx_action_conjunction: clause (k-1), n_clauses, id
        return _pad(_head(NXAST_CONJUNCTION) + struct.pack("!BBI", a.k - 1, a.n, a.id))
    if isinstance(a, OutputReg):  # as Open vSwitch: the old form when the field has an NXM header
        sf, o = a.src, NXM.OPERANDS[a.src.field]
        ofs_nbits = sf.ofs << 6 | (sf.n_bits - 1)
        if o.cls in (NXM.NXM_0, NXM.NXM_1):
            return _pad(_head(NXAST_OUTPUT_REG) + struct.pack("!H", ofs_nbits) + _operand_header(sf.field)
                        + struct.pack("!H6x", a.max_len))
        return _pad(_head(NXAST_OUTPUT_REG2) + struct.pack("!HH", ofs_nbits, a.max_len) + _operand_header(sf.field))  # (24 bytes)
    if isinstance(a, Resubmit):  # as ovs-ofctl sends a parsed resubmit: always the table form
        port = a.in_port - 0xFFFF_0000 if a.in_port >= 0xFFFF_FF00 else a.in_port
        return _pad(_head(NXAST_RESUBMIT_TABLE) + struct.pack("!HB3x", port, a.table))
    if isinstance(a, (ir.Ct, ir.CtClear)):
        return CT.encode_ct(a)
    if isinstance(a, ir.Learn):
        return LEARN.encode_learn(a)
    if isinstance(a, ir.Controller):
        return CTL.encode_controller(a)
    if isinstance(a, (ir.Multipath, ir.Bundle)):
        return HASH.encode_hash(a)
    if isinstance(a, ir.FinTimeout):
        return FIN.encode_fin_timeout(a)
    if isinstance(a, ir.DeleteField):
        return TM.encode_delete_field(a)
    raise RuleError(f"action {a!r} is not a Nicira action")


_BAD_SET_TYPE = 13


def _operand4(body: bytes, off: int, what: str) -> tuple[str, int, int]:
    """``_operand`` where Open vSwitch's format has a 4-byte field header (multipath, bundle_load,
    a ct zone, a learn spec): a header of the experimenter class there (an NSH field's takes 8
    bytes) is BAD_ACTION/BAD_SET_TYPE, as Open vSwitch 3.1 answers it (measured). learn2's
    result_dst takes 8-byte headers."""
    if what != "learn result_dst" and body[off:off + 2] == b"\xff\xff":
        raise NxError(_BAD_ACTION, _BAD_SET_TYPE, f"{what}: a 4-byte field header of the experimenter class names "
                      "no field (an NSH field's header takes 8 bytes, which this action has no room for)")
    return _operand(body, off, what)


def _operand(body: bytes, off: int, what: str) -> tuple[str, int, int]:
    """(field, usable bits, bytes used) of the operand header at ``body[off:]``."""
    if len(body) - off < 4:
        raise NxError(_BAD_ACTION, _BAD_LEN, f"{what}: field header cut short")
    h = struct.unpack_from("!I", body, off)[0]
    cls, num, has_mask = h >> 16, (h >> 9) & 0x7F, (h >> 8) & 1
    if cls == NXM.OXM_EXPERIMENTER:  # (8 bytes: the experimenter id follows; the NSH fields are Open vSwitch's)
        if len(body) - off < 8:
            raise NxError(_BAD_ACTION, _BAD_LEN, f"{what}: experimenter field header cut short")
        (exp,) = struct.unpack_from("!I", body, off + 4)
        known = _BY_EXPERIMENTER.get((num, exp))
        if known is None or has_mask:
            raise NxError(_BAD_MATCH, _BAD_FIELD, f"{what}: experimenter field {num} of {exp:#x} is not supported "
                          "by OneSwitch (the NSH fields are)")
        return known[0], known[1], 8
    known = _BY_KEY.get((cls, num))
    if known is None or has_mask:
        raise NxError(_BAD_MATCH, _BAD_FIELD, f"{what}: field (class {cls:#x}, number {num}) is not supported by OneSwitch")
    return known[0], known[1], 4


def _subfield(field: str, bits: int, ofs: int, n_bits: int, what: str) -> Subfield:
    if n_bits < 1 or ofs + n_bits > bits:
        raise NxError(_BAD_ACTION, _BAD_SET_LEN, f"{what}: {field}[{ofs}..{ofs + n_bits - 1}] does not fit {bits} bits")
    return Subfield(field, ofs, n_bits)


def _load(field: str, value: int, mask: int) -> list[Action]:
    """A masked set of ``field`` (a register view is split into registers)."""
    if field == "nsh_ttl":  # (an 8-bit subfield over a 6-bit field: nsh_ttl_load.py)
        return list(nsh_ttl_masked(value, mask))
    if field in ir.REG_VIEWS:
        return [SetField(f, v, m) for f, v, m in ir.split_register(field, value, mask)]
    return [SetField(field, value, mask)]


def decode_nx(body: bytes, strict: bool, decode_entry) -> list[Action]:
    """One experimenter action (its whole bytes) from the Nicira (or ONF) vendor.
    ``decode_entry(buf, off)`` is ofwire's reader of one OXM TLV (value, mask) in
    a set_field, returning [(field, value, mask)]. Raises NxError."""
    (vendor,) = struct.unpack_from("!I", body, 4)
    if vendor not in (NX_VENDOR_ID, NXM.ONF_EXPERIMENTER):  # as Open vSwitch answers an experimenter it does not know
        raise NxError(_BAD_ACTION, _BAD_EXPERIMENTER, f"experimenter {vendor:#x} is not supported by OneSwitch")
    if len(body) < 10:
        raise NxError(_BAD_ACTION, _BAD_LEN, f"experimenter action of {len(body)} bytes")
    (subtype,) = struct.unpack_from("!H", body, 8)
    try:
        if vendor == NXM.ONF_EXPERIMENTER and subtype == ONFACT_COPY_FIELD:
            n_bits, src_ofs, dst_ofs = struct.unpack_from("!HHH", body, 12)
            src, sbits, used = _operand(body, 20, "copy_field source")
            dst, dbits, _ = _operand(body, 20 + used, "copy_field destination")
            return [_move(src, sbits, src_ofs, dst, dbits, dst_ofs, n_bits)]
        if vendor != NX_VENDOR_ID:
            raise NxError(_BAD_ACTION, _BAD_EXPERIMENTER, f"ONF action {subtype} is not supported by OneSwitch")
        if subtype == NXAST_REG_MOVE:
            n_bits, src_ofs, dst_ofs = struct.unpack_from("!HHH", body, 10)
            src, sbits, used = _operand(body, 16, "move source")
            dst, dbits, _ = _operand(body, 16 + used, "move destination")
            return [_move(src, sbits, src_ofs, dst, dbits, dst_ofs, n_bits)]
        if subtype == NXAST_REG_LOAD:
            if len(body) != 24:
                raise NxError(_BAD_ACTION, _BAD_LEN, f"reg_load of {len(body)} bytes, expected 24")
            (ofs_nbits,) = struct.unpack_from("!H", body, 10)
            field, bits, _ = _operand(body, 12, "load destination")
            (value,) = struct.unpack_from("!Q", body, 16)
            ofs, n_bits = ofs_nbits >> 6, (ofs_nbits & 0x3F) + 1
            sf = _subfield(field, bits, ofs, n_bits, "load")
            if value >> n_bits:
                raise NxError(_BAD_ACTION, _BAD_ARGUMENT, f"load: value {value:#x} does not fit {n_bits} bits")
            _writable(field, "load")
            return _load(field, value << sf.ofs, ((1 << n_bits) - 1) << sf.ofs)
        if subtype == NXAST_REG_LOAD2:
            out: list[Action] = []
            for field, value, mask in decode_entry(body, 10):
                _writable(field, "load")
                if field == "nsh_ttl":  # (a load of the 8-bit subfield, unmasked for the whole: nsh_ttl_load.py)
                    mask = NTL.WHOLE if mask is None else mask
                    out += _load(field, value & mask, mask)
                    continue
                out.append(SetField(field, value & (mask if mask is not None else -1), mask))
            return out
        if subtype in (NXAST_STACK_PUSH, NXAST_STACK_POP):
            if len(body) < 24:
                raise NxError(_BAD_ACTION, _BAD_LEN, f"stack action of {len(body)} bytes, expected 24")
            (ofs,) = struct.unpack_from("!H", body, 10)
            field, bits, used = _operand(body, 12, "push/pop field")
            (n_bits,) = struct.unpack_from("!H", body, 12 + used)
            sf = _subfield(field, bits, ofs, n_bits, "push/pop")
            if subtype == NXAST_STACK_PUSH:
                return [StackPush(sf)]
            _writable(field, "pop")
            return [StackPop(sf)]
        if subtype == NXAST_NOTE:
            return [Note(bytes(body[10:]))]
        if subtype == NXAST_EXIT:
            return [Exit()]
        if subtype == NXAST_DEC_NSH_TTL:
            _sized(body, 16, "dec_nsh_ttl")
            return [DecNshTtl()]
        if subtype == ENC.NXAST_ENCAP:
            try:
                return [ENC.decode_encap(body)]
            except ENC.EncapError as e:
                raise NxError(e.etype, e.code, str(e)) from None
        if subtype == DEC.NXAST_DECAP:
            try:
                return [DEC.decode_decap(body)]
            except DEC.DecapError as e:
                raise NxError(e.etype, e.code, str(e)) from None
        decoded = _decode_more(subtype, body)
        if decoded is not None:
            return decoded
        if subtype == TM.NXAST_DELETE_FIELD:
            deleted = TM.decode_delete_field(body)
            if isinstance(deleted, str):
                raise NxError(_BAD_ACTION, _BAD_LEN if "bytes" in deleted else _BAD_ARGUMENT, deleted)
            return [deleted]
        if subtype == FIN.NXAST_FIN_TIMEOUT:
            fin = FIN.decode_fin_timeout(body)
            if fin is None:
                raise NxError(_BAD_ACTION, _BAD_LEN, f"fin_timeout of {len(body)} bytes, expected 16")
            return [fin]
        if subtype == NXAST_CONJUNCTION:
            if len(body) != 16:
                raise NxError(_BAD_ACTION, _BAD_LEN, f"conjunction of {len(body)} bytes, expected 16")
            clause, n_clauses, cid = struct.unpack_from("!BBI", body, 10)
            if not 2 <= n_clauses <= 64 or clause >= n_clauses:  # (as Open vSwitch: NXBAC_BAD_CONJUNCTION)
                raise NxError(*BAD_CONJUNCTION, f"conjunction({cid},{clause + 1}/{n_clauses}): needs 2 to 64 "
                                                "clauses and a clause index within them")
            return [Conjunction(cid, clause + 1, n_clauses)]
        if subtype in (NXAST_OUTPUT_REG, NXAST_OUTPUT_REG2):
            if len(body) < 24:
                raise NxError(_BAD_ACTION, _BAD_LEN, f"output_reg of {len(body)} bytes, expected 24")
            if subtype == NXAST_OUTPUT_REG:
                (ofs_nbits,) = struct.unpack_from("!H", body, 10)
                field, bits, _ = _operand(body, 12, "output_reg source")
                (max_len,) = struct.unpack_from("!H", body, 16)
                if any(body[18:24]):
                    raise NxError(_BAD_ACTION, _BAD_ARGUMENT, "output_reg: padding is not zero")
            else:
                ofs_nbits, max_len = struct.unpack_from("!HH", body, 10)
                field, bits, _ = _operand(body, 14, "output_reg source")
            return [OutputReg(_subfield(field, bits, ofs_nbits >> 6, (ofs_nbits & 0x3F) + 1, "output_reg"), max_len)]
        if subtype in (NXAST_RESUBMIT, NXAST_RESUBMIT_TABLE):
            if len(body) != 16:
                raise NxError(_BAD_ACTION, _BAD_LEN, f"resubmit of {len(body)} bytes, expected 16")
            port, table = struct.unpack_from("!HB", body, 10)
            if subtype == NXAST_RESUBMIT:
                table = 255
            elif any(body[13:16]):  # as Open vSwitch checks the padding of the table form
                raise NxError(_BAD_ACTION, _BAD_ARGUMENT, "resubmit: padding is not zero")
            in_port = port + 0xFFFF_0000 if port >= 0xFF00 else port
            return [Resubmit(in_port, table)]
        if subtype in HASH.SUBTYPES:
            try:
                return [HASH.decode_hash(subtype, body, _operand4, _subfield, _writable)]
            except HASH.HashWireError as e:
                raise NxError(e.etype, e.code, str(e)) from None
        if subtype in (CT.NXAST_CT, CT.NXAST_CT_CLEAR):
            try:
                return [CT.decode_ct(body, subtype, _operand4)]
            except CT.CtError as e:
                raise NxError(e.etype, e.code, str(e)) from None
        if subtype in (LEARN.NXAST_LEARN, LEARN.NXAST_LEARN2):
            try:
                return [LEARN.decode_learn(body, subtype, _operand4)]
            except LEARN.LearnError as e:
                raise NxError(e.etype, e.code, str(e)) from None
        if subtype in (CTL.NXAST_CONTROLLER, CTL.NXAST_CONTROLLER2):
            try:
                return [CTL.decode_controller(body, subtype)]
            except CTL.ControllerError as e:
                raise NxError(e.etype, e.code, str(e)) from None
    except RuleError as e:
        raise NxError(_BAD_ACTION, _BAD_SET_ARGUMENT, str(e)) from None
    name = NX_REFUSED.get(subtype, f"subtype {subtype}")
    if subtype == 36:  # NXAST_NAT (run inside ct: ofwire_ct.py)
        raise NxError(_BAD_ACTION, _BAD_SET_ARGUMENT, "nat outside ct: nat runs only as ct's first nested action "
                      "(Open vSwitch refuses it too)")
    if subtype in NX_OF10_ONLY:
        raise NxError(_BAD_ACTION, _BAD_EXP_TYPE, f"Nicira action {name} is OpenFlow 1.0's; in OpenFlow 1.3 use "
                      "OpenFlow's own action (Open vSwitch refuses it too)")
    raise NxError(_BAD_ACTION, _BAD_EXP_TYPE, f"Nicira action {name} is not supported by OneSwitch")


def _sized(body: bytes, size: int, what: str) -> None:
    if len(body) != size:
        raise NxError(_BAD_ACTION, _BAD_LEN, f"{what} of {len(body)} bytes, expected {size}")


def _decode_more(subtype: int, body: bytes) -> list | None:
    """set_tunnel(64), pop_queue, dec_ttl(ids), write_metadata and sample (None: another subtype).
    write_metadata comes back as a ``WriteMetadata`` instruction, for ofwire to place."""
    if subtype in (NXAST_SET_TUNNEL, NXAST_SET_TUNNEL64):  # a write of tunnel_id, as Open vSwitch reads it
        _sized(body, 16 if subtype == NXAST_SET_TUNNEL else 24, "set_tunnel")
        value = struct.unpack_from("!I" if subtype == NXAST_SET_TUNNEL else "!Q", body, 12 if subtype == NXAST_SET_TUNNEL else 16)[0]
        return [SetField("tunnel_id", value)]
    if subtype == NXAST_POP_QUEUE:
        _sized(body, 16, "pop_queue")
        return [PopQueue()]
    if subtype == NXAST_DEC_TTL_CNT_IDS:
        if len(body) < 16:
            raise NxError(_BAD_ACTION, _BAD_LEN, f"dec_ttl(ids) of {len(body)} bytes")
        (n,) = struct.unpack_from("!H", body, 10)
        if 16 + 2 * n > len(body):
            raise NxError(_BAD_ACTION, _BAD_LEN, f"dec_ttl(ids): {n} ids do not fit {len(body)} bytes")
        return [DecTtl(struct.unpack_from(f"!{n}H", body, 16))]
    if subtype == NXAST_WRITE_METADATA:
        _sized(body, 32, "write_metadata")
        value, mask = struct.unpack_from("!QQ", body, 16)
        return [WriteMetadata(value, mask)]
    if subtype == NXAST_CHECK_PKT_LARGER:
        if len(body) != 24:
            raise NxError(_BAD_ACTION, _BAD_LEN, f"check_pkt_larger of {len(body)} bytes, expected 24")
        pkt_len, ofs = struct.unpack_from("!HH", body, 10)
        field, bits, _ = _operand(body, 14, "check_pkt_larger destination")
        dst = _subfield(field, bits, ofs, 1, "check_pkt_larger")
        _writable(field, "check_pkt_larger")
        return [CheckPktLarger(pkt_len, dst)]
    if subtype in (NXAST_SAMPLE, NXAST_SAMPLE2, NXAST_SAMPLE3):
        _sized(body, 24 if subtype == NXAST_SAMPLE else 32, "sample")
        prob, cset, dom, point = struct.unpack_from("!HIII", body, 10)
        port, direction = (0xFFFF, 0) if subtype == NXAST_SAMPLE else struct.unpack_from("!HB", body, 24)
        if subtype != NXAST_SAMPLE3:
            direction = 0
        if prob == 0 or direction > 2:
            raise NxError(_BAD_ACTION, _BAD_ARGUMENT, f"sample: probability {prob}, direction {direction}")
        return [Sample(prob, cset, dom, point, port, direction, subtype)]
    return None


def _writable(field: str, what: str) -> None:
    if field not in ir.MOVE_TARGETS and not (field in ir.NSH_FIELDS and ir.FIELDS[field].settable):  # (NSH: reg_load2 only)
        raise NxError(_BAD_ACTION, _BAD_SET_ARGUMENT, f"{what}: field {field} cannot be written")


def _move(src: str, sbits: int, src_ofs: int, dst: str, dbits: int, dst_ofs: int, n_bits: int) -> MoveField:
    s = _subfield(src, sbits, src_ofs, n_bits, "move source")
    d = _subfield(dst, dbits, dst_ofs, n_bits, "move destination")
    _writable(dst, "move")
    return MoveField(s, d)
