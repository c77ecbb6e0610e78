"""Fast lane for a controller's most common FLOW_MOD: an ADD of a new rule that
matches ``in_port`` exactly and whose instructions are one apply-actions list
with one output (learning-switch and L2/L3 forwarding rules).

Such a rule translates to one physical copy on its ingress switch: the match
with the physical in_port, the same table, the output
replaced by the compiler's cached translation of that output (``_out_entry``).
When the shared rules that output needs are already installed (``tandem
serve`` pins them) the whole update plan is that one add. The general path
(``decode_flow_mod`` -> ``check_rule`` -> ``OneSwitchState.apply`` ->
``UpdatePlan``) computes this through ~50 intermediate objects; the lane
computes it directly and hands the session the same one-step plan.

Exactness: the lane only takes a message it can prove the general path would
accept and turn into exactly one physical add; in every other case (any other
command, flag or shape, a bad field, a rule that replaces one, a missing
shared item, a changed compiler) it changes nothing and returns False, and the
caller runs the general path, which also produces every error reply. The
per-(instructions, in_port) translation is computed once by the compiler's own
functions (``check_rule``, ``_analyze``, ``_out_entry``) and cached per
compiler. tests/oneswitch/test_fastlane.py compares both paths (state, plans,
wire bytes, error replies) on generated FLOW_MOD streams.

Bytes: a match layout (which OXMs in which order) is read with one struct
call once seen; for a backend that speaks OpenFlow (OVS) the physical FLOW_MOD
body is spliced from the controller's (its OXMs with the physical in_port,
when they are in ``encode_match``'s order) and handed to the encoder with
``note_add_wire``, so the backend does not re-encode the match.

State: the per-compiler translation cache, the layout cache. Cost: O(match
fields) per FLOW_MOD, no FlowMod/WireFlowMod/UpdatePlan objects; about half the
CPU of the general path (`tandem bench flowmod` prints serve's CPU per FLOW_MOD).
"""

from __future__ import annotations

import operator
import struct
import time
from typing import TYPE_CHECKING

from tandem.rules import ir
from tandem.rules.ir import OFPG_ANY, OFPP_ANY, ApplyActions, FieldMatch, Match, _new_rule
from tandem.rules.ofwire import (
    _HAS_PREREQS, _OXM_EXACT, OFP_NO_BUFFER, OFPMT_OXM, OFPXMC_OPENFLOW_BASIC, OFError, check_prereqs,
    decode_instructions_cached, encode_instructions,
)
from tandem.rules.ofwire_msgs import FLOW_MOD_FIXED, OFPFF_CHECK_OVERLAP, OFPFF_SEND_FLOW_REM, note_add_wire

from .endpoint_common import MAX_PENDING_OPS
from .controller_meter import controller_meters
from .ids import MAX_VIRTUAL_TABLE, TranslationError
from .ir_intern import _apply
from .plan import PhysicalOp
from .rule_analysis import _analyze, mark_read_after
from .state import OneSwitchState

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint import OneSwitchEndpoint
    from tandem.oneswitch.endpoint_session import Session

_FIXED = FLOW_MOD_FIXED.unpack_from
_FIXED_PACK = FLOW_MOD_FIXED.pack
_new_obj = object.__new__
_monotonic = time.monotonic
_set = object.__setattr__
_FIXED_SIZE = FLOW_MOD_FIXED.size
_FLAGS_OK = 0x1F & ~OFPFF_CHECK_OVERLAP  # send_flow_rem, reset/no counts: the general add only records them
_MAX_ENTRIES = 4096


_U32 = struct.Struct("!I").unpack_from
_U16_PAIR = struct.Struct("!HH").unpack_from
_EXACT = _OXM_EXACT  # unmasked OXM header -> (field, byte width, bits)
_IN_PORT_HEAD = next(h for h, v in _OXM_EXACT.items() if v[0] == "in_port")
_ZEROS = bytes(8)
_new_tuple = tuple.__new__
_BY_NAME = operator.itemgetter(0)


