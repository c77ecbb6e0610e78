"""What a PACKET_OUT may hold after an ``output:TABLE`` (docs/endpoint.md, "Refused by OneSwitch only").

Open vSwitch 3.1 runs a PACKET_OUT's ``output:TABLE`` as a resubmit into table 0: what the
tables do to the packet and its pipeline state stays for the rest of the PACKET_OUT's list
(measured on one bridge, ``tests/endpoint/test_packet_out_table_vs_ovs.py``: a table-0 rule
``push_vlan:0x8100,output:3`` then the PACKET_OUT's ``output:2`` sends port 2 the tagged
frame; a rule's ``load`` into ``reg0`` is what a later ``output_reg`` reads; a second
``output:TABLE`` sees the first one's changes, ``pkt_mark`` and metadata included), and the
action set the tables write runs at the PACKET_OUT's end, after its later changes (a rule's
``write_actions(output:3)`` with ``output:TABLE,push_vlan:0x8100`` sends port 3 the tagged frame).

The endpoint sends the TABLE as its own physical PACKET_OUT on the ingress switch of the
``in_port`` and every later output as another one, of the PACKET_OUT's own changes only: the
tables' changes are not there, and the TABLE's physical PACKET_OUT runs its action set without
the later changes. So every action after an ``output:TABLE`` but ``note`` is refused: each sends
the packet, reads its state or changes what the action set sends.

Such a PACKET_OUT of header changes, register, metadata and tunnel-field writes, pushes, pops,
TTL actions, ``set_queue``, outputs to ports, IN_PORT, FLOOD, ALL, LOCAL and TABLE, clones,
notes and ``exit`` (``table_whole``) goes to the host whole instead (``packet_out_whole.py``:
every port homed first, one physical PACKET_OUT whose in_port is the ``in_port``'s host end):
the host's table 0 holds the copies of every virtual rule for that port, so its own resubmit
runs the tables on the packet and its state as they are, the list goes on with what they did
and the written set runs at the end, as on one bridge (``tandem bench packet_out_oracle --
--table --continued``); on the emulator dp-core's ``Pipeline::packet_out`` does the same
(``pipeline/packet_out_table.rs``).

On a backend whose TABLE carries the frame only (the emulator's injects the frame the earlier
changes make: ``Backend.table_carries_state``), a write to pipeline state before the TABLE
(registers, metadata, tunnel fields, queue, connection tracking, …) is refused too: the lookup
would not see it, unless the PACKET_OUT goes whole to the host (``table_whole``).
State: none. Cost per PACKET_OUT with TABLE: one or two scans of its actions.
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules import ir
from tandem.rules.ir import Action, Output

# what may follow the TABLE: it neither sends, reads nor changes the packet
_INERT = (ir.Note,)


# changes before the TABLE that the injected frame carries, and actions the endpoint sends on their own
_FRAME_ONLY = (ir.PushVlan, ir.PopVlan, ir.PushMpls, ir.PopMpls, ir.SetMplsTtl, ir.SetNwTtl, ir.DecTtl, ir.DecMplsTtl,
               ir.DecNshTtl, ir.Note, ir.Exit, Output, ir.Controller, ir.GroupAction, ir.Clone, ir.OutputTrunc,
               ir.OutputReg)
_STATE_FIELDS = ("reg", "xreg", "xxreg", "metadata", "tun", "pkt_mark")  # (prefixes: tun_*, tunnel_id)


def state_before_table_problem(actions: Iterable[Action]) -> str | None:
    """Why a PACKET_OUT is refused on a backend whose TABLE carries the frame only: an action
    before its ``output:TABLE`` that writes pipeline state (module doc); None if there is none."""
    actions = list(actions)
    if not any(type(a) is Output and a.port == ir.OFPP_TABLE for a in actions):
        return None
    for a in actions:
        if type(a) is Output and a.port == ir.OFPP_TABLE:
            return None
        field = a.field if type(a) is ir.SetField else a.dst.field if type(a) is ir.MoveField else None
        if field is not None and not str(field).startswith(_STATE_FIELDS):
            continue
        if field is None and (isinstance(a, _FRAME_ONLY) or type(a) is ir.Bundle and a.dst is None):
            continue
        what = f"a write to {field}" if field is not None else type(a).__name__
        return (f"{what} before output:TABLE in a PACKET_OUT: this backend's TABLE carries the changed frame "
                "into the lookup, not the pipeline state")
    return None


def after_table_problem(actions: Iterable[Action]) -> str | None:
    """Why a PACKET_OUT with these actions is refused: an action but ``note`` after an
    ``output:TABLE`` (module doc); None if there is none."""
    table = False
    for a in actions:
        if table and not isinstance(a, _INERT):
            what = (f"output:{ir.RESERVED_PORT_NAMES.get(a.port, a.port)}" if type(a) is Output
                    else type(a).__name__)
            return (f"{what} after output:TABLE in a PACKET_OUT: Open vSwitch runs TABLE as a resubmit whose changes "
                    "stay for the rest of the list and whose action set runs at the list's end; the endpoint sends "
                    "the TABLE as its own physical PACKET_OUT")
        table = table or (type(a) is Output and a.port == ir.OFPP_TABLE)
    return None


# what a PACKET_OUT sent whole for its TABLE (``table_whole``) may hold: the host runs them as one bridge does
_WHOLE_TABLE = (ir.SetField, ir.MoveField, ir.PushVlan, ir.PopVlan, ir.PushMpls, ir.PopMpls, ir.SetMplsTtl, ir.SetNwTtl,
                ir.DecTtl, ir.DecMplsTtl, ir.SetQueue, ir.Note, ir.Exit, Output, ir.Clone)
_WHOLE_PORTS = (ir.OFPP_IN_PORT, ir.OFPP_FLOOD, ir.OFPP_ALL, ir.OFPP_LOCAL, ir.OFPP_TABLE)


def table_whole(actions: Iterable[Action], state_carried: bool = True) -> bool:
    """Does this PACKET_OUT go to the host whole for its ``output:TABLE`` (module doc)? When an
    action but ``note`` follows a TABLE, or (``state_carried`` False: the emulator) one before
    it writes pipeline state, and it holds only ``_WHOLE_TABLE``'s actions: outputs to ports
    (up to 0xfeff), IN_PORT, FLOOD, ALL, LOCAL or TABLE, no write to ``pkt_mark`` (the host's
    table 0 copies match mark 0: docs/oneswitch.md section 1), no ``tun_metadata``, no read of
    ``in_port`` (the host end's number there)."""
    actions = list(actions)
    if not (after_table_problem(actions) or (not state_carried and state_before_table_problem(actions))):
        return False
    return all(_runs_whole(a) for a in actions)


def sends_whole(ep, actions: Iterable[Action]) -> bool:
    """``table_whole`` for the endpoint ``ep``: not while a virtual rule or group uses the mark
    (the host's table 0 copies match mark 0, and a host end's crossing reads a mark as a flow
    id: a rule's ``set_field:7->pkt_mark`` before a second TABLE misses them, measured)."""
    return table_whole(actions, getattr(ep.backend, "table_carries_state", True)) and not ep.state.mark_used


def _runs_whole(a: Action) -> bool:
    t = type(a)
    if t is ir.Clone:
        return all(_runs_whole(b) for b in a.actions)
    if not isinstance(a, _WHOLE_TABLE):
        return False
    if t is Output:
        return a.port <= 0xFEFF or a.port in _WHOLE_PORTS
    dst = a.field if t is ir.SetField else a.dst.field if t is ir.MoveField else ""
    src = a.src.field if t is ir.MoveField else ""
    return not (dst == "pkt_mark" or str(dst).startswith("tun_metadata") or str(src).startswith("tun_metadata")
                or src == "in_port")


__all__ = ["after_table_problem", "sends_whole", "state_before_table_problem", "table_whole"]
