"""Turn a scenario NF cost profile into emulator core cycles.

The scenario may describe an NF's cost three ways (tandem.model CostProfile):
cycles (``cycles_per_packet`` + ``cycles_per_byte``), UNO's ``cores_per_gbps``
(r_host / r_nic), or SmartChain's ``capacity`` θ (max throughput alone on the
device). All become cycles per packet + cycles per byte on the device that
runs the NF, so that an NF alone on the device's NF cores saturates exactly at
its stated capacity. Cycles win when given; then cores_per_gbps; then
capacity. ``accelerator.bytes_fraction`` moves that share of the byte work to
the named accelerator kind. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class NfCycles:
    cycles_per_packet: float
    cycles_per_byte: float
    accelerator_kind: Optional[str] = None
    source: str = "cycles"  # which profile field the figures came from


def nf_cycles(profile, *, cores: int, clock_hz: float, speed: float = 1.0) -> NfCycles:
    """Cycles for one packet of an NF with `profile` on a device with `cores` NF cores."""
    hz = clock_hz * speed
    accel = profile.accelerator.kind if getattr(profile, "accelerator", None) else None
    keep = 1.0 - (profile.accelerator.bytes_fraction if accel else 0.0)
    if profile.cycles_per_packet or profile.cycles_per_byte:
        return NfCycles(profile.cycles_per_packet, profile.cycles_per_byte * keep, accel, "cycles")
    if profile.cores_per_gbps:
        # r cores per Gb/s = r * hz cycles per 1e9 bits.
        return NfCycles(0.0, profile.cores_per_gbps * hz * 8 / 1e9 * keep, accel, "cores_per_gbps")
    if profile.capacity:
        # θ b/s uses all `cores`: cores * hz cycles per θ/8 bytes.
        return NfCycles(0.0, cores * hz * 8 / profile.capacity * keep, accel, "capacity")
    return NfCycles(0.0, 0.0, accel, "none")
