"""``output:NORMAL`` in a PACKET_OUT (docs/oneswitch.md section 6, "NORMAL").

NORMAL is one bridge's MAC-learning switch. Its table is the host switch's: only
virtual NORMAL runs there (a rule's NORMAL compiles to the host's, and while one
exists every port's pipeline runs on the host), each virtual port learned at its
host number — a host port, or the host end of its chain, which is the same pair
each time the port is extended (extension.py keeps the pairs). So a PACKET_OUT's
NORMAL runs on the host too, with its in_port the host number of the virtual
in_port (CONTROLLER as it is: that one learns nothing and floods), its other
actions before it. That is exact while every virtual port's pipeline runs on the
host (every port is a host port, or extended: while a rule outputs to NORMAL, or
uses ct or learn): the host's NORMAL then reaches each virtual port at its host
number, by a learned entry or by its flood (the PCIe link ports are no-flood).
A PACKET_OUT with NORMAL that arrives while an sNIC port's pipeline runs on its sNIC
first homes every port (homing on demand, ``packet_out_whole.homing_plans``). On the
emulator backend a PACKET_OUT from LOCAL is refused (``check``): the emulated host
switch has no LOCAL port to learn it on.
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules import ofwire as W
from tandem.rules import ir
from tandem.rules.ir import Action, GroupAction, Output


def _outputs(ep, actions: Iterable[Action], depth: int = 0) -> Iterable[int]:
    for a in actions:
        if isinstance(a, Output):
            yield a.port
        elif isinstance(a, GroupAction) and depth < 8:
            g = ep.groups.get(a.group_id)
            for b in (g.buckets if g is not None else ()):
                yield from _outputs(ep, b.actions, depth + 1)


def uses_normal(ep, actions: Iterable[Action]) -> bool:
    """Does a PACKET_OUT with ``actions`` (its groups' buckets included) output to NORMAL?"""
    return any(p == ir.OFPP_NORMAL for p in _outputs(ep, actions))


def check(ep, in_port: int, actions: Iterable[Action]) -> None:
    """Refuse a PACKET_OUT's NORMAL that the host switch cannot run exactly (the ports
    still on their sNICs are homed on demand first: packet_out_whole.py)."""
    if not uses_normal(ep, actions):
        return
    if not getattr(ep.backend, "runs_normal", True):
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT,
                        f"NORMAL is not run by the {ep.backend.name} backend's switches")
    if in_port == ir.OFPP_LOCAL and ep.backend.name == "emu":
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT,
                        "NORMAL in a PACKET_OUT from LOCAL: the emulated host switch has no LOCAL port to learn it on")


def host_in_port(ep, in_vport: int) -> int | None:
    """The host's number for a PACKET_OUT's in_port (None: no such port, NORMAL drops)."""
    if in_vport in (ir.OFPP_CONTROLLER, ir.OFPP_ANY):
        return ir.OFPP_CONTROLLER
    if in_vport == ir.OFPP_LOCAL:
        return ir.OFPP_LOCAL
    ref = ep.state.topo.port_map.get(in_vport)
    return ref.port if ref is not None and ref.switch == ep.state.topo.host else None


async def packet_out(ep, in_vport: int, mods: list[Action], frame: bytes) -> None:
    """Run ``mods`` then NORMAL on the host, as the PACKET_OUT's (``check`` passed)."""
    phys_in = host_in_port(ep, in_vport)
    if phys_in is not None:
        await ep.backend.packet_out(ep.topo.host, phys_in, [*mods, Output(ir.OFPP_NORMAL)], frame)
