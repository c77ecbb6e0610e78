"""OneSwitch's translation of Open vSwitch's ``learn`` action.

While any virtual rule learns, every virtual port's pipeline runs on the host
(extension.py, ``LEARN``), so every packet that may fill or read a learned flow
runs on the host switch, and the host's OVS adds the learned flows to its own
table T (virtual table T is physical table T on the host). A learned flow is
then what the virtual switch would have learned, except where it copies a port
number: on the host ``in_port`` is the *physical* port (a host port, or the host
end of an extended port's chain, which stands for the virtual port: an output
there reaches the virtual port's wire). So a spec may use in_port only where the
host's number means the same port everywhere the learned flow looks at it:

* ``in_port[]`` matched as ``in_port[]`` (``NXM_OF_IN_PORT[]`` too): the learned
  flow matches the physical in_port, as the host's copies of the virtual rules do;
* ``output:in_port[]``: the learned flow outputs to that physical port;
* ``in_port=V`` (an immediate): V is mapped to its physical port on the switch
  (a number no port of the switch has, if V is not a virtual port there).

Refused (``check_learn``): in_port copied into any other field or loaded (the
host's number would reach the registers, and from there rules and controllers
that know only virtual numbers); part of in_port; an output to the port a field
other than in_port holds (it would name a host port by a virtual number);
reserved port numbers as an immediate in_port; learning into table 0 (the
host's copies of wildcard table-0 rules also match pkt_mark=0, so a learned flow
with a virtual rule's match would sit beside its copy instead of replacing it).
A learn in a group bucket does nothing (Open vSwitch runs a bucket as an action
set, which has no place for it) and is left out (bucket_ct.py). Fin timeouts give the learned flow a ``fin_timeout``
(first, as Open vSwitch's learn_execute puts it); the host runs it on its own
flow, whose shrunk timeouts its flow stats show. Pure.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from tandem.rules.ir import OFPG_ANY, OFPP_ANY, LEARN_MATCH, LEARN_OUTPUT, ApplyActions, FlowMod, Learn, LearnSpec, Output, Rule

from .ids import MAX_OFPORT, NO_PORT, TranslationError

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT
_PORT_WIDTHS = (16, 32)  # NXM_OF_IN_PORT[] and OXM_OF_IN_PORT[]


def _whole_port(sf) -> bool:
    return sf is not None and sf.field == "in_port" and sf.ofs == 0 and sf.n_bits in _PORT_WIDTHS


def check_learn(rule: Rule | None, a: Learn, what: Rule | str) -> None:
    """Raise TranslationError for a learn OneSwitch cannot make exact (module doc)."""
    if rule is None:  # a bucket's learn does nothing, in Open vSwitch as in the translation (bucket_ct.py)
        return
    if a.table == 0:
        raise TranslationError(what, "learn(table=0): a learned flow in table 0 would sit beside the host's copies "
                               "of table-0 rules (which also match pkt_mark=0) instead of replacing them; "
                               "OneSwitch learns into tables 1..254", _BAD_ARGUMENT)
    for s in a.specs:
        reads = s.src is not None and s.src.field == "in_port"
        writes = s.dst is not None and s.dst.field == "in_port"
        if s.kind == LEARN_OUTPUT:
            if not _whole_port(s.src):
                raise TranslationError(what, "learn: output:FIELD outputs in OneSwitch only to the port in_port "
                                       "holds (another field holds a virtual port number, which the host does "
                                       "not know)", _BAD_ARGUMENT)
        elif reads or writes:
            if s.kind != LEARN_MATCH or not writes or (s.src is not None and s.src != s.dst) or not _whole_port(s.dst):
                raise TranslationError(what, "learn: in_port is the host's port number on the host switch; "
                                       "OneSwitch learns it only as the learned flow's in_port "
                                       "(in_port[] or in_port=PORT) or as its output port", _BAD_ARGUMENT)
            if s.src is None and s.value > MAX_OFPORT:
                raise TranslationError(what, f"learn: in_port={s.value:#x} is a reserved port, which a packet "
                                       "from a virtual port never has in OneSwitch", _BAD_ARGUMENT)


def translate_learn(a: Learn, physical_port) -> Learn:
    """``a`` with every immediate in_port mapped by ``physical_port(v)`` (the port's
    number on the switch, or None when no frame can come in there with that number:
    then NO_PORT)."""
    if not any(s.src is None and s.dst is not None and s.dst.field == "in_port" for s in a.specs):
        return a
    specs = []
    for s in a.specs:
        if s.src is None and s.dst is not None and s.dst.field == "in_port":
            p = physical_port(s.value)
            s = LearnSpec(s.kind, None, NO_PORT if p is None else p, s.dst)
        specs.append(s)
    return replace(a, specs=tuple(specs))


def delete_learned_keys(rules: Iterable[Rule]) -> set[tuple[int, int]]:
    """(table, cookie) of every ``learn(delete_learned)`` of ``rules``: Open vSwitch
    deletes the flows of that table with that cookie when the last rule with such a
    learn goes (or loses it to a modify)."""
    out = set()
    for r in rules:
        for a in r.apply_actions:  # (not in clones: Open vSwitch 3.1 counts the rule's own list's only)
            if type(a) is Learn and a.delete_learned:
                out.add((a.table, a.cookie))
    return out


def learned_flows(state: object, host_stats: Iterable) -> list:
    """The host's flow stats entries (``FlowStatsEntry``) of the flows its switch
    learned, in virtual terms: every host flow outside table 0 that is no rule of the
    translation, its in_port and outputs mapped back to virtual port numbers (a number
    that is no virtual port's on the host stays itself). Empty while nothing learns."""
    if not state.comp.learning:  # type: ignore[attr-defined]
        return []
    topo = state.topo  # type: ignore[attr-defined]
    known = {(r.table, r.priority, r.match) for r in state.physical_rules(topo.host)}  # type: ignore[attr-defined]
    back = {ref.port: v for v, ref in topo.port_map.items() if ref.switch == topo.host}
    out = []
    for fs in host_stats:
        r = fs.rule
        if r.table == 0 or (r.table, r.priority, r.match) in known:
            continue
        match = r.match
        fm = match.get("in_port")
        if fm is not None and fm.value in back:
            match = match.with_field("in_port", back[fm.value])
        ins = tuple(ApplyActions(tuple(Output(back.get(a.port, a.port), a.max_len) if type(a) is Output else a
                                       for a in i.actions)) if type(i) is ApplyActions else i
                    for i in r.instructions)
        out.append(replace(fs, rule=Rule(match, ins, r.table, r.priority, r.cookie, r.idle_timeout, r.hard_timeout)))
    return out


def learned_deletes(state: object, mod: FlowMod, n_tables: int) -> list:
    """The host flow ops that make a controller's delete reach the flows the host
    learned, as on one bridge: the delete itself on the host, in every table it
    names but 0 (where no flow is learned, and OneSwitch's own rules sit), its
    in_port mapped to the host's number. The copies of the virtual rules it
    selects go too, as they would (the state deletes them as well). A delete
    filtered by cookie, out_port or out_group is not carried to learned flows
    (docs/oneswitch.md section 6). Empty while nothing learns."""
    from tandem.backends.base import FlowOp

    if not state.comp.learning or mod.cookie_mask or mod.out_port != OFPP_ANY or mod.out_group != OFPG_ANY:  # type: ignore[attr-defined]
        return []
    topo = state.topo  # type: ignore[attr-defined]
    r = mod.rule
    match = r.match
    fm = match.get("in_port")
    if fm is not None and fm.mask is None:
        ref = topo.port_map.get(fm.value)
        if ref is not None:
            if ref.switch != topo.host:
                return []
            match = match.with_field("in_port", ref.port)
    tables = range(1, n_tables) if mod.all_tables else [r.table] if r.table else []
    strict = mod.command.endswith("_strict")
    return [FlowOp(topo.host, "delete_strict" if strict else "delete", Rule(match, (), t, r.priority if strict else 0))
            for t in tables]
