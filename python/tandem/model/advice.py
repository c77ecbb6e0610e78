"""Warnings about a valid scenario that will not do what it seems to ask.

``over_line_rate(sc)``: traffic sources whose sNIC Ethernet port is offered more
than it can carry, by them alone or together with the other sources entering
the same port. The emulator sends at most the port's line rate in all (the
sources share the port's wire, a frame at a time); the rest of each source's
offered load is counted as drops (reason ``over_line_rate``) by ``tandem run``,
and ``tandem validate`` warns. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.model.units import BANDWIDTH, human


@dataclass(frozen=True)
class OverLineRate:
    source: str
    port: str  # "snic0.eth0"
    offered_bps: float  # average while the source runs (on/off duty applied)
    line_bps: float
    port_offered_bps: float  # all sources entering the port together
    sharing: tuple[str, ...] = ()  # the other sources entering the port

    def message(self) -> str:
        together = (f" (with {', '.join(f'traffic.{s}' for s in self.sharing)}: "
                    f"{human(self.port_offered_bps, BANDWIDTH)} in all)") if self.sharing else ""
        return (f"traffic.{self.source}: offers {human(self.offered_bps, BANDWIDTH)} into {self.port}{together}, which carries "
                f"{human(self.line_bps, BANDWIDTH)}; `tandem run` counts the excess as drops (over_line_rate)")


def duty(src) -> float:
    """Share of time an on/off source sends (1 for the others)."""
    if src.pattern == "onoff" and src.on_time:
        return src.on_time / (src.on_time + (src.off_time or 0.0))
    return 1.0


def ingress_port(sc, src) -> str | None:
    """The sNIC Ethernet port ``"snic.ethN"`` a source enters, if it enters one."""
    ref = src.ingress
    if ref is None:
        target = sc.chains.get(src.target) or sc.element_graphs.get(src.target)
        ref = getattr(target, "ingress", None)
    if ref is None:
        return None
    dev, _, port = ref.partition(".")
    d = sc.devices.get(dev)
    if d is None or getattr(d, "kind", None) != "snic" or port not in d.ports:
        return None
    return ref


def over_line_rate(sc) -> list[OverLineRate]:
    by_port: dict[str, dict[str, float]] = {}
    for name, src in sc.traffic.items():
        if src.pattern == "replay":  # its rate is the recording's; it still shares the wire
            continue
        port = ingress_port(sc, src)
        if port is not None:
            by_port.setdefault(port, {})[name] = src.offered_bps() * duty(src)
    out = []
    for port, offered in by_port.items():
        dev, _, p = port.partition(".")
        line = sc.devices[dev].ports[p].rate
        total = sum(offered.values())
        if total > line * 1.001:
            out += [OverLineRate(name, port, bps, line, total, tuple(n for n in offered if n != name))
                    for name, bps in offered.items()]
    return out
