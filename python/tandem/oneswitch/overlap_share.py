"""Two virtual rules whose copies would be one physical rule: one entry stands for both.

Two virtual rules of equal priority can have a copy with the very same table, priority
and match on one switch: a wildcard-in_port rule copied once per in_port (it writes
FLOOD/ALL into the action set, or sits in table 0 at priority 65535) and a rule naming
that in_port with the same other fields (docs/oneswitch.md §3). A packet there meets
both rules, and which one wins is undefined in OpenFlow (Open vSwitch leaves it so), so
either rule's copy is correct: the physical entry is one of them, the other waits.

Which copy is installed depends on the two rules' matches alone (the smaller
``repr``), not on the order they came in: a compiler rebuilt from the same rules (a
remap, a group change, a FLOW_MOD undone) installs the same entries. The waiting copy
counts nothing (the packets are the installed rule's, as they would be on one bridge)
and is installed when the rule whose copy stands for it goes (deleted, timed out,
replaced). A copy that would coincide with one of OneSwitch's own rules (delivery,
wire) is still refused with ``FLOW_MOD_FAILED/OVERLAP``.

State: ``claims`` (the entries two or more rules' copies claim: their keys, the
installed one's among them) and ``shadowed`` (each rule's waiting copies); both stay
empty unless such rules exist, and the compiler consults them only then.
"""

from __future__ import annotations

from .ids import PKey, pkey


def _rank(key: tuple) -> str:
    return repr(key[2])  # (equal table and priority: the match decides)


class SharedEntries:
    def __init__(self) -> None:
        self.claims: dict[tuple[str, PKey], list[tuple]] = {}
        self.shadowed: dict[tuple, list[tuple[str, object]]] = {}
        self.reowned: set[tuple] = set()  # entries another rule's copy took since the last plan: replaced, counters reset

    def take_reowned(self) -> set[tuple]:
        out, self.reowned = self.reowned, set()
        return out

    def owner(self, comp, sw: str, pk: PKey) -> tuple | None:
        """The virtual rule whose copy is ``pk`` on ``sw`` (None: one of OneSwitch's own rules)."""
        entry = (sw, comp.rules[sw][pk])
        keys = self.claims.get((sw, pk)) or comp.copies
        return next((k for k in keys if entry in comp.copies.get(k, ())), None)

    def place(self, comp, key: tuple, copies: list) -> list:
        """The copies of rule ``key`` to install: those whose entry is free, and those that
        win a tie (the other rule's copy then waits); the copies that lose wait."""
        out = []
        for sw, prule in copies:
            pk = pkey(prule)
            if pk not in comp.rules[sw]:
                out.append((sw, prule))
                continue
            owner = self.owner(comp, sw, pk)
            self.claims.setdefault((sw, pk), [owner]).append(key)
            if _rank(key) < _rank(owner):
                installed = comp.copies[owner]
                self.shadowed.setdefault(owner, []).append(installed.pop(installed.index((sw, comp.rules[sw][pk]))))
                self.reowned.add(("rule", sw, pk))
                out.append((sw, prule))
            else:
                self.shadowed.setdefault(key, []).append((sw, prule))
        return out

    def release(self, comp, key: tuple, removed: list) -> None:
        """Rule ``key`` went (its installed copies ``removed`` already taken out): of each
        entry it claimed with others, the best remaining claimant's copy is installed."""
        for sw, prule in removed + self.shadowed.pop(key, []):
            pk = pkey(prule)
            keys = self.claims.get((sw, pk))
            if keys is None or key not in keys:
                continue
            keys.remove(key)
            if (sw, prule) in removed:
                best = min(keys, key=_rank)
                waiting = self.shadowed[best]
                copy = waiting.pop(next(i for i, (s, p) in enumerate(waiting) if s == sw and pkey(p) == pk))
                if not waiting:
                    del self.shadowed[best]
                comp.copies[best].append(copy)
                comp._set(("rule", sw, pk), copy[1])
                self.reowned.add(("rule", sw, pk))
            if len(keys) == 1:
                del self.claims[(sw, pk)]


__all__ = ["SharedEntries"]