def _decode_exact_match(body: bytes) -> tuple[Match, int, bool, int, int, int] | None:
    """The FLOW_MOD's ofp_match when it is the lane's kind: OXM basic fields only
    (none of OneSwitch's internal ones), each exact and once, values within their
    width, prerequisites met, an in_port. Returns (match, end offset of the match
    in ``body``, whether its OXMs are in the order ``encode_match`` writes (strictly
    increasing headers), in_port value, offset of in_port's value, in_port's index
    in the match's fields) or None: then
    the general decoder decides, with its error if the match is bad.

    A controller sends the same few field layouts over and over: a layout seen
    before (same length, same OXM headers in the same order) is read by the reader
    made for it (``_remember_layout``); others are walked OXM by OXM."""
    if len(body) < _FIXED_SIZE + 8:
        return None
    mtype, length = _U16_PAIR(body, _FIXED_SIZE)
    if mtype != OFPMT_OXM or length < 8 or _FIXED_SIZE + ((length + 7) & ~7) > len(body):
        return None
    read = _LAYOUTS.get((length, _U32(body, _FIXED_SIZE + 4)[0]))
    if read is not None:
        got = read(body)
        if got is not _OTHER_LAYOUT:
            return got
    return _walk_match(body, length)


def _walk_match(body: bytes, length: int) -> tuple[Match, int, bool, int, int, int] | None:
    """_decode_exact_match OXM by OXM; remembers the layout of a match it accepts."""
    mend = _FIXED_SIZE + length
    off = _FIXED_SIZE + 4
    prev = 0
    ordered = True
    fields = []
    heads = []
    at = 0
    exact, unpack, from_bytes, fm_cls = _EXACT, _U32, int.from_bytes, FieldMatch
    while off < mend:
        if mend - off < 4:
            return None
        h = unpack(body, off)[0]
        fast = exact.get(h)
        if fast is None or h >> 16 != OFPXMC_OPENFLOW_BASIC:
            return None
        if h <= prev:
            ordered = False
        prev = h
        name, width, bits = fast
        nxt = off + 4 + width
        if nxt > mend:
            return None
        value = from_bytes(body[off + 4:nxt], "big")
        if value >> bits:
            return None
        if h == _IN_PORT_HEAD:
            at = off + 4
        heads.append(h)
        fields.append((name, _new_tuple(fm_cls, (value, None))))
        off = nxt
    if not at:
        return None
    if not ordered and len({kv[0] for kv in fields}) < len(fields):
        return None  # a field twice: the general decoder's error
    try:
        check_prereqs(fields)
    except OFError:
        return None
    _remember_layout(length, heads)
    m = object.__new__(Match)  # as ofwire._checked_match: every check of Match() was made above
    object.__setattr__(m, "fields", tuple(sorted(fields, key=_BY_NAME)))
    in_sorted = [kv[0] for kv in m.fields].index("in_port")
    return m, mend, ordered, from_bytes(body[at:at + 4], "big"), at, in_sorted


_STRUCT_CODE = {1: "B", 2: "H", 4: "I", 8: "Q"}
_LAYOUTS: dict[tuple[int, int], object] = {}  # (match length, first OXM header) -> its reader
_OTHER_LAYOUT = object()  # a reader's answer for a match whose headers are not its layout's
_READER_GLOBALS = {"OTHER_LAYOUT": _OTHER_LAYOUT, "FM": FieldMatch, "new": tuple.__new__, "new_obj": object.__new__, "set_": object.__setattr__,
                   "Match": Match, "from_bytes": int.from_bytes, "check_prereqs": check_prereqs, "OFError": OFError}


