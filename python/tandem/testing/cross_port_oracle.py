"""The of13_oracle items of resubmits with another in_port (oneswitch/cross_port.py).

``resubmit_cross``: rules whose resubmits name another in_port (``resubmit(V,T)``,
``resubmit:V``); ``group_resubmit_cross``: rule sets whose groups' buckets do
(rules/generate_cross_resubmit.py; a rule uses the item when it applies a group).
Their translation needs pipelines homed on the host, so ``cross_translation`` runs
the endpoint's order (ct_oracle.translate_as_endpoint: the extensions each rule or
the groups need, then the rule) against one plain OVS bridge, then deletes the
rules (and groups) that need the homing, moves the ports back as the endpoint does
(``extension.release``) and compares the rules left again. The rule sets are drawn
on the topology with every port homed (so the translator keeps them). State: none.
Cost: two oracle comparisons per rule set.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

from tandem.oneswitch.cross_port import cross_groups, cross_ports, homes_ports, host_bundles
from tandem.rules.ir import ApplyActions, FlowMod, Group, GroupAction, Resubmit, Rule, WriteActions

CROSS_ITEMS: tuple[str, ...] = ("resubmit_cross", "group_resubmit_cross", "bundle_host")


def cross_items(rule: Rule) -> set[str]:
    """The items of this module ``rule`` uses: a resubmit naming a port other than the
    one its match fixes; a group applied (the group's buckets resubmit)."""
    out = set()
    inm = rule.match.get("in_port")
    if cross_ports(rule) - ({inm.value} if inm is not None else set()):
        out.add("resubmit_cross")
    if any(type(a) is GroupAction for ins in rule.instructions if type(ins) in (ApplyActions, WriteActions)
           for a in ins.actions):
        out.add("group_resubmit_cross")
    if homes_ports(rule) and not cross_ports(rule):  # (an hrw bundle or a bundle_load)
        out.add("bundle_host")
    return out


def keep_for(item: str, topo, rule: Rule) -> bool:
    """Whether a drawn rule that uses ``item`` fits its rule set: a ``bundle_host``
    rule's members are all the host's in ``topo`` (the others stay refused)."""
    return item != "bundle_host" or "bundle_host" not in cross_items(rule) or host_bundles(topo, rule)


def cross_groups_for(item: str, rng: random.Random, ports: Sequence[int], tables: int) -> list[Group] | None:
    """The item's groups (None: the caller's usual ones)."""
    if item != "group_resubmit_cross":
        return None
    from tandem.rules.generate_cross_resubmit import cross_resubmit_groups

    return cross_resubmit_groups(rng, rng.randint(1, 3), ports, tables)


def loop_free(rule: Rule, groups: Sequence[Group]) -> bool:
    """False for a rule that applies a group from a table one of the groups' bucket
    resubmits looks up (or an earlier one): the packet would loop into Open vSwitch's
    resubmit limits, which the translation's patch-port hops meet at another depth."""
    lowest = min((a.table for g in groups for b in g.buckets for a in b.actions
                  if type(a) is Resubmit and a.table != 255), default=None)
    calls = any(type(a) is GroupAction for ins in rule.instructions if type(ins) in (ApplyActions, WriteActions)
                for a in ins.actions)
    return not calls or lowest is None or rule.table < lowest


def homed_topology(topo):
    """``topo`` as it stands with every sNIC port extended to the host."""
    from tandem.oneswitch.extension import extend
    from tandem.oneswitch.state import OneSwitchState

    state = OneSwitchState(topo)
    extend(state, [v for v, ref in topo.port_map.items() if ref.switch != topo.host])
    return state.topo


def cross_translation(sb, topo, item: str, rng: random.Random, rules: list[Rule], groups: list[Group],
                      per_port: int, down: Sequence[int] = ()) -> tuple[object, object, int, list[str]]:
    """(report before, report after the deletes and releases, extended ports left after
    them, translation errors) of the rule set, as module doc."""
    from tandem.oneswitch.extension import release
    from tandem.oneswitch.ids import TranslationError
    from tandem.oneswitch.state import OneSwitchState
    from tandem.testing.ct_oracle import translate_as_endpoint
    from tandem.testing.oneswitch_oracle import Oracle, random_packets

    try:
        state, steps = translate_as_endpoint(topo, rules, groups, down)
    except TranslationError as e:
        return None, None, 0, [f"translation refused: {e}"]
    with Oracle(sb, topo, packet_in=True) as o:
        o.set_down(down)
        o.load_virtual(rules, groups)
        o.load_translation(OneSwitchState(topo).translation())
        for step in steps:
            o.apply_step(step)
        for v, e in state.extensions.items():  # type: ignore[attr-defined]
            o.remap(v, e.hosted)
        o.mark_used = state.translation().mark_used  # type: ignore[attr-defined]  (what the packet-ins list)
        before = o.compare(random_packets(rng, rules, topo, per_port=per_port, of13=True))
        needs: Callable[[Rule], bool] = (lambda r: "group_resubmit_cross" in cross_items(r) or homes_ports(r))
        gone = [r for r in rules if needs(r)]
        for r in gone:
            mod = FlowMod("delete_strict", r)
            for step in state.apply(mod).steps:  # type: ignore[attr-defined]
                o.apply_step(step)
            o.apply_virtual(mod, o.ref)
        if groups and cross_groups(groups):
            for step in state.set_groups([]).steps:  # type: ignore[attr-defined]
                o.apply_step(step)
            sb.ofctl("del-groups", o.ref)
        for plan in release(state):
            for step in plan.steps:
                o.apply_step(step)
        left = [r for r in rules if r not in gone]
        o.mark_used = state.translation().mark_used  # type: ignore[attr-defined]
        after = o.compare(random_packets(rng, left or rules, topo, per_port=per_port, of13=True))
        return before, after, len(state.extensions), []  # type: ignore[attr-defined]
