"""The OVS-POF-TC §IV experiments on the emulated system (Figs. 4–7, 9, 10) and the
adaptive-versus-FIFO workload. Each function builds an `OffloadSystem`, drives it and
returns plain numbers; tests assert on them and `tandem bench pof_offload` prints them.
Inputs the paper does not give are named as assumptions where they are set.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from tandem.rules.ir import Output, PofAddField, PofField, SetField

from .decision import FlowArrays, decide_revalidate
from .system import OffloadSystem, PofFt, TrafficFlow
from .timemodel import FIG9_ACTIONS, PathModel, wire_bits

# §IV-A: the two POF-FTs of Fig. 4 (match on the IPv4 source, <208,32>)
FIG4_FT1 = PofFt("ft1", ((208, 32, 0x02020203),), (SetField(PofField(240, 32), 0x0A020202), Output(5)))
FIG4_FT2 = PofFt("ft2", ((208, 32, 0x02020202),), (PofAddField(112, 32, 0x0A0A0908), Output(5)))
UDP_PORT = 23130  # Fig. 5(a): "Source port: 23130"


def udp_frame(src: str, dst: str, length: int, sport: int = UDP_PORT, dport: int = UDP_PORT) -> bytes:
    """An Ethernet/IPv4/UDP frame of exactly `length` bytes (no FCS)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    base = Ether(src="00:15:4d:00:00:01", dst="00:15:4d:00:00:02") / IP(src=src, dst=dst, ttl=64) / UDP(sport=sport, dport=dport)
    pay = max(0, length - len(base))
    return bytes(base / (b"\x00" * pay))[:length] if pay else bytes(base)[:length]


def fig4_system(policy: str = "actions") -> OffloadSystem:
    s = OffloadSystem(policy=policy)
    for ft in (FIG4_FT1, FIG4_FT2):
        s.add(PofFt(ft.id, ft.match, ft.actions, frame_bytes=64))
    s.advance(s.model.tau_add_s)  # the offload batch completes (Fig. 8)
    return s


def fig5_traffic() -> list[bytes]:
    """The eight packets of Fig. 5(a) as sent: 2.2.2.3 -> 2.2.2.1 (60 B) and
    2.2.2.2 -> 2.2.2.1 (124 B, 128 B once AddField inserts 4 bytes)."""
    a = udp_frame("2.2.2.3", "2.2.2.1", 60)
    b = udp_frame("2.2.2.2", "2.2.2.1", 124)
    return [b, a, a, a, b, a, a, a]


# ------------------------------------------------------------------ Fig. 6
FIG6_RATE_PPS = 0.3e6  # assumption: the paper does not give the three flows' rates


def fig6(rate_pps: float = FIG6_RATE_PPS, duration_s: float = 0.2) -> dict[str, float]:
    """Three flows: SetField+Output, AddField+Output, Output only; the §IV-A2 decision
    rule offloads the first two. Returns each flow's mean modelled latency (s)."""
    s = OffloadSystem(policy="actions")
    s.add(PofFt("set", ((208, 32, 0x02020203),), (SetField(PofField(240, 32), 0x0A020202), Output(5)), frame_bytes=64))
    s.add(PofFt("add", ((208, 32, 0x02020204),), (PofAddField(112, 32, 0x0A0A0908), Output(5)), frame_bytes=64))
    s.add(PofFt("out", ((208, 32, 0x02020205),), (Output(5),), frame_bytes=64))
    flows = [TrafficFlow(n, n, udp_frame(src, "2.2.2.1", 60), rate_pps)
             for n, src in (("set", "2.2.2.3"), ("add", "2.2.2.4"), ("out", "2.2.2.5"))]
    s.advance(s.model.tau_add_s)
    rows = s.run(flows, until=s.now + duration_s, dt=1e-3)
    lat = {f.name: statistics.fmean(r["latency_s"][f.name] for r in rows) for f in flows}
    lat["in_hw"] = {n: s.fts[n].in_hw for n in ("set", "add", "out")}
    lat["host_cpu_packets_of_offloaded_fts"] = s.counters["host_cpu_packets_of_offloaded_fts"]
    return lat


