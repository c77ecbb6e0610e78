"""A PACKET_OUT run on the host switch, homing on demand (docs/endpoint.md, PACKET_OUT;
docs/oneswitch.md section 6).

Some PACKET_OUTs need every virtual port's pipeline on the host: one whose
``output:NORMAL`` must reach every port through the host's MAC table
(``endpoint_normal.py``); one the host's switch runs whole (``whole_on_host``): a
packet-in after ``ct``, ``check_pkt_larger`` or ``pop_queue`` (whose packet-in the
endpoint's own is not measured for), and on the OVS backend after ``delete_field`` or a
write to ``tun_metadata`` (the host maps the options as the virtual switch, its TLV map
relayed), or on the OVS backend ``check_pkt_larger`` into a header field, among actions
the host runs as one bridge (on the emulator backend the host's dp-core,
``Pipeline::packet_out``, without ``ct``'s ``nat``: ``_emu_unmeasured``); one that
applies a group with ``ct`` in a bucket (``packet_out_ct_group.py``, sent whole; a
GROUP_MOD homes its ports, and it may hold packet-ins too); and one whose list goes on
after an ``output:TABLE`` (on the emulator also one writing registers, metadata or tunnel
fields before it: ``packet_out_table.sends_whole``), whose TABLE the host's own resubmit
runs. ``ports_to_home`` is the cheap
per-PACKET_OUT predicate, ``homing_plans`` their plans: when such a PACKET_OUT arrives
while some port's pipeline runs on its sNIC, the endpoint first extends every such port
to the host (the plans a ``ct`` rule triggers, ``extension.extend``), waits for the
switches to confirm them, then carries the PACKET_OUT out. The ports stay while
PACKET_OUTs and frames come and go back before the next FLOW_MOD, GROUP_MOD, METER_MOD
or Nicira message (``endpoint_session._end_homing``: those nothing else keeps on the
host), so those are checked and translated as without the homing. Nothing observable
changes: the counters the moved copies held are carried both ways
(``carried_counters.py``), the host's MAC table learns each port at the number it has
whenever it is extended (``extension.py`` keeps the pairs), and the host's packet-ins
are taken in before the ports move back (the counters' reads follow them on the host's
connection). A port that cannot move (no pair left, or a backend without port pairs)
refuses the PACKET_OUT with ``BAD_ACTION/BAD_OUT_PORT`` before anything changes.

``whole_route`` is the one physical PACKET_OUT that carries a PACKET_OUT out on the
host whole (every port homed): its in_port the host end of the virtual ``in_port``
(the host's own LOCAL and CONTROLLER as they are), sent from LOCAL with that in_port
set first on Open vSwitch (a recirculated copy from a patch port is lost there,
measured), from the host end itself on dp-core; outputs to virtual ports name their
host ends, FLOOD and ALL become the outputs to every virtual port but the in_port, and
LOCAL; an output to a port the virtual switch does not have is left out.
A packet-in the host sends comes back through the endpoint's relay of physical
packet-ins: ``controller(…)`` tagged as a flow's (``packet_in_ext.physical_controller``),
an output to CONTROLLER as ``controller`` with the PACKET_OUT reason; ``ct`` on a frame
that is not IP is refused as Open vSwitch refuses it (``check_frame``).
State: none (the extensions are the OneSwitch state's). Cost per PACKET_OUT: a scan of
the actions for ct, check_pkt_larger or pop_queue (about 1 us), and for NORMAL (its
groups' buckets too); the port map only when one has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules.ir import Action, Clone, Output

from .bucket_ct import ct_groups
from .endpoint_normal import uses_normal
from .endpoint_packet_in import MODELED, unmodeled_before_packet_in
from .extension import ExtensionError, extend
from .packet_in_ext import physical_controller
from .packet_out_table import sends_whole

# what a PACKET_OUT sent whole (``whole_on_host``) may hold: the host's Open vSwitch runs these
# as one bridge does, on the frame and with the tracker of the virtual switch
_WHOLE = frozenset({ir.SetField, ir.MoveField, ir.PushVlan, ir.PopVlan, ir.SetMplsTtl, ir.SetNwTtl, ir.SetQueue, ir.PopQueue, ir.Note, ir.Exit, ir.Ct, ir.CtClear, ir.CheckPktLarger,
                    ir.Controller, Output, Clone, ir.DecNshTtl}) | {ir.DeleteField}  # (porowf: the host maps tun_metadata as the virtual switch)
_PORTS_OUT = frozenset({ir.OFPP_IN_PORT, ir.OFPP_FLOOD, ir.OFPP_ALL, ir.OFPP_LOCAL, ir.OFPP_CONTROLLER})
PACKET_OUT_REASON = 5  # (Open vSwitch's reason of a PACKET_OUT's output to CONTROLLER, ``action`` in OpenFlow 1.3)


@dataclass(frozen=True)
class SetInPort(ir.SetField):
    """``set_field:P->in_port`` at the head of the host's physical PACKET_OUT (module doc);
    the IR's SetField refuses in_port, which no virtual action writes."""

    def __post_init__(self) -> None:
        pass


