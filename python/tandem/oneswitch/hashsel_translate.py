"""OneSwitch's translation of Open vSwitch's hash-selection actions (docs/oneswitch.md
section 7, "Hash selection"). ``multipath`` only writes a field from a hash of the
packet, which is the same on every switch: it is kept as it is (the compiler's
default). ``bundle`` and ``bundle_load`` choose a member port by index and by the
member's liveness, which a physical switch sees for its own ports only:

* ``bundle(..., active_backup, ...)`` outputs to the first live member: that is a
  fast-failover group whose buckets, in member order, each watch a member and output
  to it. It becomes ``group:("bundle", members)``, an internal group built on each
  switch like a virtual fast-failover group (``Compiler._watch``: a member whose
  wire is on the switch is watched directly, any other through its ``("live", port)``
  group; a number that is no virtual port is never live, as in Open vSwitch).
* any other form (``hrw``, or ``bundle_load``, which loads the *virtual* number) is
  kept as the same action with each member's physical number, where every member's
  wire is a port of the copy's switch (the switch sees their liveness itself and the
  member indices, which the hash weighs, are kept); for ``bundle_load`` each
  physical number must also be the virtual one. Otherwise it is refused: the choice
  would need the liveness of ports on other switches inside one hash choice.

Reserved members (Open vSwitch 3.1 takes them; each is always live, LOCAL as every
bridge's own port is) mean the same on every switch where they are kept as they are:
IN_PORT (the copy's in_port is the packet's own port), NONE/ANY (outputs nothing) and
every reserved number that ``bundle_load`` loads. LOCAL is the host's: kept on the host,
an output to it elsewhere crosses PCIe (the active_backup group's bucket does that; an
``hrw`` copy off the host is refused, as a member of another switch). FLOOD and ALL
become several physical outputs (the switch's own ports and a flow-id copy over PCIe
per other switch): an active_backup group's bucket for one of them applies an internal
all-group, ``("bundle", members, index)``, with one bucket per output, as a virtual
bucket that floods is split (``Compiler._bucket_segments``: Open vSwitch runs a bucket
as an action set, one output). NORMAL, the host's MAC-learning switch, homes every
pipeline on the host (``extension.uses_normal`` sees the member), so the rule runs
there only and NORMAL is kept as it is: the active_backup bucket outputs to it, an
``hrw`` copy keeps it as a physical member (measured on one Open vSwitch 3.1 bridge: a
chosen NORMAL member floods or forwards as output:NORMAL does). An output to TABLE
chosen by a bundle, and FLOOD or ALL in an ``hrw`` choice, are refused:
output:TABLE's lookup keeps its changes for the actions after it, which a bucket
(run on a copy) does not, and the physical hash choice holds one physical output per
member.

Pure (reads the compiler's topology and ids); cost O(members).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from tandem.rules.ir import (
    BUNDLE_RESERVED_MEMBERS, OFPG_ANY, OFPP_ALL, OFPP_ANY, OFPP_FLOOD, OFPP_LOCAL, OFPP_NORMAL, OFPP_TABLE,
    RESERVED_PORT_NAMES, Action, Bucket, Bundle, Group, GroupAction, Output, Rule,
)

from .ids import TranslationError

if TYPE_CHECKING:
    from .compiler import Compiler

_BAD_ARGUMENT = (2, 5)  # OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT
_BAD_OUT_PORT = (2, 4)  # OFPET_BAD_ACTION, OFPBAC_BAD_OUT_PORT
BUNDLE_GROUP = "bundle"  # ids.groups keys: ("bundle", members), ("bundle", members, index of FLOOD/ALL)
# reserved members whose chosen output OneSwitch cannot translate (module comment)
UNCHOSEN_OUTPUTS = frozenset({OFPP_TABLE, OFPP_FLOOD, OFPP_ALL})
# those an active_backup bundle's fast-failover bucket holds (as an internal all-group)
FLOOD_MEMBERS = frozenset({OFPP_FLOOD, OFPP_ALL})


def refused_member(a: Bundle) -> str | None:
    """Why OneSwitch refuses ``a`` on any switch (None: it does not): a ``bundle`` whose
    member is TABLE, or an ``hrw`` one whose member is FLOOD or ALL."""
    taken = FLOOD_MEMBERS if a.algorithm == "active_backup" else frozenset()
    bad = next((m for m in a.members if m in UNCHOSEN_OUTPUTS - taken), None) if a.dst is None else None
    if bad is None:
        return None
    return (f"bundle({a.algorithm}) with member {RESERVED_PORT_NAMES[bad]}: an output to it is translated as more than "
            "one physical output or lookup, which a chosen member cannot be (docs/oneswitch.md section 7, "
            "\"Hash selection\"; bundle_load takes it, any bundle NORMAL, and an active_backup bundle FLOOD and ALL)")


def bundle_on(comp: "Compiler", sw: str, a: Bundle, deps: list, what: Rule | str) -> list[Action]:
    """The actions that run ``a`` exactly on switch ``sw`` (or TranslationError)."""
    why = refused_member(a)
    if why is not None:
        raise TranslationError(what, why, _BAD_OUT_PORT)
    if a.dst is None and a.algorithm == "active_backup":
        gid = comp.ids.group((BUNDLE_GROUP, a.members))
        deps.append(("group", sw, gid))
        return [GroupAction(gid)]
    physical = []
    for v in a.members:
        if v == OFPP_NORMAL and a.dst is None and sw != comp.topo.host:  # (homed: the rule runs on the host only)
            comp.out_entry(sw, v, 0, what, True)  # (raises as output:NORMAL off the host does)
        if v in BUNDLE_RESERVED_MEMBERS and (v != OFPP_LOCAL or a.dst is not None):
            physical.append(v)  # (always live, the same on every switch: module comment)
            continue
        ref = comp.ports.get(v)
        where = "no virtual port has that number" if ref is None else \
            "its wire is a port extension's" if v in comp.wires else \
            f"it is a port of {ref.switch}" if ref.switch != sw else None
        if where is None and a.dst is not None and ref.port != v:
            where = f"its number on {sw} is {ref.port}, and bundle_load must load the virtual number"
        if where is not None:
            name = "bundle_load" if a.dst is not None else f"bundle({a.algorithm})"
            raise TranslationError(what, f"{name} with member {RESERVED_PORT_NAMES.get(v, v)} in a rule that runs on {sw}: {where}; OneSwitch "
                                   "keeps this form only where every member is a port of the switch that runs it "
                                   "(bundle_load: under its own number), which then sees their liveness itself "
                                   "(docs/oneswitch.md section 7)", _BAD_ARGUMENT)
        physical.append(ref.port)
    return [Bundle(a.fields, a.basis, a.algorithm, tuple(physical), a.dst)]


def bundle_group(comp: "Compiler", sw: str, gid: int, key: tuple, deps: list) -> Group:
    """The internal group ``key`` of an active_backup ``bundle`` on ``sw``: for
    ``("bundle", members)`` the fast-failover group, one bucket per member, in order,
    watching it and outputting to it; for ``("bundle", members, i)`` the all-group of
    FLOOD's or ALL's outputs that member i's bucket applies (module comment)."""
    if len(key) == 3:
        segments = comp._bucket_segments(sw, [Output(key[1][key[2]])], deps, f"bundle group {gid}")
        return Group(gid, "all", tuple(Bucket(seg) for seg in segments))
    buckets = []
    for i, v in enumerate(key[1]):
        if v in BUNDLE_RESERVED_MEMBERS:  # always live: watch a PCIe port, as a live ("live", port) group does
            watch, watch_group = min(comp.topo.link_ports(sw), default=OFPP_ANY), OFPG_ANY
        else:
            watch, watch_group = comp._watch(sw, v, OFPG_ANY, deps, gid)
        if v in FLOOD_MEMBERS:
            acts = _flood_bucket(comp, sw, (*key, i), deps)
        else:
            acts = [] if v == OFPP_ANY else comp._actions(sw, [Output(v)], deps, f"bundle group {gid}", True)
        buckets.append(Bucket(tuple(acts), 0, watch, watch_group))
    return Group(gid, "fast_failover", tuple(buckets))


def _flood_bucket(comp: "Compiler", sw: str, key: tuple, deps: list) -> list[Action]:
    """The bucket actions of member ``key[1][key[2]]`` (FLOOD or ALL) on ``sw``: its one
    physical output as it is, several through the all-group ``key``, none if it has none."""
    segments = comp._bucket_segments(sw, [Output(key[1][key[2]])], deps, f"bundle member {key[2]}")
    if len(segments) <= 1:
        return list(segments[0]) if segments else []
    split = comp.ids.group(key)
    deps.append(("group", sw, split))
    return [GroupAction(split)]
