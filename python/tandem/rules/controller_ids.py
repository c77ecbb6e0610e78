"""The controller ids a physical switch's rules and groups send packet-ins to, other
than 0: Open vSwitch's ``dec_ttl(ids)`` sends its ``invalid_ttl`` packet-ins to the
connections with each listed id, and ``controller(id=N)`` to those with id N. A
switch sends a packet-in for an id no connection has to nobody, so the OVS backend
keeps a connection per id in use on each switch (``backends/ovs.py``). Pure.
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules.ir import ApplyActions, Clone, Controller, DecTtl, Group, Rule, WriteActions


def _in_actions(actions: Iterable, out: set[int]) -> None:
    for a in actions:
        t = type(a)
        if t is DecTtl and a.ids:
            out.update(a.ids)
        elif t is Controller:
            out.add(a.controller_id)
        elif t is Clone:
            _in_actions(a.actions, out)


def controller_ids(items: Iterable[Rule | Group]) -> frozenset[int]:
    """The ids other than 0 that these rules' and groups' packet-ins go to."""
    out: set[int] = set()
    for it in items:
        if type(it) is Group:
            for b in it.buckets:
                _in_actions(b.actions, out)
        else:
            for ins in it.instructions:
                if type(ins) in (ApplyActions, WriteActions):
                    _in_actions(ins.actions, out)
    out.discard(0)
    return frozenset(out)


__all__ = ["controller_ids"]