def away_ports(ep) -> list[int]:
    """The virtual ports whose pipelines run on their sNIC now (not extended)."""
    topo = ep.state.topo
    return sorted(v for v, ref in topo.port_map.items() if ref.switch != topo.host)


def ports_to_home(ep, actions: Sequence[Action]) -> list[int]:
    """The virtual ports a PACKET_OUT with ``actions`` must extend to the host before it
    runs (module doc): none when it needs none or every port is homed."""
    return away_ports(ep) if whole_on_host(ep, actions) or uses_normal(ep, actions) or sends_whole(ep, actions) else []  # (TABLE: packet_out_table.py)


def whole_on_host(ep, actions: Sequence[Action]) -> bool:
    """Does the endpoint send this PACKET_OUT to the host whole (module doc)? When it
    holds none of ``_emu_unmeasured`` on the emulator backend, and when it sends a packet-in after a change the endpoint's own packet-in is not
    measured for (``ct``, ``check_pkt_larger``: ``endpoint_packet_in.unmodeled_before_packet_in``),
    or holds ``check_pkt_larger`` into a field that is not a register, and holds nothing
    but ``_WHOLE``'s actions (outputs to ports, IN_PORT, FLOOD, ALL, LOCAL, CONTROLLER;
    ``ct`` without ``table``; unmetered ``controller(…)``; writes to ``tun_metadata`` and
    ``delete_field``; no read of ``in_port``; groups
    while one holds ``ct`` in a bucket, when the host has a copy of each)."""
    if not _triggers(actions):
        return False
    emu = getattr(ep.backend, "packet_out_from_any_port", False)  # (the host's dp-core: Pipeline::packet_out)
    need = changed = pinned = False
    for a in _flat(actions):
        t = type(a)
        if emu and _emu_unmeasured(a):
            return False
        if t is ir.GroupAction:  # (the host has a copy of every group while one holds ct: packet_out_ct_group.py)
            if not ct_groups(ep.groups.values()):
                return False
            continue
        if t not in _WHOLE:
            return False
        if t is Output:
            if a.port > _MAX_OFPORT and a.port not in _PORTS_OUT:
                return False
            need = need or (a.port == ir.OFPP_CONTROLLER and changed)
            pinned = pinned or a.port == ir.OFPP_CONTROLLER
        elif t is ir.Controller:
            if a.meter_id is not None:
                return False
            need, pinned = need or changed, True
        elif t is ir.Ct and (a.table is not None or _reads_in_port(a.zone_src)):
            return False
        elif t is ir.MoveField and _reads_in_port(a.src):
            return False
        elif t is ir.CheckPktLarger and not a.dst.field.startswith(("reg", "xreg", "xxreg")):
            need = True
        elif t is ir.DecNshTtl:  # (after a change or a packet-in the endpoint's decision is not measured)
            need = need or changed or pinned
        changed = changed or (t is not Clone and unmodeled_before_packet_in(a))
    return need


_MAX_OFPORT = 0xFEFF
_TAGS = (0x8100, 0x88A8)


def check_frame(ep, actions: Sequence[Action], frame: bytes) -> None:
    """Refuse, as Open vSwitch 3.1 does (``BAD_ACTION/MATCH_INCONSISTENT``, measured), a
    PACKET_OUT sent whole whose ``ct`` meets a frame that is not IP (VLAN tags skipped),
    or whose ``nat`` range is of the other IP version: the host's Open vSwitch would
    refuse the physical PACKET_OUT, and the controller must hear it."""
    if not whole_on_host(ep, actions):
        return
    cts = [a for a in _flat(actions) if type(a) is ir.Ct]
    if not cts:
        return
    at = 12
    while len(frame) >= at + 2 and int.from_bytes(frame[at:at + 2], "big") in _TAGS:
        at += 4
    eth_type = int.from_bytes(frame[at:at + 2], "big") if len(frame) >= at + 2 else 0
    if eth_type not in (0x0800, 0x86DD):
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_MATCH_INCONSISTENT,
                        f"ct in a PACKET_OUT of a frame of ethertype {eth_type:#06x}: ct needs an IP packet")
    for ct in cts:
        if ct.nat is not None and ct.nat.addr_min is not None and ct.nat.v6 != (eth_type == 0x86DD):
            raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_MATCH_INCONSISTENT,
                            "ct's nat range is of another IP version than the PACKET_OUT's frame")


