"""Fast lane for a controller's most common FLOW_MOD: an ADD of a new rule that
matches ``in_port`` exactly and whose instructions are one apply-actions list
with one output (learning-switch and L2/L3 forwarding rules).

Such a rule translates to one physical copy on its ingress switch: the match
with the physical in_port, the table shifted by ``TABLE_OFFSET``, the output
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

State: the per-compiler cache. Cost: O(match fields) per FLOW_MOD, no sort of
instructions, no FlowMod/UpdatePlan objects.
"""

from __future__ import annotations

import operator
import struct
import time
from typing import TYPE_CHECKING

from tandem.rules import ir
from tandem.rules.ir import ApplyActions, FieldMatch, Match, _new_rule
from tandem.rules.ofwire import (
    _OXM_EXACT, OFP_NO_BUFFER, OFPMT_OXM, OFPXMC_OPENFLOW_BASIC, OFError, check_prereqs, decode_instructions_cached,
    note_match_wire,
)
from tandem.rules.ofwire_msgs import FLOW_MOD_FIXED, OFPFF_CHECK_OVERLAP

from .endpoint_common import MAX_PENDING_OPS
from .ids import MAX_VIRTUAL_TABLE, TABLE_OFFSET, TranslationError
from .ir_intern import _apply, _replace_in_port
from .plan import _op
from .rule_analysis import _analyze
from .state import OneSwitchState

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint import OneSwitchEndpoint
    from tandem.oneswitch.endpoint_session import Session

_FIXED = FLOW_MOD_FIXED.unpack_from
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


def _decode_exact_match(body: bytes) -> tuple[Match, int, int, int, int] | None:
    """The FLOW_MOD's ofp_match when it is the lane's kind: OXM basic fields only
    (none of OneSwitch's internal ones), each exact and once, values within their
    width, prerequisites met, an in_port. Returns (match, end offset of the match
    in ``body``, whether its OXMs are in the order ``encode_match`` writes (strictly
    increasing headers), in_port value, offset of in_port's value) or None: then
    the general decoder decides, with its error if the match is bad."""
    if len(body) < _FIXED_SIZE + 8:
        return None
    mtype, length = _U16_PAIR(body, _FIXED_SIZE)
    mend = _FIXED_SIZE + length
    if mtype != OFPMT_OXM or length < 4 or _FIXED_SIZE + ((length + 7) & ~7) > len(body):
        return None
    off = _FIXED_SIZE + 4
    prev = 0
    ordered = True
    fields = []
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
    m = object.__new__(Match)  # as ofwire._checked_match: every check of Match() was made above
    object.__setattr__(m, "fields", tuple(sorted(fields, key=_BY_NAME)))
    return m, mend, ordered, from_bytes(body[at:at + 4], "big"), at


class AddLane:
    """Per endpoint: ``take(session, message)`` handles a FLOW_MOD the fast way or
    returns False having changed nothing."""

    def __init__(self, ep: "OneSwitchEndpoint") -> None:
        self.ep = ep
        self.state: OneSwitchState = ep.state  # type: ignore[assignment]
        self.n_tables = min(ep.n_tables, MAX_VIRTUAL_TABLE + 1)
        self.wire = bool(getattr(ep.backend, "speaks_openflow", False))  # its apply() encodes with ofwire
        self.comp = None  # the compiler ``entries`` were computed with
        # (instruction bytes, virtual in_port) -> (virtual instructions, switch, physical in_port
        # or None if the same, physical instructions, shared items needed) | None: not for the lane
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
        match, mend, canonical, in_port, at = got
        comp = self.state.comp
        if comp is not self.comp:  # a remap or group change built a new compiler
            self.comp, self.entries = comp, {}
        key = (body[_FIXED_SIZE + ((mend - _FIXED_SIZE + 7) & ~7):], in_port)
        entry = self.entries.get(key, False)
        if entry is False:
            entry = self._entry(key, match, table, priority, cookie, idle, hard)
        if entry is None:
            return False
        ins, sw, pport, pins, needs = entry
        rule = _new_rule(match, ins, table, priority, cookie, idle, hard)
        pmatch = match if pport is None else _replace_in_port(match, pport)
        prule = _new_rule(pmatch, pins, table + TABLE_OFFSET, priority, cookie, idle, hard)
        if not comp.add_single_copy(rule, sw, prule, needs):
            return False
        if self.wire and canonical:  # the physical ofp_match: the controller's OXMs (canonical order) with the physical in_port
            pad = _ZEROS[:-(mend - _FIXED_SIZE) & 7]
            note_match_wire(pmatch, body[_FIXED_SIZE:mend] + pad if pport is None
                            else body[_FIXED_SIZE:at] + pport.to_bytes(4, "big") + body[at + 4:mend] + pad)
        session.pending.append((m, [[_op(sw, "add", prule, None)]]))
        session.pending_ops += 1
        self.ep.rule_meta[(table, priority, match)] = (time.monotonic(), flags)
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
                goto, facts, inm, sends, plain, single_out = _analyze(probe)
                ref = self.comp.topo.port_map.get(key[1])
                if goto is None and not facts and single_out >= 0 and ref is not None:
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
        e = comp._out_by_port[sw].get(a.port)
        if e is None:
            e = comp._out_entry(sw, a.port, a.max_len, probe)
        head, tail = actions[:single_out], actions[single_out + 1:]
        pins = (_apply(head + e[0] + tail),) if head or tail else e[2]
        return probe.instructions, sw, None if ref.port == vport else ref.port, pins, tuple(e[1])

