"""A PACKET_OUT's ``controller(meter_id=M)`` across OneSwitch: its packet-in passes meter
M's one budget (docs/endpoint.md, "Meters").

Open vSwitch 3.1 passes such a packet-in through meter M when the PACKET_OUT runs
(measured on one bridge: the bucket M's flows use, also inside a clone; the frame as
changed so far is what a kb/s band charges; a drop band drops the packet-in only; the
token is spent also when nothing is sent, a reason above 5 or a controller id no
connection has; without meter M every packet-in goes; M's counters count them). The
endpoint sends a PACKET_OUT's packet-ins itself (``endpoint_packet_in.py``), so it asks
the physical switch that holds M's budget to run its meter on the packet-in's frame
(``Backend.meter_packet_in``) and sends the packet-in only if the meter passes it (as
the meter remarked it). That switch is the one M's rules run on (the port extension
keeps them on one: ``extension.meter_switches``), the host while no rule names M; during
an NF move that spreads them, the host if it is among them. The meter runs at the
packet-in's place in the PACKET_OUT, which waits for it, so the packet-ins and outputs
keep their order. Cost: a scan of the virtual rules and one round trip to the switch
per metered packet-in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.backends.base import BackendError
from tandem.oneswitch.controller_meter import holdable
from tandem.oneswitch.extension import meter_switches
from tandem.rules import ofwire as W
from tandem.rules.ir import Controller

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint import OneSwitchEndpoint


def meter_switch(ep: "OneSwitchEndpoint", meter_id: int) -> str:
    """The physical switch whose copy of meter ``meter_id`` is its budget (module doc)."""
    host = ep.topo.host  # type: ignore[attr-defined]
    switches = meter_switches(ep.state, meter_id)
    return host if host in switches or not switches else min(switches)


async def metered_packet_in(ep: "OneSwitchEndpoint", a: Controller, frame: bytes) -> bytes | None:
    """The frame of ``a``'s packet-in after its meter (remarked by a DSCP band), None if the
    meter drops it; ``frame`` as it is when ``a`` names no meter that exists now."""
    m = a.meter_id
    if not holdable(m) or m not in ep.meters:  # (measured: without meter M every packet-in goes)
        return frame
    try:
        return await ep.backend.meter_packet_in(meter_switch(ep, m), m, frame)
    except BackendError as e:  # (the PACKET_OUT's earlier outputs are sent; it ends here)
        raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM, f"controller(meter_id={m}) in a PACKET_OUT: {e}") from None


__all__ = ["meter_switch", "metered_packet_in"]