# the actions of ``_WHOLE`` before which the endpoint's own packet-in is not measured, and check_pkt_larger:
# without one of them a PACKET_OUT is walked (``_triggers``: the cheap first test, per PACKET_OUT)
_TRIGGERS = frozenset(t for t in _WHOLE if not issubclass(t, MODELED)) | {ir.CheckPktLarger}
_TUN_WRITES = (ir.SetField, ir.MoveField)


def _triggers(actions: Sequence[Action]) -> bool:
    for a in actions:
        t = type(a)
        if t in _TRIGGERS or t in _TUN_WRITES and unmodeled_before_packet_in(a):  # (a write to tun_metadata)
            return True
        if t is Clone and _triggers(a.actions):
            return True
    return False


def _emu_unmeasured(a: Action) -> bool:
    """What the emulator backend does not send whole (dp-core's ``Pipeline::packet_out``
    differs from Open vSwitch or is not measured: ``testing/packet_out_whole_dp.py``): a
    group, ``ct`` with ``nat`` (dp-core's packet-in shows the translated addresses, Open
    vSwitch's the packet's own, measured), ``check_pkt_larger`` into a field that is not a
    register (Open vSwitch leaves the frame's bit as it was, dp-core writes it), ``delete_field``
    and writes to ``tun_metadata`` (dp-core's packet-ins list no options)."""
    t = type(a)
    return t is ir.GroupAction or t is ir.Ct and a.nat is not None or \
        t is ir.CheckPktLarger and not a.dst.field.startswith(("reg", "xreg", "xxreg")) or \
        t is ir.DeleteField or t in _TUN_WRITES and unmodeled_before_packet_in(a)


def _reads_in_port(sub) -> bool:
    return sub is not None and sub.field == "in_port"


def _flat(actions: Sequence[Action]):
    for a in actions:
        yield a
        if type(a) is Clone:
            yield from _flat(a.actions)


def homing_plans(ep, away: list[int]) -> list:
    """The extension plans that move ``away`` to the host; ``BAD_ACTION/BAD_OUT_PORT``
    when a port cannot move (nothing changed then)."""
    why = "this PACKET_OUT runs on the host switch, where every virtual port's pipeline must run"
    if not getattr(ep.backend, "extension_pairs", True):
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT,
                        f"{why}: virtual ports {away} would have to move to the host through port pairs, which the "
                        f"{ep.backend.name} backend cannot build")
    try:
        return extend(ep.state, away)
    except ExtensionError as e:
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT,
                        f"{why}: virtual ports {away} cannot move there: {e}") from None


def whole_route(ep, in_vport: int, actions: Sequence[Action]) -> tuple[str, int, list[Action]]:
    """(switch, physical in_port, actions) of the one physical PACKET_OUT that carries out
    ``actions`` on the host, every port homed (module doc)."""
    topo = ep.state.topo
    host = topo.host
    ports = {v: ref.port for v, ref in topo.port_map.items() if ref.switch == host}
    acts = _on_host(actions, in_vport, ports)
    if in_vport not in ports:  # (LOCAL and CONTROLLER are the host's own)
        return host, in_vport, acts
    if getattr(ep.backend, "packet_out_from_any_port", False):  # (dp-core: the emulator backend)
        return host, ports[in_vport], acts
    return host, ir.OFPP_LOCAL, [SetInPort("in_port", ports[in_vport], 0xFFFF_FFFF), *acts]


def _on_host(actions: Sequence[Action], in_vport: int, ports: dict[int, int]) -> list[Action]:
    out: list[Action] = []
    for a in actions:
        if type(a) is ir.Controller:  # (its packet-in comes back tagged: packet_in_ext.py)
            out.append(physical_controller(a))
        elif type(a) is Output and a.port == ir.OFPP_CONTROLLER:
            out.append(physical_controller(ir.Controller(reason=PACKET_OUT_REASON)))
        elif type(a) is Clone:
            out.append(Clone(tuple(_on_host(a.actions, in_vport, ports))))
        elif type(a) is not Output:
            out.append(a)
        elif a.port in (ir.OFPP_FLOOD, ir.OFPP_ALL):  # (every port but the in_port, and LOCAL)
            out += [Output(p) for v, p in sorted(ports.items()) if v != in_vport]
            if in_vport != ir.OFPP_LOCAL:
                out.append(Output(ir.OFPP_LOCAL))
        elif a.port in (ir.OFPP_IN_PORT, ir.OFPP_LOCAL, ir.OFPP_TABLE):  # (TABLE: the host's table 0 from the in_port)
            out.append(a)
        elif a.port in ports:
            out.append(Output(ports[a.port]))
    return out