# ------------------------------------------------------------------ Fig. 7
def fig7(update_at_s: float = 5.0, duration_s: float = 10.0, dt: float = 1e-3, gbps: float = 20.0) -> dict:
    """One 64 B flow at `gbps` on the wire; its POF-FT is Output only, then at
    update_at_s becomes AddField+Output. Returns the throughput series, the packets the
    update lost (a dip below the lower steady rate, lost probes, kernel drops) and the
    probe frames seen with the old / new / any other rule (checked on real frames each
    tick). 20 Gbps of 64 B frames is 29.76 Mpps, above the sNIC's 28.64 Mpps, so the
    excess is dropped before and after the update alike (`overcapacity_drops`), as in
    the paper (19.25 Gbps served of 20)."""
    s = OffloadSystem(policy="fifo")
    s.add(PofFt("f", ((208, 32, 0x02020202),), (Output(5),), frame_bytes=64))
    s.advance(s.model.tau_add_s)
    frame = udp_frame("2.2.2.2", "2.2.2.1", 64)
    old = frame
    new = frame[:14] + bytes.fromhex("0a0a0908") + frame[14:]
    rate = gbps * 1e9 / wire_bits(64)
    flow = TrafficFlow("f", "f", frame, rate)
    bad = {"lost": 0, "other": 0, "old": 0, "new": 0}

    def schedule(t, sys):
        if abs(t - update_at_s) < dt / 2:
            sys.update("f", (PofAddField(112, 32, 0x0A0A0908), Output(5)))
        path, outs, drops = sys.send(frame, 1)
        if drops or len(outs) != 1:
            bad["lost"] += 1
        elif outs[0] == (5, old):
            bad["old"] += 1
        elif outs[0] == (5, new):
            bad["new"] += 1
        else:
            bad["other"] += 1

    rows = s.run([flow], until=s.now + duration_s, dt=dt, schedule=schedule)
    series = [(r["t"], r["flows"]["f"]) for r in rows]
    before = statistics.median(v for t, v in series if t < update_at_s)
    after = statistics.median(v for t, v in series if t > update_at_s + 0.1)
    floor = min(before, after)
    # packets the update cost: any dip below the lower of the two steady rates, plus lost probes
    update_loss = sum(max(0.0, floor - v) * dt for _, v in series) + bad["lost"]
    return {"series": series, "before_pps": before, "after_pps": after, "min_pps": min(v for _, v in series),
            "offered_pps": rate, "lost_packets": update_loss + s.counters["kernel_backlog_drops"],
            "overcapacity_drops": s.counters["hw_overload_drops"], "samples": bad, "in_hw": s.fts["f"].in_hw}


# ------------------------------------------------------------------ Fig. 9
def fig9(model: PathModel | None = None) -> dict:
    """Throughput (Mpps, 64 B) vs number of SetField / AddField actions, offload on
    (the sNIC path) and off (the software switch, Fig. 9's OVS-POF)."""
    m = model or PathModel()
    out = {}
    for kind in ("set", "add"):
        rows = []
        for a in FIG9_ACTIONS:
            ns, na = (a, 0) if kind == "set" else (0, a)
            on, off = m.hw_pps(ns, na), m.sw_pps(ns, na)
            rows.append((a, on / 1e6, off / 1e6, on / off))
        ratios = [r[3] for r in rows]
        out[kind] = {"rows": rows, "max_ratio": max(ratios), "avg_ratio": statistics.fmean(ratios)}
    return out


