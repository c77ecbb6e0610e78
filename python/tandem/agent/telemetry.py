"""The NF-level traffic matrix from two telemetry snapshots (UNO §3.2.2, §4). Pure.

Input: the emulator's metrics dict (``Machine.metrics()``, taken mid-run) at the
start and end of a period, and the placement graph's shape: its edges with their
configured (scenario) traffic as weights. Output: bits/s on every placement-graph
edge over the period.

What the metrics give and how it is used:
- ``nfs.NAME.packets``: packets the NF processed so far; with the packets dropped
  at the NF (``drops_by_place["nf:NAME"]``: queue full, buffer full, verdict
  drops) this is the NF's *offered* packet rate, so a saturated NF still
  shows the load it is asked to carry, not its capacity.
- ``flows.SRC.tx_bytes / tx_packets``: the mean frame size of the period turns
  packet rates into bit rates; the sum of ``tx_bytes`` is the offered traffic.
- an edge into an NF carries that NF's offered rate, split over its incoming
  edges by their configured weights; an edge out of an NF (and into a VM or port)
  carries the rate the NF processed, split over its outgoing edges the same way;
  an edge between two non-NFs (port -> VM) is its configured rate scaled by
  measured / configured offered traffic.
Cost: O(edges + NFs + drop places) per period.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

EdgeKey = tuple[str, str]


@dataclass(frozen=True)
class Counters:
    """The cumulative counters of one snapshot the agent needs."""

    time_s: float
    nf_packets: Mapping[str, int] = field(default_factory=dict)
    nf_drops: Mapping[str, int] = field(default_factory=dict)
    tx_bytes: int = 0
    tx_packets: int = 0


class TelemetryError(ValueError):
    """A snapshot lacks what the agent needs (names the missing part)."""


def _drop_place_nf(place: str, nfs: Sequence[str]) -> str | None:
    """The NF a drop place names: the emulator calls an NF's place ``nf:NAME``."""
    head, _, name = place.partition(":")
    return name if head == "nf" and name in nfs else None


def counters(metrics: Mapping) -> Counters:
    """The counters of one metrics snapshot."""
    if "duration_s" not in metrics:
        raise TelemetryError("telemetry snapshot: no 'duration_s' (simulated time covered)")
    nfs = metrics.get("nfs") or {}
    pk = {n: int(v.get("packets", 0)) for n, v in nfs.items()}
    drops: dict[str, int] = {}
    for place, reasons in (metrics.get("drops_by_place") or {}).items():
        n = _drop_place_nf(place, list(pk))
        if n is not None:
            drops[n] = drops.get(n, 0) + int(sum(reasons.values()))
    tb = sum(int(f.get("tx_bytes", 0)) for f in (metrics.get("flows") or {}).values())
    tp = sum(int(f.get("tx_packets", 0)) for f in (metrics.get("flows") or {}).values())
    return Counters(float(metrics["duration_s"]), pk, drops, tb, tp)


def traffic_matrix(shape: Sequence[tuple[str, str, float]], prev: Counters, cur: Counters,
                   configured_offered_bps: float) -> dict[EdgeKey, float]:
    """bits/s on each edge of `shape` ((from, to, configured bps)) between `prev` and `cur`."""
    dt = cur.time_s - prev.time_s
    if dt <= 0:
        raise TelemetryError(f"telemetry: the period must advance time (from {prev.time_s} s to {cur.time_s} s)")
    dp = cur.tx_packets - prev.tx_packets
    db = cur.tx_bytes - prev.tx_bytes
    mean_bits = 8.0 * db / dp if dp > 0 else 0.0
    offered = 8.0 * db / dt
    scale = offered / configured_offered_bps if configured_offered_bps > 0 else 0.0

    def done(n: str) -> float:
        return max(0, cur.nf_packets.get(n, 0) - prev.nf_packets.get(n, 0)) / dt * mean_bits

    def asked(n: str) -> float:
        return done(n) + max(0, cur.nf_drops.get(n, 0) - prev.nf_drops.get(n, 0)) / dt * mean_bits

    nfs = set(cur.nf_packets)
    w_in: dict[str, float] = {}
    w_out: dict[str, float] = {}
    n_in: dict[str, int] = {}
    n_out: dict[str, int] = {}
    for a, z, w in shape:
        w_out[a] = w_out.get(a, 0.0) + w
        w_in[z] = w_in.get(z, 0.0) + w
        n_out[a] = n_out.get(a, 0) + 1
        n_in[z] = n_in.get(z, 0) + 1

    def share(w: float, tot: float, count: int) -> float:
        return w / tot if tot > 0 else 1.0 / count

    out: dict[EdgeKey, float] = {}
    for a, z, w in shape:
        if z in nfs:
            out[(a, z)] = asked(z) * share(w, w_in[z], n_in[z])
        elif a in nfs:
            out[(a, z)] = done(a) * share(w, w_out[a], n_out[a])
        else:
            out[(a, z)] = w * scale
    return out


def summary(matrix: Mapping[EdgeKey, float]) -> dict[str, float]:
    """``"a->z": Gbps`` for metrics.json, rounded to 1 kbit/s."""
    return {f"{a}->{z}": round(bps / 1e9, 6) for (a, z), bps in sorted(matrix.items())}
