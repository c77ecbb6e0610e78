"""A PACKET_OUT that applies a group with ``ct`` in a bucket (docs/endpoint.md, PACKET_OUT).

The endpoint carries most PACKET_OUTs out as physical PACKET_OUTs of their outputs
(``OneSwitchEndpoint.packet_out``). A bucket's ``ct`` does not fit that: its tracker
operation must run on the tracker OneSwitch's ct rules use, its ``ct(table=T)``
recirculates a copy into table T, and Open vSwitch 3.1's datapath keeps what the
bucket's ct did for the rest of the PACKET_OUT (measured on one bridge: a bucket
``ct(commit,table=1,nat(src=10.9.9.9))`` then ``output:2`` after the group sends the
translated frame to 2; a second group's ct sees the first one's commit).

So such a PACKET_OUT goes to the host switch whole, as one physical PACKET_OUT:

* **Every pipeline is on the host.** While a virtual group holds ``ct`` in a bucket every
  virtual port is extended to the host (``bucket_ct.py``, docs/oneswitch.md §6), and
  every virtual group has a copy on the host (``pinned_groups``, the same group id,
  whether or not a rule applies it). The host's copies of the virtual rules, its
  tracker and its groups are the virtual switch's, with the host ends of the ports.
* **in_port** is the host end of the virtual ``in_port`` (LOCAL and CONTROLLER are the
  host's own), as a flow's copies see it, so the recirculated copy meets table T's
  copies, IN_PORT and the output to the in_port behave as on one bridge, and its
  packet-ins map back to the virtual in_port. The physical PACKET_OUT comes from LOCAL
  and sets ``in_port`` to that host end first: from a patch port (an extended port's host
  end) Open vSwitch 3.1 loses a recirculated copy, from a datapath port it does not,
  whatever in_port the actions then set (measured: in_port=50, a patch port, with
  ``ct(table=1)`` sends nothing; in_port=1 with ``set_field:50->in_port,ct(table=1)``
  runs table 1 with in_port 50; from CONTROLLER with that set_field, nothing again).
* **Outputs** to virtual ports name their host ends; FLOOD and ALL become the outputs to
  every virtual port but the in_port, and LOCAL (the host's physical FLOOD would also
  reach its PCIe ports); an output to a port the virtual switch does not have is left out
  (Open vSwitch sends nothing there). Groups, clones, field changes, ``note`` and
  ``exit`` go as they are.

Refused in such a PACKET_OUT (``problem``): what the endpoint otherwise works out
itself (on the emulator backend ``check_pkt_larger``, which the OVS backend's host runs;
CONTROLLER, unmetered ``controller(…)`` and ``ct_clear`` the host's switch runs on both
backends, its packet-ins coming back as the virtual ones, ``packet_out_whole.py``; ``output:TABLE``, ``NORMAL``, ``bundle``,
``check_pkt_larger``, ``output(port=P,max_len=N)``, ``dec_nsh_ttl``, ``encap``,
``learn``, ``ct``, ``ct_clear``, ``output_reg``, lookups, ``multipath``…), a write to
``pkt_mark`` when a reached bucket runs ``ct(table=0)`` (the translated bucket resets
the mark before that lookup, ``bucket_ct.bucket_ct_actions``).

The emulator backend's host runs the PACKET_OUT on its own pipeline (dp-core
``Pipeline::packet_out``, ``pipeline/packet_out.rs``) from the host end itself: dp-core
keeps a recirculated copy from any in_port (``Backend.packet_out_from_any_port``), and a
bucket's nat rewrite for the rest of the list as Open vSwitch's datapath does
(``pipeline/bucket_nat.rs``).
Pure but for reading the endpoint's state.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tandem.rules import ir
from tandem.rules.ir import Action, Clone, GroupAction, Output

from .bucket_ct import ct_groups, ct_table0_groups, packet_out_ct_group
from .packet_out_whole import whole_route
from .rule_analysis import writes_mark

# what such a PACKET_OUT may hold besides outputs, groups and clones: changes Open vSwitch
# runs the same in the host's physical PACKET_OUT, sending no packet-in of their own
_TAKEN = (ir.SetField, ir.MoveField, ir.PushVlan, ir.PopVlan, ir.PushMpls, ir.PopMpls, ir.SetMplsTtl, ir.SetNwTtl,
          ir.SetQueue, ir.PopQueue, ir.Note, ir.Exit)
_RESERVED_OUT = frozenset({ir.OFPP_IN_PORT, ir.OFPP_FLOOD, ir.OFPP_ALL, ir.OFPP_LOCAL})
_MAX_OFPORT = 0xFEFF


def reached_ct_group(groups: dict, actions: Iterable[Action]) -> int | None:
    """The id of a group with ``ct`` in a bucket that ``actions`` apply (also from inside
    a clone, or through a bucket's group), or None."""
    for a in actions:
        found = packet_out_ct_group(groups, a.actions) if type(a) is Clone else packet_out_ct_group(groups, [a])
        if type(a) is Clone and found is None:
            found = reached_ct_group(groups, a.actions)
        if found is not None:
            return found
    return None


def _reached(groups: dict, actions: Iterable[Action], depth: int = 0) -> set[int]:
    out: set[int] = set()
    for a in actions:
        if type(a) is Clone:
            out |= _reached(groups, a.actions, depth)
        elif type(a) is GroupAction and depth < 8 and a.group_id in groups:
            out.add(a.group_id)
            for b in groups[a.group_id].buckets:
                out |= _reached(groups, b.actions, depth + 1)
    return out


def problem(ep, actions: Sequence[Action]) -> str | None:
    """Why OneSwitch does not carry out this PACKET_OUT, which applies a group with ``ct``
    in a bucket (module doc); None when it does."""
    gid = reached_ct_group(ep.groups, actions)
    if gid is None:
        return None
    where = f"in a PACKET_OUT that applies group {gid}, which has ct in a bucket"
    topo = ep.state.topo
    away = sorted(v for v, ref in topo.port_map.items() if ref.switch != topo.host)
    if away:  # (the endpoint homes them before the GROUP_MOD that puts ct into a bucket: bucket_homing.py)
        return f"{where}: virtual ports {away} are not on the host yet"
    reached = [ep.groups[g] for g in _reached(ep.groups, actions)]
    t0 = ct_table0_groups(reached)
    host_pins = "emu" if getattr(ep.backend, "packet_out_from_any_port", False) else "ovs"  # (the host's packet-ins: measured)
    return _problem(actions, where, bool(t0), host_pins)


def _host_packet_in(a: Action, emu: bool = False) -> bool:
    """The host's switch sends these as one bridge (its packet-ins relayed as the virtual
    ones: packet_out_whole.py); Open vSwitch also after ``check_pkt_larger``, dp-core not
    (``packet_out_oracle --ct-groups --packet-ins --only dp``: it differs after one, measured)."""
    return (type(a) is Output and a.port == ir.OFPP_CONTROLLER or type(a) is ir.Controller and a.meter_id is None
            or type(a) is ir.CtClear or type(a) is ir.CheckPktLarger and not emu)


def _problem(actions: Sequence[Action], where: str, table0: bool, host_pins: str | None = None) -> str | None:
    for a in actions:
        if host_pins and _host_packet_in(a, host_pins == "emu"):
            continue
        if type(a) is Clone:
            why = _problem(a.actions, where, table0, host_pins)
            if why:
                return why
            continue
        if table0 and writes_mark(a):
            return (f"a write to pkt_mark {where} whose copy recirculates into table 0: the host's bucket sets the mark "
                    "to 0 before that lookup (a frame crossing PCIe is told by its mark there)")
        if type(a) is Output:
            if a.port in _RESERVED_OUT or a.port <= _MAX_OFPORT:
                continue
            name = ir.RESERVED_PORT_NAMES.get(a.port, str(a.port))
            return f"output:{name} {where}: OneSwitch sends it to the host as one physical PACKET_OUT, outputs to ports only"
        if type(a) is GroupAction or type(a) in _TAKEN:
            continue
        return (f"{type(a).__name__} {where}: OneSwitch sends such a PACKET_OUT to the host as one physical PACKET_OUT "
                "of outputs to ports, groups, clones and field changes only")
    return None


def host_packet_out(ep, in_vport: int, actions: Sequence[Action]) -> tuple[str, int, list[Action]] | None:
    """(switch, physical in_port, actions) of the one physical PACKET_OUT that carries out
    ``actions`` on the host (module doc), or None when they apply no group with ``ct``
    in a bucket (the endpoint walks them)."""
    if reached_ct_group(ep.groups, actions) is None:
        return None
    return whole_route(ep, in_vport, actions)  # (the route shared with homing on demand: packet_out_whole.py)


def pinned_groups(groups: Iterable[ir.Group]) -> list[int]:
    """The virtual groups that get a copy on the host whether or not a rule applies them:
    all of them while one holds ``ct`` in a bucket (a PACKET_OUT may apply any), else none."""
    groups = list(groups)
    return [g.group_id for g in groups] if ct_groups(groups) else []


def pin_host_groups(comp) -> None:
    """Take one reference on the host's copy of each of ``pinned_groups`` (called as a
    compiler is built, as ``state._pin_infrastructure`` is)."""
    for gid in pinned_groups(comp.vgroups.values()):
        comp._acquire(("group", comp.topo.host, gid))
