"""Port extensions: a virtual port whose pipeline runs on the host switch.

What: every virtual port V on an sNIC switch S that has a PCIe link to the
host gets, in the physical layout, one extra port pair on that link (an
SR-IOV-style virtual function: S:``near`` <-> host:``far``). Unused, it
carries nothing. *Extending* V remaps it (``OneSwitchState.remap_ports``, the
consistent update NF migration uses) to host:``far`` and installs two rules
in S's table 0 that make the pair a wire between V's real port and the host::

    table=0,priority=65535,in_port=<V's port>,actions=output:<near>   (ingress)
    table=0,priority=65535,in_port=<near>,actions=output:<V's port>   (egress)

They share table 0 with virtual table 0 and S's delivery rules. Neither ties
with a rule it overlaps: the translator gives every virtual rule of table 0 at
priority 65535 one copy per in_port on an sNIC (``Compiler._expanded``), so
none of S's copies can match a frame from ``near`` (no virtual port), and once
V is remapped none matches one from V's port; delivery rules sit at a lower
priority. While V's old copies are still on S (the remap's later steps), those
at priority 65535 that match V's port become wires themselves at the
switch-over (``extend``).

From then on V's frames run the whole virtual pipeline on the host with the
host's in_port ``far`` standing for V: an output to V leaves on ``far`` and
the egress rule puts it on V's wire; ``output:IN_PORT``, an output to V itself
(dropped: it is the in_port) and FLOOD behave as on any host port, because for
the translator V *is* a host port. S's virtual tables are never consulted for
V's frames. Nothing crosses in the packet mark, so this works on any link
that carries frames (both backends' PCIe links do).

Why: OneSwitch runs a meter on one switch so a virtual meter is one token
bucket (``endpoint_meters.py``). A metered rule whose copies would run on
several switches (a wildcard ``in_port``) is made to run on the host alone by
extending the sNIC ports it can match.

Ports: ``EXT_PORT_BASE`` + i on both ends (the lowest numbers free on both
switches), in ascending virtual-port order; computed from the topology the
layout was built from, so ``layout_for`` and the endpoint agree. State: none
(pure functions). Cost: one remap per sNIC whose ports are extended.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.rules.ir import ApplyActions, Match, Output, Rule

from .ids import INFRA_COOKIE, WIRE_PRIORITY
from .plan import PhysicalOp, UpdatePlan
from .topology import PortRef, Topology

EXT_PORT_BASE = 0xF000


@dataclass(frozen=True)
class Extension:
    vport: int
    switch: str  # the sNIC switch where V's wire is
    port: int  # V's physical port there
    near: int  # the extension pair's end on ``switch``
    host: str
    far: int  # the pair's end on the host: V's location while extended

    @property
    def hosted(self) -> PortRef:
        return PortRef(self.host, self.far)

    @property
    def home(self) -> PortRef:
        return PortRef(self.switch, self.port)


def extensions(topo: Topology) -> dict[int, Extension]:
    """Virtual port -> its extension pair, for every port on an sNIC linked to the host."""
    host = topo.host
    used: dict[str, set[int]] = {sw: set() for sw in topo.switch_names}
    for l in topo.links:
        used[l.a.switch].add(l.a.port)
        used[l.b.switch].add(l.b.port)
    for ref in topo.port_map.values():
        used[ref.switch].add(ref.port)
    adjacent = {l.end_on(host)[1].switch for l in topo.links if host in (l.a.switch, l.b.switch)}
    out: dict[int, Extension] = {}
    n = EXT_PORT_BASE
    for v, ref in sorted(topo.port_map.items()):
        if ref.switch == host or ref.switch not in adjacent:
            continue
        while n in used[ref.switch] or n in used[host]:
            n += 1
        if n > 0xFEFF:
            break  # physical port numbers end at 0xfeff: the remaining ports stay unextended
        used[ref.switch].add(n)
        used[host].add(n)
        out[v] = Extension(v, ref.switch, ref.port, n, host, n)
    return out


def extension_links(topo: Topology) -> list[tuple[str, int, str, int]]:
    """(sNIC, near, host, far) for every extension pair, for the physical layout."""
    return [(e.switch, e.near, e.host, e.far) for e in extensions(topo).values()]


def wire_rules(e: Extension) -> tuple[Rule, Rule]:
    """(egress, ingress) rules on ``e.switch`` that make the pair V's wire to the host."""
    egress = Rule(Match.of(in_port=e.near), (ApplyActions((Output(e.port),)),), 0, WIRE_PRIORITY, INFRA_COOKIE)
    ingress = Rule(Match.of(in_port=e.port), (ApplyActions((Output(e.near),)),), 0, WIRE_PRIORITY, INFRA_COOKIE)
    return egress, ingress


def _tied_copies(state: object, e: Extension) -> list[Rule]:
    """The copies on ``e.switch`` that a frame from V's port could meet at the ingress
    wire's priority: table 0, priority 65535, in_port = V's port (wildcard copies
    there are one per in_port, see the module doc)."""
    out = []
    for (table, prio, match), r in state.comp.rules[e.switch].items():  # type: ignore[attr-defined]
        fm = match.get("in_port") if table == 0 and prio == WIRE_PRIORITY else None
        if fm is not None and fm.value == e.port:
            out.append(r)
    return out


def is_extended(topo: Topology, e: Extension) -> bool:
    return topo.port_map.get(e.vport) == e.hosted


def extend(state: object, exts: list[Extension]) -> list[UpdatePlan]:
    """Plans that move the pipelines of ``exts``' ports to the host, one per sNIC.

    Each is the port remap's plan with two steps added: the egress rules first
    (inert until the host outputs on ``far``), and the ingress rules as their
    own step at the remap's switch-over point (``old_ingress_until``), where
    both the old copies on the sNIC and the new ones on the host are complete:
    a frame from V runs the old pipeline before that step and the new one
    after it, never both, never neither. In that step the old copies that tie
    with the ingress rule (``_tied_copies``) are modified to do what it does,
    so whichever of them a frame meets sends it to the host; the remap's
    later steps delete them (it never modifies them: no copy on the sNIC
    matches V's port any more)."""
    by_switch: dict[str, list[Extension]] = {}
    for e in exts:
        by_switch.setdefault(e.switch, []).append(e)
    plans = []
    for sw in sorted(by_switch):
        es = by_switch[sw]
        tied = [(e, r) for e in es for r in _tied_copies(state, e)]
        plan = state.remap_ports({e.vport: e.hosted for e in es})  # type: ignore[attr-defined]
        at = plan.old_ingress_until if plan.old_ingress_until is not None else len(plan.steps)
        egress = [PhysicalOp(sw, "add", rule=wire_rules(e)[0]) for e in es]
        ingress = [PhysicalOp(sw, "add", rule=wire_rules(e)[1]) for e in es]
        ingress += [PhysicalOp(sw, "modify_strict", rule=Rule(r.match, wire_rules(e)[1].instructions, r.table, r.priority,
                                                               r.cookie, r.idle_timeout, r.hard_timeout))
                    for e, r in tied]
        steps = [egress, *plan.steps[:at], ingress, *plan.steps[at:]]
        out = UpdatePlan(steps)
        out.new_ingress_ready = out.old_ingress_until = at + 1  # the ingress step switches V over
        if plan.modify_step is not None:
            out.modify_step = plan.modify_step + 1 + (plan.modify_step >= at)
        plans.append(out)
    return plans
