"""UNO Fig. 2 in emulation: "no offload" vs "full offload" NF chaining.

Setup (UNO §2.3, Fig. 1, as we read it): traffic arrives on the sNIC's 10 GbE
port, passes a chain of k NFs on the host, and ends in a tenant VM.
- no offload: the sNIC hands every packet to the host switch once; the host
  switch chains the NFs and delivers to the VM -> 1 PCIe crossing.
- full offload: all switching runs on the sNIC; each host NF and the VM sits
  behind its own SR-IOV VF, so a packet crosses PCIe 2k + 1 times.
PCIe Gen2 x8 is one 32 Gb/s bus shared by both directions (UNO counts the
aggregate: "21Gbps (3Gbps x 7)"), with a fixed per-crossing DMA cost, served
round robin over per-VF rings. A bus model that is linear in crossings cannot
give both of UNO's figures: 6 Gb/s x 5 crossings = 30 Gb/s at k = 2 but only
3 Gb/s x 7 = 21 Gb/s at k = 3, which UNO blames on "CPUs and PCIe bus
contention". We model that contention as a DMA ring-context cache: the sNIC
keeps the contexts of RING_CONTEXTS rings (one per VF and direction, LRU);
serving a ring whose context was evicted costs RING_MISS_S more bus time. A
chain of k NFs keeps 2k + 1 rings busy: up to k = 2 (5 rings) every context
stays cached; at k = 3 (7 rings) round-robin service evicts each context just
before it is needed again, so every crossing misses. Two calibrated figures,
each fixed by one of UNO's two measurements (1500 B frames):
- DMA_S = 25 ns per crossing: 5 x (375 + 25) ns = 2 µs a packet -> 6 Gb/s at k = 2;
- RING_MISS_S = 171.4 ns: 7 x (375 + 25 + 171.4) ns = 4 µs -> 3 Gb/s at k = 3.
Everything else (the flat no-offload curve, k = 1, latencies) follows from the model.
Outputs: one row per (mode, k) with chain throughput, aggregate PCIe Gb/s
and unloaded latency; ``write_outputs`` saves CSV + PNG. Pure apart from that.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass
from pathlib import Path

from tandem.emu.machine import Machine

LINE_BPS = 10e9
PCIE_BPS = 32e9  # PCIe Gen2 x8 (UNO §2.3)
ONE_WAY_S = 13e-6  # half of the 26 µs round trip (SmartChain §II)
DMA_S = 25e-9  # per-crossing DMA cost; calibrated on UNO's 6 Gb/s at k = 2
FRAME = 1500
RING_CONTEXTS = 6  # DMA ring contexts the sNIC caches: 2k + 1 busy rings fit for k <= 2, not k = 3
# Calibrated on UNO's 3 Gb/s (21 Gb/s aggregate) at k = 3: the bus time per crossing
# that 7 crossings per 1500 B packet need for 3 Gb/s, minus transfer and DMA time.
RING_MISS_S = (FRAME * 8 / 3e9) / 7 - FRAME * 8 / PCIE_BPS - DMA_S  # = 171.4 ns
NF_CYCLES = 300.0  # a light NF on one 2.7 GHz host core: 9 Mpps, never the bottleneck here
UNO_REPORTED = {("full_offload", 2): {"throughput_gbps": 6.0}, ("full_offload", 3): {"pcie_gbps": 21.0}}


@dataclass(frozen=True)
class Point:
    mode: str
    nfs: int
    throughput_gbps: float
    pcie_gbps: float
    pcie_crossings: int
    latency_us_p50: float
    drops: int


def build(mode: str, k: int, *, pps: float, seed: int = 1, frame: int = FRAME, dma_s: float = DMA_S,
          ring_contexts: int = RING_CONTEXTS, ring_miss_s: float = RING_MISS_S) -> Machine:
    if mode not in ("no_offload", "full_offload"):
        raise ValueError(f"mode must be no_offload or full_offload, got {mode!r}")
    m = Machine(seed)
    m.device("host", 24, 2.7e9)
    m.device("snic", 36, 1.2e9)
    m.pcie("pcie", "snic", "host", PCIE_BPS, shared=True, latency_s=ONE_WAY_S, dma_s=dma_s, round_robin=True,
           queue_depth=256, ring_contexts=ring_contexts, ring_miss_s=ring_miss_s)
    eth0 = m.new_port("snic")
    vm = m.sink("vm")
    nfs = [m.nf(f"nf{i + 1}", "host", "fixed_cost", ports=1 if mode == "full_offload" else 2,
                cycles_per_packet=NF_CYCLES, cores=[i]) for i in range(k)]
    if mode == "no_offload":
        s_up, h_in = m.new_port("snic"), m.new_port("host")
        m.pcie_pair("pcie", m.sw("snic", s_up), m.sw("host", h_in))
        m.forward("snic", eth0, s_up)
        prev = h_in
        for nf in nfs:
            p_in, p_out = m.attach_nf(nf, "host")
            m.forward("host", prev, p_in)
            prev = p_out
        vm_port = m.new_port("host")
        m.connect(m.sw("host", vm_port), vm)
        m.forward("host", prev, vm_port)
    else:
        prev = eth0
        for nf in nfs:
            vf = m.new_port("snic")
            m.pcie_pair("pcie", m.sw("snic", vf), m.nf_port(nf, 0))
            m.forward("snic", prev, vf)
            prev = vf
        vf_vm = m.new_port("snic")
        m.pcie_pair("pcie", m.sw("snic", vf_vm), vm)
        m.forward("snic", prev, vf_vm)
    m.source("wire", m.sw("snic", eth0), pattern="constant", pps=pps, sizes=[(frame, 1.0)], flows=64,
             line_bps=LINE_BPS)
    return m


def measure(mode: str, k: int, *, duration_s: float = 0.01, seed: int = 1, frame: int = FRAME) -> Point:
    """Throughput at full 10 GbE offered load, latency at 10 % load."""
    line_pps = LINE_BPS / ((frame + 20) * 8)
    busy = build(mode, k, pps=line_pps * 1.01, seed=seed, frame=frame).run(duration_s)
    light = build(mode, k, pps=line_pps * 0.1, seed=seed, frame=frame).run(duration_s)
    flow = busy["flows"]["wire"]
    return Point(
        mode=mode,
        nfs=k,
        throughput_gbps=flow["throughput_gbps"],
        pcie_gbps=busy["pcie"]["pcie"]["total_gbps"],
        pcie_crossings=1 if mode == "no_offload" else 2 * k + 1,
        latency_us_p50=light["flows"]["wire"]["latency_ns"]["p50"] / 1e3,
        drops=flow["dropped"],
    )


def run(chain_lengths=(1, 2, 3), *, duration_s: float = 0.01, seed: int = 1) -> list[Point]:
    return [measure(mode, k, duration_s=duration_s, seed=seed)
            for mode in ("no_offload", "full_offload") for k in chain_lengths]


def write_outputs(points: list[Point], out_dir: Path) -> tuple[Path, Path | None]:
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "uno_fig2.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(asdict(points[0])))
        w.writeheader()
        for p in points:
            w.writerow(asdict(p))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return csv_path, None
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    for mode, style in (("no_offload", "o-"), ("full_offload", "s--")):
        pts = [p for p in points if p.mode == mode]
        ks = [p.nfs for p in pts]
        a.plot(ks, [p.throughput_gbps for p in pts], style, label=mode.replace("_", " "))
        b.plot(ks, [p.latency_us_p50 for p in pts], style, label=mode.replace("_", " "))
    a.set(xlabel="chained NFs", ylabel="chain throughput (Gb/s)", title="(a) throughput", ylim=(0, 11))
    b.set(xlabel="chained NFs", ylabel="median latency (µs)", title="(b) latency at 10 % load")
    for ax in (a, b):
        ax.set_xticks(sorted({p.nfs for p in points}))
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("UNO Fig. 2 in emulation: PCIe Gen2 x8 (32 Gb/s shared), 1500 B frames")
    fig.tight_layout()
    png_path = out_dir / "uno_fig2.png"
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return csv_path, png_path