def _remember_layout(length: int, heads: list[int]) -> None:
    """Make the reader of a match layout (these OXM headers in this order, all
    accepted by _walk_match): one struct call for headers and values, the headers
    compared with the layout's (another layout of the same length and first
    header is walked, and remembered in its place), the fields wider than a struct integer converted,
    the values narrower than their bytes checked, prerequisites checked if any
    field has them, and the Match built with its fields in name order. The reader
    is straight-line Python written for the layout (as namedtuple and dataclasses
    write theirs): about half the work of a loop over the fields. Its source holds
    only the layout's field names (from ofwire's table) and integers."""
    if len(_LAYOUTS) >= 1024:
        _LAYOUTS.clear()
    fmt, names, offsets = "!", [], []
    off = _FIXED_SIZE + 4
    body = []
    for i, h in enumerate(heads):
        name, width, bits = _EXACT[h]
        code = _STRUCT_CODE.get(width)
        fmt += "I" + (code or f"{width}s")
        if code is None:  # fields of 3, 6 or 16 bytes come as bytes
            body.append(f"    v{i} = from_bytes(v{i}, 'big')")
        if bits < 8 * width:
            body.append(f"    if v{i} >> {bits}: return None")
        names.append(name)
        offsets.append(off + 4)
        off += 4 + width
    order = sorted(range(len(names)), key=names.__getitem__)
    in_at = heads.index(_IN_PORT_HEAD)
    canonical = all(a < b for a, b in zip(heads, heads[1:]))
    fields = "".join(f"({names[i]!r}, new(FM, (v{i}, None))), " for i in order)
    prereq = ["    try:", "        check_prereqs(fields)", "    except OFError:", "        return None"] \
        if any(n in _HAS_PREREQS for n in names) else []
    source = "\n".join([
        "def read(body):",
        f"    {', '.join(f'h{i}, v{i}' for i in range(len(heads)))}, = unpack(body, {_FIXED_SIZE + 4})",
        f"    if {' or '.join(f'h{i} != {h}' for i, h in enumerate(heads))}:",
        "        return OTHER_LAYOUT",
        *body,
        f"    fields = ({fields})",
        *prereq,
        "    m = new_obj(Match)  # as ofwire._checked_match: every check of Match() was made above",
        "    set_(m, 'fields', fields)",
        f"    return m, {_FIXED_SIZE + length}, {canonical}, v{in_at}, {offsets[in_at]}, {order.index(in_at)}",
    ])
    scope = {**_READER_GLOBALS, "unpack": struct.Struct(fmt).unpack_from}
    exec(compile(source, f"<fastlane layout {heads}>", "exec"), scope)
    _LAYOUTS[(length, heads[0])] = scope["read"]


