"""``actset_output=P`` in the OneSwitch translation (docs/oneswitch.md section 4).

A physical switch's action set holds the *physical* output a written output became
(compiler ``_written_output``): a virtual port of the switch its physical port; a
port of another switch (and LOCAL off the host) the PCIe port toward it, its flow
id riding in the set's mark, which no match can read; FLOOD and ALL the PCIe port
toward the switch that fans them out (ALL with one switch); a port number no port
has ``output:0``; IN_PORT, CONTROLLER, TABLE and NORMAL themselves. A copy of a rule
matching ``actset_output=P`` on switch ``sw`` therefore matches ``physical(sw, P)``,
which stands for P exactly while no other written output Q has the same physical
form there. ``ActsetLedger`` keeps that true: it counts the outputs the virtual
rules write (the one each write_actions list leaves in the set) and the copies
matching each physical form, and refuses (``FLOW_MOD_FAILED``, naming both ports)
the rule that would put a matcher of P and a writer of such a Q together. It
counts a written Q wherever its rule runs (a packet entering another switch may
not carry it to ``sw``), so it may refuse a rule set no packet could tell apart.

State: counts. Pure otherwise; cost O(written ports x matched forms) per rule that
writes an output or matches actset_output.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable, Iterable, Sequence

from tandem.rules.actset_output import FIELD, MAX_PORT, OFPP_UNSET, is_port_value
from tandem.rules.ir import (
    OFPP_ALL, OFPP_FLOOD, OFPP_LOCAL, RESERVED_PORT_NAMES, Rule, WriteActions,
)

from .ids import NO_PORT, TranslationError
from .rule_analysis import kept_output

_FLOODS = (OFPP_FLOOD, OFPP_ALL)
_FAILED = None  # (the endpoint answers FLOW_MOD_FAILED)
_BAD_VALUE = (4, 4)  # OFPET_BAD_MATCH / OFPBMC_BAD_VALUE

# (sw, virtual port) -> the physical port a written output to it becomes on sw
Physical = Callable[[str, int], int]


def physical_form(compiler, sw: str, port: int) -> int:
    """The physical output an action set on ``sw`` holds for a written virtual ``port``."""
    if port in _FLOODS:
        if compiler.single:
            return OFPP_ALL
        return compiler.topo.next_hop(sw, compiler._flood_via(sw))[1]
    ref = compiler.ports.get(port)
    if ref is None:
        return NO_PORT if port <= MAX_PORT else port  # (IN_PORT, CONTROLLER, TABLE, NORMAL, UNSET: themselves)
    if ref.switch == sw:
        return ref.port
    return compiler.topo.next_hop(sw, ref.switch)[1]


def _name(port: int) -> str:
    return "UNSET" if port == OFPP_UNSET else RESERVED_PORT_NAMES.get(port, str(port))


def written_ports(rule: Rule) -> frozenset[int]:
    """The outputs ``rule``'s write_actions leave in the action set."""
    out = set()
    for ins in rule.instructions:
        if type(ins) is WriteActions:
            k = kept_output(ins.actions)
            if k >= 0:
                out.add(ins.actions[k].port)
    return frozenset(out)


def matched_port(rule: Rule) -> int | None:
    fm = rule.match.get(FIELD)
    return None if fm is None else fm.value


def checked_value(rule: Rule) -> None:
    p = matched_port(rule)
    if p is not None and not is_port_value(p):
        raise TranslationError(rule, f"actset_output={p:#x} is outside 0..{MAX_PORT:#x} and the reserved ports", _BAD_VALUE)


def physical_copies(copies: Sequence[tuple[str, Rule]], port: int, physical: Physical) -> list[tuple[str, Rule]]:
    """The copies with ``actset_output=port`` replaced by each switch's physical form."""
    out = []
    for sw, prule in copies:
        p = physical(sw, port)
        if p != port and FIELD in prule.match:
            prule = replace(prule, match=prule.match.with_field(FIELD, p))
        out.append((sw, prule))
    return out


class ActsetLedger:
    """Counts of the written outputs and of the matched (switch, virtual port) pairs."""

    def __init__(self, physical: Physical) -> None:
        self.physical = physical
        self.written: Counter = Counter()  # virtual port -> rules leaving it in the action set
        self.matched: Counter = Counter()  # (switch, virtual port) -> copies matching it

    def facts(self, rule: Rule, switches: Iterable[str]) -> tuple[frozenset[int], frozenset[tuple[str, int]]] | None:
        p = matched_port(rule)
        written = written_ports(rule)
        matched = frozenset((sw, p) for sw in switches) if p is not None else frozenset()
        return (written, matched) if written or matched else None

    def check(self, rule: Rule, facts, old) -> None:
        """Refuse ``rule`` (replacing a rule with facts ``old``) if a copy of it or of
        another rule would match a physical output that stands for two written ports."""
        if facts is None:
            return
        written, matched = facts
        w_all = self.written.copy()
        m_all = self.matched.copy()
        if old is not None:
            w_all.subtract(old[0])
            m_all.subtract(old[1])
        w_all.update(written)
        m_all.update(matched)
        pairs = [((sw, p), q) for (sw, p) in matched for q in w_all if w_all[q] > 0]
        pairs += [((sw, p), q) for (sw, p), n in m_all.items() if n > 0 for q in written]
        for (sw, p), q in pairs:
            if q != p and self.physical(sw, q) == self.physical(sw, p):
                raise TranslationError(rule, f"on {sw} an action set holding output:{_name(q)} and one holding "
                                       f"output:{_name(p)} hold the same physical port, so actset_output={_name(p)} "
                                       "cannot tell them apart there while one rule writes the first and another "
                                       "matches the second (docs/oneswitch.md section 4)", _FAILED)

    def count(self, facts, sign: int) -> None:
        if facts is None:
            return
        for q in facts[0]:
            self.written[q] += sign
        for k in facts[1]:
            self.matched[k] += sign
