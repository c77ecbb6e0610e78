"""One-pass analysis of a virtual rule for the OneSwitch compiler.

``_analyze`` reads a rule once and returns what translation needs (goto target,
its in_port match, whether it sends anywhere, whether its
apply-actions have exactly one output and no group, whether it writes FLOOD
or ALL into the action set, whether it reads in_port, what it does with the
packet mark: ``MarkFacts``). ``reads_in_port`` finds
the moves and pushes that read ``in_port`` (the physical port on a physical
switch: see ``pin_in_port``); ``mark_read_after`` says where the packet's own
mark may still be seen.
Pure; cost O(actions).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from tandem.rules.ir import (
    OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_TABLE, Action, ApplyActions, Ct, DecMplsTtl, DecTtl,
    GotoTable, GroupAction, MoveField,
    Match, Output, OutputReg, Resubmit, Rule, SetField, StackPop, StackPush, Subfield, WriteActions, split_register,
)
from tandem.rules.ir import OFPP_NORMAL, Learn
from tandem.rules.ir import Controller as NxController
from tandem.rules.ir import Clone, Exit, OutputTrunc
from tandem.rules.ir import Bundle, Multipath
from tandem.rules.ir import DecNshTtl
from tandem.rules.ir import CheckPktLarger

from .learn_translate import check_learn
from .clone_translate import check_clone, clone_reads_in_port
from .clone_translate import clone_lookups, clone_output_regs, learns
from .clone_translate import clone_ct_tables

from .ids import TranslationError

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT


def mark_read_after(actions: Sequence[Action]) -> list[bool]:
    """For each position, whether an action after it may see the packet mark: a
    packet-in (output to CONTROLLER; dec_ttl, dec_mpls_ttl and dec_nsh_ttl send one when the TTL
    runs out) lists it, a group's buckets may do anything, a move or push may read
    it, a resubmit's rules may do any of these, an output_reg may be one to
    CONTROLLER, and a ``ct(table=T)`` forks a copy that goes on in table T with it.
    (Outputs do not: the mark never leaves the switches.)"""
    out = [False] * len(actions)
    seen = False
    for i in range(len(actions) - 1, -1, -1):
        out[i] = seen
        a = actions[i]
        t = type(a)
        if (t is Output and a.port == OFPP_CONTROLLER) or t is NxController or t is GroupAction or (t is DecTtl and a.packet_ins()) \
                or t is DecMplsTtl or t is DecNshTtl or t is Resubmit or t is OutputReg \
                or ((t is MoveField or t is StackPush) and a.src.field == "pkt_mark") or (t is Ct and a.table is not None) \
                or (t is Clone and mark_read_after((_NOTHING, *a.actions))[0]):
            seen = True
    return out


_NOTHING = Exit()  # (a placeholder that reads nothing: mark_read_after(...)[0] asks about what follows it)


def check_ct(rule: Rule | None, actions: Sequence[Action], what: Rule | str) -> None:
    """OneSwitch's limits on connection tracking (docs/endpoint.md): none left (ct and
    ct_clear in a group bucket, ``rule`` None, are translated: bucket_ct.py). A ``ct(table=T)`` recirculating to T at or below
    its own table (or written: at the pipeline's end) counts as a resubmit for the mark
    ledger (``_analyze``); into table 0 it runs with the mark reset to 0 first, written
    into the action set as a written ``resubmit(,0)`` is (``resubmits_translated``)."""
    return None


def reads_in_port(actions: Sequence[Action]) -> bool:
    """Does a move or push among ``actions`` read the packet's in_port?"""
    for a in actions:
        t = type(a)
        if (t is MoveField or t is StackPush) and a.src.field == "in_port":
            return True
    return False


def pin_in_port(actions: Sequence[Action], vport: int | None, what: Rule | str) -> tuple[Action, ...]:
    """``actions`` with every move from in_port made a load of ``vport``'s bits.
    On a physical switch in_port is the physical port, so a copy cannot read the
    virtual one; a rule that matches ``in_port=V`` exactly knows it is V, and so does
    each per-in_port copy of a rule that matches none (``Compiler._expanded``). A push
    of in_port, or a read in a group (``vport`` None), is refused."""
    out: list[Action] = []
    for a in actions:
        t = type(a)
        if (t is MoveField or t is StackPush) and a.src.field == "in_port":
            if vport is None or t is StackPush:
                raise TranslationError(what, f"{'push' if t is StackPush else 'move'} reads in_port, which on a "
                                       "physical switch is the physical port; OneSwitch can only replace it by the "
                                       "virtual port in a move of a rule that matches in_port exactly", _BAD_ARGUMENT)
            bits = (vport >> a.src.ofs) & ((1 << a.src.n_bits) - 1)
            out += _load(a.dst, bits)
        elif t is Clone:  # (a move inside a clone reads the same in_port)
            out.append(Clone(pin_in_port(a.actions, vport, what)))
        else:
            out.append(a)
    return tuple(out)


def _load(dst: Subfield, bits: int) -> list[Action]:
    value, mask = bits << dst.ofs, ((1 << dst.n_bits) - 1) << dst.ofs
    if dst.field.startswith("x"):  # a register view: its registers
        return [SetField(f, v, m) for f, v, m in split_register(dst.field, value, mask)]
    return [SetField(dst.field, value, mask)]


def _analyze(rule: Rule) -> tuple:
    """One pass over a rule: (goto target, whether it writes FLOOD or ALL into the
    action set, its in_port match, whether any action outputs or calls a group —
    if not, its copies are the same on every switch — whether its apply-actions
    are free of group actions, for such apply-actions with exactly one output,
    that output's index, else -1, whether a move or push reads in_port:
    ``pin_in_port``, and its ``MarkFacts`` or None if it has none)."""
    in_port = None
    marks = None
    for k, fm in rule.match.fields:
        if k == "in_port":
            in_port = fm
        elif k == _MARK:
            marks = _USES_MARK
    goto = None
    wflood = sends = False
    plain = True
    outs = 0
    out_at = -1
    reads = resubmits = table0 = changes = False
    zeroes = False  # its write_actions reset the mark for a table-0 resubmit (table0_lookup.py)
    late = False  # it has lookups written into the action set (which run after every write)
    for ins in rule.instructions:
        t = type(ins)
        if t is ApplyActions:
            for i, a in enumerate(ins.actions):
                ta = type(a)
                if ta is Output:
                    if a.port == OFPP_TABLE:  # a lookup in table 0 (``resubmits_translated``)
                        resubmits = table0 = True
                        plain = False
                        continue
                    outs += 1
                    out_at = i
                elif ta is GroupAction:
                    sends = True
                    plain = False
                elif ta is SetField:
                    if a.field == _MARK:
                        marks = _USES_MARK
                elif ta is MoveField or ta is StackPush or ta is StackPop:
                    if ta is not StackPop and a.src.field == "in_port":
                        reads = True
                    if marks is None and _touches_mark(a):
                        marks = _USES_MARK
                elif ta is Resubmit:
                    resubmits = True
                    table0 = table0 or a.table == 0 or (a.table == 255 and rule.table == 0)
                    if _other_in_port(a, in_port):  # the copy names the port's physical number
                        changes = sends = True
                        plain = False
                elif ta is OutputReg:  # becomes an output (``output_reg_port``): switch-specific
                    sends = True
                    plain = False
                    if _fixed_at_table(ins.actions, i, rule.match):  # (a lookup in table 0, as output:TABLE)
                        resubmits = table0 = True
                elif ta is Bundle or ta is Multipath:
                    if ta is Bundle:  # member numbers, groups: switch-specific (hashsel_translate)
                        sends = True
                        plain = False
                    if marks is None and _touches_mark(a):
                        marks = _USES_MARK
                elif ta is Ct:
                    check_ct(rule, (a,), rule)
                    if a.table is not None and a.table <= rule.table:  # the copy runs an earlier table again
                        resubmits = True
                        table0 = table0 or a.table == 0
                elif ta is Learn:
                    check_learn(rule, a, rule)
                    sends = True  # an immediate in_port is mapped per switch (Compiler._actions)
                    plain = False
                elif ta is OutputTrunc:  # (switch-specific: trunc_translate.py)
                    sends = True
                    plain = False
                elif ta is Clone:  # (its outputs are switch-specific; clone_translate.py)
                    check_clone(a, rule)
                    sends = True
                    plain = False
                    reads = reads or clone_reads_in_port(a)
                    if marks is None and _clone_touches_mark(a):
                        marks = _USES_MARK
                    for b in clone_lookups(a):  # (as in the rule's own list: resubmits_translated)
                        resubmits = True
                        if type(b) is Output:  # output:TABLE
                            table0 = True
                            continue
                        table0 = table0 or b.table == 0 or (b.table == 255 and rule.table == 0)
                        if _other_in_port(b, in_port):
                            changes = True
                    for t_ct in clone_ct_tables(a):  # (its tracked copy recirculates: as in the rule's own list)
                        if t_ct <= rule.table:
                            resubmits = True
                            table0 = table0 or t_ct == 0
                    for b in learns(a.actions):  # (as in the rule's own list)
                        check_learn(rule, b, rule)
                    for flat in clone_output_regs(ins.actions, i):  # (TABLE's number: a lookup in table 0)
                        if _fixed_at_table(flat, len(flat) - 1, rule.match):
                            resubmits = table0 = True
        elif t is WriteActions:
            for a in ins.actions:
                ta = type(a)
                if ta is GroupAction:
                    sends = True
                elif ta is Output:
                    sends = True
                    wflood = wflood or a.port in _FLOODS
                    if a.port == OFPP_TABLE:  # a lookup in table 0 (table0_lookup.WRITTEN_TABLE)
                        late = table0 = True
                elif ta is MoveField and a.src.field == "in_port":
                    reads = True
                elif ta is Resubmit:
                    late = True
                    if a.table in (0, 255):  # (the action set runs as table 0)
                        table0 = zeroes = True
                    if _other_in_port(a, in_port):
                        changes = sends = True
                elif ta is Ct:
                    check_ct(rule, (a,), rule)
                    # (recirculates when the pipeline ends, after every write of its action set, and
                    # the copy starts with an empty one: a written lookup, as a written resubmit)
                    late = late or a.table is not None
                    if a.table == 0:  # its mark reset runs among the set-fields, as a written resubmit(,0)'s
                        table0 = zeroes = True
            marks = _written_facts(ins.actions, marks)
        elif t is GotoTable:
            goto = ins.table
    if outs:
        sends = True
    if resubmits or late:
        marks = replace(marks or MarkFacts(), resubmits=True, table0=table0, changes_in_port=changes)
        if zeroes or not resubmits:
            marks = replace(marks, zeroes=zeroes, lookups_at_end=not resubmits)
    if reads or wflood:
        marks = replace(marks or MarkFacts(), port_specialised=True)
    return goto, wflood, in_port, sends, plain, out_at if plain and outs == 1 else -1, reads, marks


_MARK = "pkt_mark"


@dataclass(frozen=True)
class MarkFacts:
    """What a rule does with the packet mark, for ``Compiler``'s pipeline-wide check
    (docs/oneswitch.md section 2, "Written outputs and the mark"). ``uses``: it
    matches, sets, moves, pushes or pops pkt_mark (so the virtual mark may be non-zero);
    ``sets_id``: its write_actions keep an output that may cross PCIe, whose flow id
    the action set then sets in the mark; ``observes``: its write_actions read or
    write the mark, or keep an output to CONTROLLER (a packet-in lists the mark);
    ``groups``: the groups its write_actions keep; ``resubmits``: its apply-actions
    resubmit (so rules of any table may run after it, and a written output's flow
    id may meet an observer in an earlier table)."""

    uses: bool = False
    sets_id: bool = False
    observes: bool = False
    groups: tuple[int, ...] = ()
    resubmits: bool = False
    table0: bool = False  # its apply-actions look table 0 up again (resubmit into 0, output:TABLE)
    # (not about the mark, but the same pipeline-wide bookkeeping) a resubmit of it looks up
    # with another in_port; its copies are specialised to their in_port (a move of in_port
    # made a load of it, a written FLOOD/ALL leaving it out)
    changes_in_port: bool = False
    port_specialised: bool = False
    # its write_actions reset the mark for a resubmit into table 0, which runs even when a
    # written output wins (table0_lookup.py)
    zeroes: bool = False
    # its lookups are all written into the action set: they run after every write, so they
    # change no order of writes (``resubmits`` is set too)
    lookups_at_end: bool = False


_USES_MARK = MarkFacts(uses=True)


def _clone_touches_mark(a: Clone) -> bool:
    return any(_clone_touches_mark(b) if type(b) is Clone else _touches_mark(b) for b in a.actions)


def _touches_mark(a: Action) -> bool:
    """Does a set_field, move, push or pop read or write pkt_mark?"""
    t = type(a)
    if t is SetField:
        return a.field == _MARK
    if t is MoveField:
        return a.src.field == _MARK or a.dst.field == _MARK
    if t is StackPush:
        return a.src.field == _MARK
    if t is StackPop:
        return a.dst.field == _MARK
    if t is Multipath or t is Bundle:
        return a.dst is not None and a.dst.field == _MARK
    return False


def writes_mark(a: Action) -> bool:
    """Does a set_field, move or pop write pkt_mark?"""
    t = type(a)
    if t is SetField:
        return a.field == _MARK
    if t is MoveField or t is StackPop:
        return a.dst.field == _MARK
    if t is Multipath or t is Bundle:
        return a.dst is not None and a.dst.field == _MARK
    return False


def _written_facts(actions: Sequence[Action], facts: MarkFacts | None) -> MarkFacts | None:
    """``facts`` with one write_actions list's part added (the output it keeps:
    ``kept_output``)."""
    uses = facts is not None and facts.uses
    observes = groups = False
    for a in actions:
        if _touches_mark(a):
            uses = observes = True
        elif type(a) is GroupAction:
            groups = True
    kept = kept_output(actions)
    out = actions[kept] if kept >= 0 else None
    sets_id = out is not None and out.port not in _NO_ID_PORTS
    observes = observes or (out is not None and out.port == OFPP_CONTROLLER)
    if not (uses or sets_id or observes or groups):
        return facts
    if facts is None:
        return MarkFacts(uses, sets_id, observes, tuple(a.group_id for a in actions if type(a) is GroupAction))
    return replace(facts, uses=uses, sets_id=sets_id, observes=observes,
                   groups=tuple(a.group_id for a in actions if type(a) is GroupAction))


def kept_output(actions: Sequence[Action]) -> int:
    """The index of the output a write_actions list leaves in the action set, or -1:
    its last output, none if it also writes a group (the group wins over any output
    until a clear_actions empties both)."""
    at = -1
    for i, a in enumerate(actions):
        t = type(a)
        if t is GroupAction:
            return -1
        if t is Output:
            at = i
    return at


def observes_mark(actions: Sequence[Action], groups: dict, depth: int = 0) -> bool:
    """May a group bucket with these actions see the packet mark: a packet-in (an
    output to CONTROLLER, or dec_ttl / dec_mpls_ttl / dec_nsh_ttl when the TTL runs out) lists it,
    a move, push or masked set_field reads it, a group it calls may do either?"""
    for a in actions:
        t = type(a)
        if (t is Output and a.port == OFPP_CONTROLLER) or t is NxController or (t is DecTtl and a.packet_ins()) or t is DecMplsTtl \
                or t is DecNshTtl:
            return True
        if (t is MoveField or t is StackPush) and a.src.field == _MARK:
            return True
        if t is SetField and a.field == _MARK and a.mask is not None:
            return True
        if t is GroupAction:
            g = groups.get(a.group_id)
            if g is not None and depth < _MAX_GROUP_DEPTH and any(observes_mark(b.actions, groups, depth + 1)
                                                                  for b in g.buckets):
                return True
    return False


_MAX_GROUP_DEPTH = 16
_NO_ID_PORTS = (OFPP_CONTROLLER, OFPP_IN_PORT, OFPP_NORMAL, OFPP_TABLE)


_FLOODS = (OFPP_FLOOD, OFPP_ALL)


def resubmits_translated(actions: Sequence[Action], rule: Rule, vport: int | None, written: bool) -> tuple[Action, ...]:
    """``actions`` with each resubmit (and, in apply-actions, output:TABLE) as the
    physical switch runs it. Virtual table t is physical table t and the packet's
    whole pipeline runs on its ingress switch, so a resubmit that keeps the packet's
    in_port (``resubmit(,T)``, or ``resubmit(V,T)`` in a rule that matches
    ``in_port=V`` exactly where V is no port, so no resubmit names it: ``vport``)
    into a table T >= 1 finds the copy of the rule
    the virtual switch finds, and stays as it is. Into table 0 (``output:TABLE`` is
    the same lookup, as Open vSwitch runs it) it becomes ``set_field:0->pkt_mark,
    resubmit(,0)``: physical table 0 also holds the delivery rules, told apart from
    the copies of virtual table 0 by a packet mark of 0, and the packet may carry a
    flow id a PCIe output left there; while no virtual rule uses the mark its virtual
    value is 0, so the lookup sees what the virtual one sees (the compiler's mark
    ledger refuses the rules that would make the mark used meanwhile); so does a
    ``ct(table=0)``, whose recirculated copy looks table 0 up again; written into
    the action set, the set_field joins the set's set-fields (where that is exact:
    ``table0_lookup.py``). Refused: a resubmit into table 254 (Open vSwitch's own). A resubmit with another in_port keeps it, virtual: the compiler
    names its physical number per switch (``Compiler._resubmit``). A resubmit
    without a table goes to the rule's own, or, ``written`` into the action set, to
    table 0 (Open vSwitch runs the action set as table 0)."""
    out: list[Action] = []
    own_table = 0 if written else rule.table
    for a in actions:
        t = type(a)
        if t is Output and a.port == OFPP_TABLE and not written:
            out += (_ZERO_MARK, Resubmit(OFPP_IN_PORT, 0))
            continue
        if t is Ct and a.table == 0:  # (its copy looks table 0 up again: the same mark 0; written, as resubmit(,0))
            out += (_ZERO_MARK, a)
            continue
        if t is Clone:  # (its lookups as the rule's own: clone_translate.py)
            out.append(Clone(resubmits_translated(a.actions, rule, vport, written)))
            continue
        if t is not Resubmit:
            out.append(a)
            continue
        table = own_table if a.table == 255 else a.table
        if table == 254:
            raise TranslationError(rule, "resubmit into table 254, Open vSwitch's own", _BAD_ARGUMENT)
        if table == 0:  # (written: the reset runs among the set-fields, table0_lookup.py)
            out += (_ZERO_MARK, Resubmit(OFPP_IN_PORT if a.in_port == vport else a.in_port, 0))
            continue
        port = OFPP_IN_PORT if a.in_port == vport else a.in_port
        out.append(a if a.in_port == port and a.table == table else Resubmit(port, table))
    return tuple(out)


_ZERO_MARK = SetField("pkt_mark", 0)


def _fixed_at_table(actions: Sequence[Action], i: int, match: Match) -> bool:
    """Does the output_reg ``actions[i]`` hold TABLE's number, fixed by the rule (``output_reg_port``)?"""
    try:
        out = output_reg_port(actions, i, match, "")
    except TranslationError:
        return False  # (refused where it is translated, or split per value first)
    return out is not None and out.port == OFPP_TABLE


def _other_in_port(a: Resubmit, in_port) -> bool:
    """Does this resubmit look up with an in_port other than the packet's own (which a
    rule matching ``in_port=V`` exactly knows is V)?"""
    return a.in_port != OFPP_IN_PORT and not (in_port is not None and in_port.mask is None
                                              and in_port.value == a.in_port)


def output_reg_port(actions: Sequence[Action], i: int, match: Match, what: Rule | str) -> Output | None:
    """The output ``actions[i]``, an output_reg, makes: the register holds a *virtual*
    port number, so the copy outputs to what that port is on its switch. Translated
    when the rule itself fixes the value at that point: its match pins the source
    bits (an exact or masked match covering them) and no earlier action writes them
    but a load (set_field) of known bits; then it is ``Output(port)`` (None: a value
    above 0xffff, which sends nothing). Otherwise refused: the value is only known at
    run time, and the physical switch would output to the physical port of that
    number."""
    a = actions[i]
    sf = a.src
    field = sf.field
    fm = match.get(field) if field in _STATE_SOURCES or not field.startswith("x") else None
    value, known = (fm.value, fm.mask if fm.mask is not None else -1) if fm is not None else (0, 0)
    for b in actions[:i]:
        t = type(b)
        if t is SetField and b.field == field:
            m = b.mask if b.mask is not None else -1
            value, known = (value & ~m) | (b.value & m), known | m
        elif (t is Multipath or t is Bundle) and b.dst is not None and b.dst.field == field:
            known &= ~(((1 << b.dst.n_bits) - 1) << b.dst.ofs)
        elif ((t is MoveField or t is StackPop or t is CheckPktLarger) and b.dst.field == field) or t is Resubmit:
            known = 0 if t is Resubmit else known & ~(((1 << b.dst.n_bits) - 1) << b.dst.ofs)
        elif field not in _STATE_SOURCES and t is not Output and t is not OutputReg and t is not GroupAction:
            known = 0  # an action that may rewrite a frame field
    need = ((1 << sf.n_bits) - 1) << sf.ofs
    if known & need != need:
        raise TranslationError(what, f"output:{field}[{sf.ofs}..{sf.ofs + sf.n_bits - 1}] (output_reg): the rule's "
                               "match and earlier actions do not fix the port number it holds, and on a physical "
                               "switch a number only known at run time would be the physical port (docs/oneswitch.md "
                               "section 7)", _BAD_ARGUMENT)
    port = (value & need) >> sf.ofs
    if port > 0xFFFF:
        return None
    return Output(port + 0xFFFF0000 if port >= 0xFF00 else port, a.max_len)


# Pipeline state only actions that name it write (registers, the mark, metadata, tunnel_id).
_STATE_SOURCES = frozenset({f"reg{i}" for i in range(16)} | {"pkt_mark", "metadata", "tunnel_id"})