class AddLane:
    """Per endpoint: ``take(session, message)`` handles a FLOW_MOD the fast way or
    returns False having changed nothing."""

    def __init__(self, ep: "OneSwitchEndpoint") -> None:
        self.ep = ep
        self.state: OneSwitchState = ep.state  # type: ignore[assignment]
        self.n_tables = min(ep.n_tables, MAX_VIRTUAL_TABLE + 1)
        self.wire = bool(getattr(ep.backend, "speaks_openflow", False))  # its apply() encodes with ofwire
        self.rule_meta = ep.rule_meta  # (the endpoint keeps this dict for its lifetime)
        self.comp = None  # the compiler ``entries`` were computed with
        # (instruction bytes, virtual in_port, table 0?) -> (virtual instructions, switch, physical in_port
        # match pair or None if the number is the same, physical instructions, shared items
        # needed, physical instruction bytes, physical in_port bytes) | None: not for the lane
        self.entries: dict[tuple[bytes, int], tuple | None] = {}

    @staticmethod
    def for_endpoint(ep: "OneSwitchEndpoint") -> "AddLane | None":
        # only the translator whose apply() the lane reproduces (not a subclass, not a fake)
        return AddLane(ep) if type(ep.state) is OneSwitchState else None

    def take(self, session: "Session", m) -> bool:
        body = m.body
        if len(body) < _FIXED_SIZE + 8:
            return False
        cookie, _, table, command, idle, hard, priority, buffer_id, _, _, flags = _FIXED(body, 0)
        if command or flags & ~_FLAGS_OK or buffer_id != OFP_NO_BUFFER or table >= self.n_tables:
            return False
        got = _decode_exact_match(body)
        if got is None:
            return False
        match, mend, canonical, in_port, at, in_index = got
        comp = self.state.comp
        if comp is not self.comp:  # a remap or group change built a new compiler
            self.comp, self.entries = comp, {}
        key = (body[_FIXED_SIZE + ((mend - _FIXED_SIZE + 7) & ~7):], in_port, table == 0)
        entry = self.entries.get(key, False)
        if entry is False:
            entry = self._entry(key, match, table, priority, cookie, idle, hard)
        if entry is None:
            return False
        ins, sw, pair, pins, needs, pins_wire, pport_bytes = entry
        rule = _new_rule(match, ins, table, priority, cookie, idle, hard)
        if pair is None:
            pmatch = match
        else:  # = _replace_in_port(match, physical port)
            fields = list(match.fields)
            fields[in_index] = pair
            pmatch = _new_obj(Match)
            _set(pmatch, "fields", tuple(fields))
        prule = _new_rule(pmatch, pins, table, priority, cookie, idle, hard)
        key = comp.add_single_copy(rule, sw, prule, needs)
        if key is None:
            return False
        if self.wire and canonical:
            # what the backend's encode_rule_flow_mod writes for this add: the controller's OXMs (in
            # encode_match's order) with the physical in_port, zero padding, the physical instructions
            pflags = OFPFF_SEND_FLOW_REM if idle or hard else 0
            note_add_wire(prule, pflags, b"".join((
                _FIXED_PACK(cookie, 0, table, 0, idle, hard, priority, OFP_NO_BUFFER, OFPP_ANY, OFPG_ANY,
                            pflags),
                body[_FIXED_SIZE:mend] if pair is None else body[_FIXED_SIZE:at] + pport_bytes + body[at + 4:mend],
                _ZEROS[:-(mend - _FIXED_SIZE) & 7], pins_wire)))
        op = _new_obj(PhysicalOp)  # = plan._op(sw, "add", prule, None)
        _set(op, "__dict__", {"switch": sw, "op": "add", "rule": prule, "group": None})
        session.pending.append((m, [[op]]))
        session.pending_ops += 1
        self.rule_meta[key] = (_monotonic(), flags)
        if session.pending_ops > MAX_PENDING_OPS:
            session.kick()
        return True

    def _entry(self, key: tuple[bytes, int], match: ir.Match, table: int, priority: int, cookie: int,
               idle: int, hard: int) -> tuple | None:
        """The lane's translation for these instruction bytes and in_port, computed with
        the endpoint's and the compiler's own checks; None if the lane does not apply."""
        try:
            ins = decode_instructions_cached(key[0])
        except OFError:
            return None  # not remembered: the general path answers it
        entry = None
        if len(ins) == 1 and type(ins[0]) is ApplyActions:
            probe = _new_rule(match, ins, table, priority, cookie, idle, hard)
            try:
                self.ep.check_rule(probe)
                goto, _, inm, sends, plain, single_out, reads, marks = _analyze(probe)
                ref = self.comp.topo.port_map.get(key[1])
                if goto is None and single_out >= 0 and ref is not None and not reads and marks is None \
                        and not controller_meters(probe):  # (a metered packet-in may extend ports: endpoint_meters.py)
                    entry = self._translate(ins[0].actions, single_out, ref, key[1], probe)
            except (OFError, TranslationError):
                entry = None
        if len(self.entries) >= _MAX_ENTRIES:
            self.entries.clear()
        self.entries[key] = entry
        return entry

    def _translate(self, actions: tuple, single_out: int, ref, vport: int, probe: ir.Rule) -> tuple:
        # as Compiler._translate_rule does for a rule with in_port and one output
        comp, sw = self.comp, ref.switch
        a = actions[single_out]
        head, tail = actions[:single_out], actions[single_out + 1:]
        # (as the compiler: the flow-id mark needs no restoring)
        bare = probe.table == 0 and not (tail and mark_read_after(actions)[single_out])
        e = comp._out_by_port[sw].get(a.port) if bare else None
        if e is None:
            e = comp.out_entry(sw, a.port, a.max_len, probe, bare)
        pins = (_apply(head + e[0] + tail),) if head or tail else e[2]
        pair = None if ref.port == vport else ("in_port", FieldMatch(ref.port))
        return probe.instructions, sw, pair, pins, tuple(e[1]), encode_instructions(pins), ref.port.to_bytes(4, "big")

