"""Open vSwitch's Geneve option fields ``tun_metadata0``..``63`` and its
``delete_field:tun_metadataN`` action: ovs-ofctl text, the wire (NXAST_DELETE_FIELD,
subtype 50: the field's NXM header, padded to 24 bytes, as ovs-ofctl 3.1 sends it) and
the checks a rule on them needs against a switch's TLV map (index -> option length in
bytes, ``rules/ofwire_tlv.py``).

What Open vSwitch 3.1 does (measured on a dummy bridge with ofproto/trace): a field
is absent on arrival and a match on it (whatever its mask, ``tun_metadata0=0`` too)
meets only a packet on which it is present; a write (set_field, load, move, pop)
makes it present; ``delete_field`` makes it absent and keeps its bytes (a later masked
write or a move out of it sees them). The IR field is 992 bits wide (124 bytes, OVS's
widest option), as OVS names ``NXM_NX_TUN_METADATA0[]``; its TLV map gives its length.
A match value or mask, or a set_field/load value, longer on the wire than the mapped
length is cut as OVS 3.1 cuts it: the option keeps the *first* mapped bytes of the wire
payload (ovs-ofctl sends the fewest bytes that hold value and mask, so
``set_field:0x1122334455`` on a 4-byte option writes ``0x11223344`` and
``load:0xff->NXM_NX_TUN_METADATA0[32..39]`` writes bits 24..31): ``fit``, applied by
the wire decoder under the switch's map (``decoding_lengths``) and to a rule given as
text by ``fit_rule``. A move, push or pop beyond the mapped length OVS refuses
(``map_problem``). On the wire a match and an operand header carry the mapped length
(``encoding_lengths`` names it to the codec), a set_field value the fewest bytes that
hold it (none for 0), as ovs-ofctl sends them and Open vSwitch's FLOW_STATS show them.
Pure.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import struct
from collections.abc import Iterator, Mapping

from .ir import TUN_METADATA_FIELDS, DeleteField, FieldMatch, Match, Rule, RuleError, SetField
from .ofctl_lex import Loc, Token

NXAST_DELETE_FIELD = 50
_NX_VENDOR_ID = 0x0000_2320
NXM_1, FIRST_FIELD = 0x0001, 40  # NXM_NX_TUN_METADATA0 is class 1, field 40
# the bits of an option the emulator backend matches: dp-core numbers the masked values of bits
# 0..127 (pipeline/tunfold.rs; its actions, and the OVS backend, take all of Open vSwitch's 124 bytes)
EMU_MATCH_BITS = 128
# dp-core's 128-bit key slots a table folds its tun_metadata matches into (POF_SLOTS: pipeline/tunfold.rs)
EMU_MATCH_SLOTS = 3


def index(field: str) -> int | None:
    """N of ``tun_metadataN`` (None for another field)."""
    return int(field[12:]) if field in TUN_METADATA_FIELDS else None


# ---------------------------------------------------------------- text

def is_delete_field(text: str) -> bool:
    return text.split(":", 1)[0].strip().lower() == "delete_field"


def parse_delete_field(tok: Token, loc: Loc) -> DeleteField:
    """``delete_field:tun_metadataN`` (also its NXM name ``NXM_NX_TUN_METADATAN``)."""
    text = tok.text.strip()
    _, _, arg = text.partition(":")
    name = arg.strip()
    if name.upper().startswith("NXM_NX_TUN_METADATA"):
        name = "tun_metadata" + name[19:].removesuffix("[]")
    try:
        return DeleteField(name)
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def format_delete_field(a: object) -> str | None:
    return f"delete_field:{a.field}" if isinstance(a, DeleteField) else None


# ---------------------------------------------------------------- wire

_LENGTHS: contextvars.ContextVar[Mapping[int, int]] = contextvars.ContextVar("tun_metadata_lengths", default={})


@contextlib.contextmanager
def encoding_lengths(lengths: Mapping[int, int]) -> Iterator[None]:
    """While encoding, ``tun_metadataN`` headers carry ``lengths[N]`` bytes (the TLV
    map of the switch the message goes to); an unmapped one's operand header says 4
    bytes, its value the fewest whole 4-byte words that hold it."""
    token = _LENGTHS.set(dict(lengths))
    try:
        yield
    finally:
        _LENGTHS.reset(token)


def wire_length(field: str) -> int:
    """The byte length of ``field``'s header on the wire now (see ``encoding_lengths``)."""
    return _LENGTHS.get().get(index(field), 4)


def encode_delete_field(a: DeleteField) -> bytes:
    n = wire_length(a.field)
    head = struct.pack("!HBB", NXM_1, (FIRST_FIELD + index(a.field)) << 1, n)
    return struct.pack("!HHIH", 0xFFFF, 24, _NX_VENDOR_ID, NXAST_DELETE_FIELD) + head + bytes(10)


