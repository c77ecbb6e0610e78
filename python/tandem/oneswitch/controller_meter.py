"""Open vSwitch's ``controller(meter_id=M)`` across OneSwitch: which meters a rule's
packet-ins pass, for the port extension that keeps each meter one budget.

Open vSwitch 3.1 passes the packet-in of ``controller(meter_id=M)`` through meter M
(a drop takes the packet-in only: the packet goes on) and runs no ``controller(…)``
of a group bucket at all (measured: no packet-in, M's counters unchanged). The
physical action names M too (``packet_in_ext.physical_controller``), and every
physical switch holds meter M under its virtual number, so M is one token bucket
exactly when every rule naming M, by its meter instruction or by such an action
in its apply-actions (clones included), runs on one switch: ``extension.py``
counts both. A PACKET_OUT's packet-ins are sent by the endpoint itself, which asks the
switch holding M's budget to meter them (``packet_out_meter.py``).

OpenFlow's slowpath meter 0xfffffffd is such a meter M too: Open vSwitch 3.1 passes
``controller(meter_id=0xfffffffd)``'s packet-ins (a flow's, a PACKET_OUT's) through it as
through meter 1, and nothing else (measured on one bridge: 3 of 20 through
``pktps,burst`` rate 2 burst 3, its counters 20 in, 17 dropped; plain ``controller``
flows, invalid_ttl packet-ins and PACKET_OUTs' packet-ins left it at 0). Any other id
above 0xffff0000 names no meter OneSwitch can hold (its METER_MOD takes 1..0xffff0000 and
slowpath; OpenFlow's controller meter 0xfffffffe it refuses), so such a packet-in is
unmetered everywhere, as Open vSwitch 3.1 leaves it while no meter of that id exists
(measured: ``controller(meter_id=0xfffffffe)`` sent 10 packet-ins of 10; once
``meter=controller`` is configured, 0xfffffffe's pass it and it meters every other
packet-in too): not counted here, unmetered in a PACKET_OUT. Pure.
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules.ir import ApplyActions, Clone, Controller, Rule
from tandem.rules.meters import OFPM_MAX, OFPM_SLOWPATH


def holdable(meter_id: int | None) -> bool:
    """Whether ``meter_id`` names a meter OneSwitch can hold (1..0xffff0000, slowpath)."""
    return meter_id is not None and (meter_id <= OFPM_MAX or meter_id == OFPM_SLOWPATH)


def _in_actions(actions: Iterable, out: set[int]) -> set[int]:
    for a in actions:
        t = type(a)
        if t is Controller and holdable(a.meter_id):  # (another id above 0xffff0000: no meter can exist)
            out.add(a.meter_id)
        elif t is Clone:
            _in_actions(a.actions, out)
    return out


def controller_meters(r: Rule) -> set[int]:
    """The meters ``r``'s ``controller(meter_id=…)`` actions name (apply-actions and its
    clones; OneSwitch refuses ``controller(…)`` in write-actions, and a bucket's runs not)."""
    out: set[int] = set()
    for ins in r.instructions:
        if type(ins) is ApplyActions:
            _in_actions(ins.actions, out)
    return out


__all__ = ["controller_meters", "holdable"]
