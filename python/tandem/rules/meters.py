"""OpenFlow 1.3 meters in the rule IR: bands, meter configurations, METER_MOD.

A meter (OpenFlow 1.3.5 §5.7) measures the rate of the packets that pass
through it (the ``meter:N`` instruction, ``ir.MeterInstruction``) and applies
the band with the highest rate among those the packet exceeds: ``drop`` drops
it, ``dscp_remark`` raises the drop precedence of its IP DSCP by
``prec_level``. Rates are in kb/s (``kbps``, the default) or packets/s
(``pktps``); ``burst_size`` (kilobits or packets) counts only with the
``burst`` flag. Token-bucket semantics are in dp-core (``meter.rs``).

Text form: ``ovs-ofctl add-meter`` syntax (``rules/ofctl_meter.py``); wire
form: ``rules/ofwire_meter.py``. All types frozen and hashable.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import RuleError

OFPM_MAX = 0xFFFF0000
OFPM_SLOWPATH, OFPM_CONTROLLER, OFPM_ALL = 0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF
OFPM_NAMES = {OFPM_SLOWPATH: "slowpath", OFPM_CONTROLLER: "controller"}  # OpenFlow's virtual meters, as ovs-ofctl names them
OFPM_VIRTUAL = tuple(OFPM_NAMES)
BAND_TYPES = ("drop", "dscp_remark")
METER_MOD_COMMANDS = ("add", "modify", "delete")
# flag bits (OFPMF_*)
OFPMF_KBPS, OFPMF_PKTPS, OFPMF_BURST, OFPMF_STATS = 1, 2, 4, 8


@dataclass(frozen=True)
class MeterBand:
    type: str
    rate: int
    burst_size: int = 0
    prec_level: int = 0  # dscp_remark only

    def __post_init__(self) -> None:
        if self.type not in BAND_TYPES:
            raise RuleError(f"meter band type {self.type!r} is not one of {', '.join(BAND_TYPES)}")
        if not 1 <= self.rate <= 0xFFFFFFFF:
            raise RuleError(f"meter band rate {self.rate} outside 1..4294967295")
        if not 0 <= self.burst_size <= 0xFFFFFFFF:
            raise RuleError(f"meter band burst_size {self.burst_size} outside 0..4294967295")
        if not 0 <= self.prec_level <= 0xFF or (self.type == "drop" and self.prec_level):
            raise RuleError(f"meter band prec_level {self.prec_level}: 0..255, and only for dscp_remark")


@dataclass(frozen=True)
class Meter:
    """One meter entry: id, unit (``pktps`` False = kb/s), flags, bands."""

    meter_id: int
    bands: tuple[MeterBand, ...] = ()
    pktps: bool = False
    burst: bool = False
    stats: bool = False

    def __post_init__(self) -> None:
        mid = self.meter_id
        if not (1 <= mid <= OFPM_MAX or mid in OFPM_VIRTUAL or (mid == OFPM_ALL and not self.bands)):
            raise RuleError(f"meter {self.meter_id}: meter ids are 1..{OFPM_MAX:#x}, slowpath, controller "
                            "(or all, to delete/dump)")

    @property
    def flags(self) -> int:
        return (OFPMF_PKTPS if self.pktps else OFPMF_KBPS) | (OFPMF_BURST if self.burst else 0) | \
            (OFPMF_STATS if self.stats else 0)

    @classmethod
    def from_flags(cls, meter_id: int, flags: int, bands: tuple[MeterBand, ...]) -> "Meter":
        if flags & OFPMF_KBPS and flags & OFPMF_PKTPS:
            raise RuleError(f"meter {meter_id}: flags kbps and pktps together")
        return cls(meter_id, bands, pktps=bool(flags & OFPMF_PKTPS), burst=bool(flags & OFPMF_BURST),
                   stats=bool(flags & OFPMF_STATS))


@dataclass(frozen=True)
class MeterMod:
    """A controller's change to the meter table (OFPT_METER_MOD). For ``delete``
    only ``meter.meter_id`` counts (``OFPM_ALL`` deletes every meter)."""

    command: str
    meter: Meter

    def __post_init__(self) -> None:
        if self.command not in METER_MOD_COMMANDS:
            raise RuleError(f"meter mod command {self.command!r} is not one of {', '.join(METER_MOD_COMMANDS)}")


@dataclass(frozen=True)
class MeterStats:
    """Counters of one meter (OFPMP_METER): packets/bytes in, per band the
    packets/bytes the band applied to; ``flow_count`` rules using it."""

    meter_id: int
    flow_count: int = 0
    packet_in_count: int = 0
    byte_in_count: int = 0
    duration_sec: int = 0
    duration_nsec: int = 0
    band_stats: tuple[tuple[int, int], ...] = ()  # (packets, bytes) per band


@dataclass(frozen=True)
class MeterFeatures:
    max_meter: int = 0x10000
    band_types: int = (1 << 1) | (1 << 2)  # bit per OFPMBT_* (drop = 1, dscp_remark = 2)
    capabilities: int = OFPMF_KBPS | OFPMF_PKTPS | OFPMF_BURST | OFPMF_STATS
    max_bands: int = 8
    max_color: int = 0