def decode_delete_field(body: bytes) -> DeleteField | str:
    """The action from its bytes, or why it is not one OneSwitch reads (the caller's error)."""
    if len(body) != 24:
        return f"delete_field of {len(body)} bytes, expected 24"
    cls, field, _ = struct.unpack_from("!HBB", body, 10)
    number, hasmask = field >> 1, field & 1
    if cls != NXM_1 or hasmask or not FIRST_FIELD <= number < FIRST_FIELD + len(TUN_METADATA_FIELDS):
        return f"delete_field of header {cls:#06x}:{number}: Open vSwitch deletes tun_metadata0..63 only"
    return DeleteField(f"tun_metadata{number - FIRST_FIELD}")


# ---------------------------------------------------------------- the TLV map

def map_problem(field: str, lengths: Mapping[int, int], value: int = 0, mask: int | None = None,
                bits: tuple[int, int] | None = None) -> str | None:
    """Why a match value/mask or a subfield (ofs, n_bits) on ``field`` is not one OneSwitch
    takes under a TLV map of ``lengths`` (None: it is)."""
    i = index(field)
    if i is None:
        return None
    n = lengths.get(i)
    if n is None:
        return f"{field}: no TLV map names it"
    top = 8 * n
    if value >> top or (mask is not None and mask >> top):
        return f"{field}: {value:#x}{'' if mask is None else f'/{mask:#x}'} is wider than its {n} mapped bytes"
    if bits is not None and bits[0] + bits[1] > top:
        return f"{field}[{bits[0]}..{bits[0] + bits[1] - 1}] is beyond its {n} mapped bytes"
    return None


def tlv_map_text(lengths: Mapping[int, int], option_class: int = 0xFFFF) -> str:
    """ovs-ofctl add-tlv-map's argument mapping option type N (class ``option_class``) to
    tun_metadataN with ``lengths[N]`` bytes."""
    return ",".join(f"{{class={option_class:#x},type={i},len={n}}}->tun_metadata{i}" for i, n in sorted(lengths.items()))