# ------------------------------------------------------------------ Fig. 10
def fig10(rates_mpps=(0.1, 0.2, 0.3, 0.4, 0.447, 0.5, 0.52, 0.55, 0.596, 0.7, 0.8), n_flows: int = 10,
          duration_s: float = 2.0) -> list[tuple[float, float, float]]:
    """Offload off (policy fifo with no sNIC memory): 10 Output-only 64 B flows whose
    total rate sweeps `rates_mpps`. Returns (offered Mpps, throughput Mpps, mean latency us)
    measured over the second half of each run (the backlog has settled)."""
    res = []
    for total in rates_mpps:
        s = OffloadSystem(policy="fifo", capacity=0)
        flows = []
        for i in range(n_flows):
            src = 0x02020200 + i
            s.add(PofFt(f"f{i}", ((208, 32, src),), (Output(5),), frame_bytes=64))
            ip = ".".join(str((src >> sh) & 255) for sh in (24, 16, 8, 0))
            flows.append(TrafficFlow(f"f{i}", f"f{i}", udp_frame(ip, "2.2.2.1", 64), total * 1e6 / n_flows))
        rows = s.run(flows, until=duration_s, dt=5e-3)
        tail = rows[len(rows) // 2:]
        thr = statistics.fmean(r["kernel_pps"] + r["hw_pps"] for r in tail) / 1e6
        lat = statistics.fmean(r["kernel_latency_s"] for r in tail) * 1e6
        res.append((total, thr, lat))
    return res


def knee(points: list[tuple[float, float, float]], jump_us: float = 1000.0) -> tuple[float, float]:
    """The two offered rates between which the latency jumps above jump_us."""
    for (r0, _, l0), (r1, _, l1) in zip(points, points[1:]):
        if l0 < jump_us <= l1:
            return r0, r1
    raise ValueError("no latency knee in the sweep")


# ------------------------------------------------------------------ adaptive vs FIFO
def adaptive(policy: str, n: int = 20, capacity: int = 20, period_s: float = 1.0, shift_at_s: float = 2.5,
             duration_s: float = 7.0, dt: float = 10e-3, seed: int = 7, n_a: int | None = None,
             a_bytes: int = 64, a_light_pps: tuple[float, float] = (5e3, 20e3)) -> dict:
    """The sNIC is full of flows that turn light, and heavy flows arrive after them.
    t = 0: n flows A (64 B, 0.8–1.2 Mpps each, above the kernel knee) are installed and
    fill the sNIC (capacity = n). t = shift_at_s: the A flows drop to 5–20 kpps and n new
    flows B arrive at 0.8–1.2 Mpps (their POF-FTs are installed then; their rates are
    unknown to the decision module until the revalidator has counted them).
    `n_a`, `a_bytes`, `a_light_pps` vary the A flows (default n_a = n, 64 B, 5–20 kpps);
    with more A flows than sNIC room and 1024 B A flows that stay busy after the shift,
    the paper's Algorithm 2 does swap some flows (its line 15 needs |N| > M^sn).
    Returns the total throughput over the last period, how many B flows ended in
    hardware, and when the placement last changed after the shift."""
    rng = np.random.default_rng(seed)
    s = OffloadSystem(policy=policy, capacity=capacity, period_s=period_s)
    groups: dict[str, list[tuple[PofFt, TrafficFlow]]] = {"a": [], "b": []}
    n_a = n if n_a is None else n_a
    for g, base, count, size in (("a", 0x0B000000, n_a, a_bytes), ("b", 0x0C000000, n, 64)):
        for i in range(count):
            src = base + i
            ip = ".".join(str((src >> sh) & 255) for sh in (24, 16, 8, 0))
            ft = PofFt(f"{g}{i}", ((208, 32, src),), (SetField(PofField(240, 32), 0x0A020202), Output(5)),
                       frame_bytes=size)
            groups[g].append((ft, TrafficFlow(ft.id, ft.id, udp_frame(ip, "2.2.2.1", size), rng.uniform(0.8e6, 1.2e6))))
    light = {tf.name: rng.uniform(*a_light_pps) for _, tf in groups["a"]}
    flows: list[TrafficFlow] = []
    placements: list[tuple[float, frozenset]] = []

    def schedule(t, sys):
        if t == 0.0:
            for ft, tf in groups["a"]:
                # the controller announces the rate it provisions for (the decision module's input until counted)
                ft.rate_hint_pps = tf.rate_pps
                sys.add(ft)
                flows.append(tf)
        if abs(t - shift_at_s) < dt / 2:
            for _, tf in groups["a"]:
                tf.rate_pps = light[tf.name]
            for ft, tf in groups["b"]:
                sys.add(ft)
                flows.append(tf)

    def on_tick(t, sys, row):
        hw = frozenset(i for i, f in sys.fts.items() if f.in_hw)
        if not placements or placements[-1][1] != hw:
            placements.append((t, hw))

    rows = s.run(flows, until=duration_s, dt=dt, schedule=schedule, on_tick=on_tick)
    filled = [t for t, hw in placements if len(hw) == capacity and all(i.startswith("a") for i in hw)]
    last_change = placements[-1][0]
    tail = [r for r in rows if r["t"] >= duration_s - period_s]
    thr = statistics.fmean(r["hw_pps"] + r["kernel_pps"] for r in tail)
    return {"policy": policy, "throughput_pps": thr, "offered_pps": sum(tf.rate_pps for tf in flows),
            "a_filled_snic_at_s": filled[0] if filled else None,
            "b_in_hw": sum(1 for ft, _ in groups["b"] if s.fts[ft.id].in_hw),
            "converged_after_s": max(0.0, last_change - shift_at_s),
            "periods_to_converge": max(0.0, last_change - shift_at_s) / period_s,
            "revalidations": s.counters["revalidations"]}


# ------------------------------------------------------------------ decision time at scale
def decision_time(n: int = 1_000_000, capacity: int = 4800, runs: int = 3, seed: int = 1) -> dict:
    """Median time of one revalidation decision (exact flow replacement) over n POF-FTs
    held as the system's arrays (§VI random flows: 64–1024 B, 100–40,000 Mbps)."""
    rng = np.random.default_rng(seed)
    m = PathModel()
    size = rng.choice(np.array([64, 128, 256, 512, 1024]), size=n).astype(float)
    rate_pps = rng.uniform(100, 40000, size=n) * 1e6 / (size * 8)
    n_set = rng.integers(0, 3, size=n).astype(float)
    n_add = rng.integers(0, 2, size=n).astype(float)
    in_hw = np.zeros(n, dtype=bool)
    in_hw[:capacity] = True  # first come, first served before the first revalidation
    seen = np.zeros(n, dtype=bool)
    seen[: int(n * 0.6)] = True
    f = FlowArrays(rate_pps, size, n_set, n_add, in_hw, seen)
    ts = []
    x = None
    for _ in range(runs):
        t0 = time.perf_counter()
        x = decide_revalidate(f, "exact", m, capacity)
        ts.append(time.perf_counter() - t0)
    return {"flows": n, "median_s": statistics.median(ts), "offloaded": int(x.sum())}


def system_revalidation_time(n: int = 100_000, capacity: int = 4800, runs: int = 3, seed: int = 1) -> dict:
    """Median time of one revalidation of a running `OffloadSystem` holding n live
    POF-FTs (kernel pipeline rules, counters), after a period in which a third of the
    flows ran above the kernel knee. Includes reading the counters and the decision."""
    rng = np.random.default_rng(seed)
    s = OffloadSystem(policy="exact", capacity=capacity)
    t0 = time.perf_counter()
    s.add_batch(PofFt(f"f{i}", ((208, 32, i),), (Output(5),), frame_bytes=64) for i in range(n))
    install_s = time.perf_counter() - t0
    heavy = rng.random(n) < 1 / 3
    ts = []
    for _ in range(runs):
        s.cols["offered"][:] += np.where(heavy, 1e6, 1e3) * s.period_s
        t0 = time.perf_counter()
        s.revalidate()
        ts.append(time.perf_counter() - t0)
        s.advance(s.now + 0.05)
    return {"flows": n, "median_s": statistics.median(ts), "install_s": install_s,
            "in_hw": sum(1 for f in s.fts.values() if f.in_hw)}
