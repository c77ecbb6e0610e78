"""Resubmits with another in_port: the pipelines they need on one switch.

What: ``resubmit(V,T)`` (also ``resubmit:V``) with an in_port V other than the
packet's own looks table T up as if the packet had come in on V; the virtual rules
naming V have their copies on V's switch only, so the lookup is exact on a switch
that holds V's pipeline. For a rule that holds such a resubmit (in apply- or
write-actions, or in a clone there) the ports whose pipelines must then run on
one switch are those the rule may meet (``extension.rule_ports``) and every such V:
``cross_needs`` gives them, one set per rule, which the port extension settles
like a meter's (``extension._meter_ports``: a set split over several switches
moves to the host, where every port's host end is). A group is copied to every
switch and may be applied from any pipeline, so a bucket resubmit with another
in_port needs every port on the host (``CROSS_GROUPS``, as a bucket ct does).
On the host the compiler names V's host end (``Compiler._resubmit``,
``bucket_resubmit.py``). A V that is no virtual port's number has no copies
anywhere: it stays refused.

Bundles: an ``hrw`` bundle or a ``bundle_load`` weighs each live member, and
a physical switch sees its own ports' liveness only, so the translator keeps
one where every member is a port of the copy's switch (hashsel_translate.py).
When every member is the host's (a virtual port located there, not a port
extension's host end, whose liveness is the pair's; LOCAL; another reserved
port) the rule's ports are homed on the host with them (``host_bundles``);
members on an sNIC stay refused there (moving them would hide their liveness).

State: none. Cost: a scan of a rule's actions (of the groups' buckets).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tandem.rules.ir import (
    BUNDLE_RESERVED_MEMBERS, OFPP_IN_PORT, Action, ApplyActions, Bundle, Clone, Group, Resubmit, Rule, WriteActions,
)

from .ids import rule_text
from .topology import Topology

# need key of the groups (extension._meter_ports); a rule's key names the rule
CROSS_GROUPS = "resubmit with another in_port in a group bucket"


def _cross(actions: Sequence[Action], out: set[int]) -> set[int]:
    for a in actions:
        if type(a) is Resubmit and a.in_port != OFPP_IN_PORT:
            out.add(a.in_port)
        elif type(a) is Clone:
            _cross(a.actions, out)
    return out


def cross_ports(r: Rule | None) -> set[int]:
    """The in_ports (virtual numbers) ``r``'s resubmits name other than the packet's own."""
    out: set[int] = set()
    if r is not None:
        for ins in r.instructions:
            if type(ins) in (ApplyActions, WriteActions):
                _cross(ins.actions, out)
    return out


def cross_groups(groups: Iterable[Group]) -> bool:
    """Does a bucket of ``groups`` resubmit with another in_port?"""
    return any(_cross(b.actions, set()) for g in groups for b in g.buckets)


def _weighing(a: Action) -> bool:
    return type(a) is Bundle and (a.algorithm != "active_backup" or a.dst is not None)


def homes_ports(r: Rule | None) -> bool:
    """May ``r`` need ports homed here (a resubmit with another in_port, an ``hrw``
    bundle or a ``bundle_load``)? Syntactic: ``cross_needs`` decides with the topology."""
    def walk(actions: Sequence[Action]) -> bool:
        return any(_weighing(a) or (type(a) is Clone and walk(a.actions)) for a in actions)
    return r is not None and (bool(cross_ports(r)) or walk(r.apply_actions))


def host_bundles(topo: Topology, r: Rule) -> bool:
    """Does ``r`` hold an ``hrw`` bundle or a ``bundle_load`` (in its apply-actions or a
    clone there) whose members are all the host's: virtual ports located on the host,
    LOCAL, or other reserved ports (module doc, "Bundles")?"""
    def host(a: Bundle) -> bool:
        return all(m in BUNDLE_RESERVED_MEMBERS or (m in topo.port_map and topo.port_map[m].switch == topo.host)
                   for m in a.members)

    def walk(actions: Sequence[Action]) -> bool:
        return any((_weighing(a) and host(a))
                   or (type(a) is Clone and walk(a.actions)) for a in actions)
    return walk(r.apply_actions)


def cross_needs(topo: Topology, r: Rule, rule_ports: set[int]) -> dict[str, set[int]]:
    """{key: ports} that ``r`` (meeting ``rule_ports``) needs on one switch (module doc);
    empty when it resubmits with no other in_port that is a virtual port and holds no
    host-member bundle."""
    out = {}
    named = {v for v in cross_ports(r) if v in topo.port_map}
    if named:
        out[f"resubmit with another in_port in {rule_text(r)}"] = rule_ports | named
    if host_bundles(topo, r):
        out[f"bundle of the host's ports in {rule_text(r)}"] = rule_ports | {v for v, ref in topo.port_map.items()
                                                                              if ref.switch == topo.host}
    return out