def encode_oxm(field: str, value: int, mask: int | None, fewest: bool = False) -> bytes:
    """The NXM TLV of a match or set_field on ``field``, ``wire_length`` bytes each for
    value and mask (Open vSwitch reads a shorter value as the same number; a shorter
    mask in a match as one whose missing high bytes are all ones). A value or mask
    longer than that (or than 4 bytes, unmapped) takes the fewest bytes that hold both,
    as ovs-ofctl sends it, so a switch keeps of it what it keeps of ovs-ofctl's (``fit``).
    ``fewest``: a set_field's, always the fewest bytes (none for 0), as ovs-ofctl sends
    it and Open vSwitch's FLOW_STATS show it."""
    need = -(-max(value.bit_length(), (mask or 0).bit_length()) // 8)
    if fewest:
        n = need
    else:
        need = max(4, need)
        n = max(_LENGTHS.get().get(index(field)) or need, need)
    number = FIRST_FIELD + index(field)
    if mask is None:
        return struct.pack("!HBB", NXM_1, number << 1, n) + value.to_bytes(n, "big")
    return struct.pack("!HBB", NXM_1, number << 1 | 1, 2 * n) + value.to_bytes(n, "big") + mask.to_bytes(n, "big")


def wire_width(field: str, width: int, length: int, has_mask: int, write: bool = False) -> int:
    """The value width of a decoded header on ``field``: a tun_metadata one's is its own
    (1..124 bytes, or 0 unmasked: ovs-ofctl sends ``tun_metadata0=0`` and
    ``set_field:0->tun_metadata0`` with no value bytes, which Open vSwitch reads as 0; the
    caller checks ``length`` against the result), another's ``width``. ``write``: a
    set_field's or load's, also 0 masked (``set_field:ANY``, below)."""
    if field not in _FIELDS:
        return width
    n = length // 2 if has_mask else length
    return n if (1 if has_mask and not write else 0) <= n <= 124 else width


_FIELDS = frozenset(TUN_METADATA_FIELDS)


# ---------------------------------------------------------------- values longer than the map

def fit(value: int, mask: int | None, n: int, length: int | None = None) -> tuple[int, int | None]:
    """What an option mapped to ``n`` bytes keeps of ``value`` (and ``mask``) sent in
    ``length`` bytes each (None: the fewest bytes that hold both, as ovs-ofctl sends
    them): Open vSwitch 3.1 keeps the first ``n`` of a longer payload, and a mask of
    all ``n`` bytes is none (an exact match, a whole write)."""
    if length is None:
        length = -(-max(value.bit_length(), (mask or 0).bit_length()) // 8)
    cut = max(0, 8 * (length - n))
    if mask is not None and mask >> cut == (1 << 8 * n) - 1:
        mask = None
    return value >> cut, None if mask is None else mask >> cut


_DECODING: contextvars.ContextVar[Mapping[int, int] | None] = contextvars.ContextVar("tun_metadata_decoding", default=None)


@contextlib.contextmanager
def decoding_lengths(lengths: Mapping[int, int]) -> Iterator[None]:
    """While decoding, a ``tun_metadataN`` value or mask longer on the wire than
    ``lengths[N]`` bytes is cut as the switch cuts it (``wire_fit``)."""
    token = _DECODING.set(dict(lengths) or None)
    try:
        yield
    finally:
        _DECODING.reset(token)


def wire_fit(field: str, value: int, mask: int | None, width: int) -> tuple[int, int | None]:
    """A decoded header's value and mask (``width`` bytes each on the wire), cut to
    ``field``'s mapped length when it is a tun_metadata field under ``decoding_lengths``."""
    lengths = _DECODING.get()
    if lengths is None or field not in _FIELDS:
        return value, mask
    n = lengths.get(index(field))
    return (value, mask) if n is None else fit(value, mask, n, width)


def fit_rule(rule: Rule, lengths: Mapping[int, int]) -> Rule:
    """``rule`` as a switch holding the TLV map ``lengths`` keeps it from ovs-ofctl's
    wire form: every tun_metadata match and set_field/load value cut by ``fit``."""
    match = rule.match
    for key, fm in rule.match:
        if key in _FIELDS and index(key) in lengths:
            match = match.with_field(key, *fit(fm.value, fm.mask, lengths[index(key)]))
    return dataclasses.replace(rule, match=match, instructions=_fit_actions(rule.instructions, lengths))


def _fit_actions(x: object, lengths: Mapping[int, int]) -> object:
    if isinstance(x, SetField) and x.field in _FIELDS and index(x.field) in lengths:
        return SetField(x.field, *fit(x.value, x.mask, lengths[index(x.field)]))
    if isinstance(x, (tuple, list)):
        return type(x)(_fit_actions(y, lengths) for y in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, (type, Match, FieldMatch)):
        changed = {f.name: _fit_actions(getattr(x, f.name), lengths) for f in dataclasses.fields(x) if f.init}
        return dataclasses.replace(x, **changed) if any(v is not getattr(x, k) for k, v in changed.items()) else x
    return x


# ---------------------------------------------------------------- set_field:ANY
# A set_field/load whose mask keeps no bit of the option (a payload longer than the option
# whose mapped first bytes mask nothing, or ovs-ofctl's ``set_field:0/0->tun_metadataN``,
# which it sends as a masked header of no bytes): Open vSwitch 3.1 holds it as
# ``set_field:ANY->tun_metadataN`` and runs it as a write of no bit that makes the option
# present (its bytes kept: 0 if never written, also after a delete_field). Measured on one
# bridge: FLOW_STATS carry it as NXAST_REG_LOAD2 of header ``00015100`` (NXM_NX_TUN_METADATA0,
# masked, no bytes), which Open vSwitch reads back as the same; dump-flows prints
# ``set_field:ANY->tun_metadata0``, which ovs-ofctl does not read ("ANY: bad syntax for
# tun_metadata0 value"). The IR holds it as ``SetField(field, 0, 0)``.

def is_any(a: object) -> bool:
    """``a`` is Open vSwitch's ``set_field:ANY->tun_metadataN``."""
    return isinstance(a, SetField) and a.field in _FIELDS and a.mask == 0


def format_any(a: object) -> str | None:
    return f"set_field:ANY->{a.field}" if is_any(a) else None


def any_text_problem(value: str, field: str) -> str | None:
    """Why ``set_field:VALUE->FIELD`` text is refused: ovs-ofctl 3.1 prints ``ANY`` but does not read it."""
    if value.strip().upper() == "ANY" and field.lower() in _FIELDS:
        return (f"set_field:ANY->{field}: ovs-ofctl 3.1 prints ANY for a write of no bit but does not read it; "
                f"write set_field:0/0->{field.lower()}")
    return None


def uses_any(x: object) -> bool:
    """``x`` (a rule, an instruction, an action …) holds a ``set_field:ANY`` anywhere."""
    if is_any(x):
        return True
    if isinstance(x, (tuple, list)):
        return any(uses_any(y) for y in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, (type, Match, FieldMatch)):
        return any(uses_any(getattr(x, f.name)) for f in dataclasses.fields(x))
    return False
