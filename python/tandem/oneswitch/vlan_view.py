"""The VLAN headers in Open vSwitch's view, for sizing pending pushes and pops (trunc_translate.py).

Open vSwitch's flow holds two VLAN headers. A ``push_vlan`` onto a frame with two in view
drops the innermost from the view, and the commit pops the old headers and pushes the
view's: the frame keeps two tags, the push changes its size by nothing (measured: a frame
of one tag, ``push_vlan,set_field:4196->vlan_vid,push_vlan,output(port=P,max_len=14)``
gives datapath actions ``trunc(14),pop_vlan,push_vlan(vid=100,pcp=0),push_vlan(vid=0,pcp=0),P``:
18 bytes, not 22; dp-core's actions.rs keeps two tags the same way). A ``pop_vlan`` with none
in view does nothing. So a pending change is known only when the tags in view are: a rule
knows none are there by matching ``vlan_vid=0x0000`` (or ``vlan_vid=0/0x1000``) and at least
one by matching a tag; else (and at a clone's start) 0, 1 or 2 may be. Pure.
"""

from __future__ import annotations

from tandem.rules.ir import OFPVID_PRESENT, EncapEthernet, PopVlan, PushVlan, Rule

ANY = frozenset((0, 1, 2))


def tag_views(rule: Rule, in_clone: bool = False) -> frozenset[int]:
    """How many VLAN headers Open vSwitch may have in view where the rule's list starts."""
    m = rule.match.get("vlan_vid")
    if in_clone or m is None or not (m.mask is None or m.mask & OFPVID_PRESENT):
        return ANY
    return frozenset((1, 2)) if m.value & OFPVID_PRESENT else frozenset((0,))


def view_step(t: type, deltas: set[int] | None, views: frozenset[int]) -> tuple[set[int] | None, frozenset[int]]:
    """(pending changes, views) after a push_vlan, pop_vlan or encap(ethernet) (whose new
    header has no tag in view). A change that depends on the view makes it unknown (None)."""
    if t is EncapEthernet:
        return (None if deltas is None else {d + 14 for d in deltas}), frozenset((0,))
    if t is PushVlan:
        sizes, views = {4 if v < 2 else 0 for v in views}, frozenset(min(v + 1, 2) for v in views)
    else:
        assert t is PopVlan
        sizes, views = {-4 if v else 0 for v in views}, frozenset(max(v - 1, 0) for v in views)
    if deltas is None or len(sizes) != 1:
        return None, views
    (size,) = sizes
    return {d + size for d in deltas}, views
