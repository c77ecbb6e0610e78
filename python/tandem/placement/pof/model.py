"""OVS-POF-TC offload problems: parameters, flow sets, objective evaluation.

Inputs: flows as numpy arrays (sending rate C_i and kernel-path throughput
C_i^kr in Mbps), the latency model of the paper's eq. (1) (tau1 on the sNIC,
tau2 in the kernel when C_i <= C_i^kr, tau3 in the kernel when overloaded), the
fixed latencies of one offload batch (tau_add) and one removal batch (tau_del),
and the sNIC table capacity M^sn. State: none; all types are frozen.
Cost: evaluating an objective is O(n) numpy work.

Two problems (OVS-POF-TC §V-A):
  * flow placement (FP, eqs. 2-16): choose x_i for the flows N, minimise
    gamma*tau_add + sum T_i with sum x_i <= M^sn;
  * flow replacement (FR, eqs. 17-31): existing flows N with their current
    placement z_i plus new flows N^nw; minimise gamma*tau_add + xi*tau_del +
    sum T_i, where (as the paper defines them) gamma = 1 iff a *new* flow is
    offloaded and xi = 1 iff fewer existing flows stay offloaded than before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tandem.placement.errors import PlacementInputError

# Kernel data path of OVS-POF-TC saturates at 0.534 Mpps (paper §IV-B, Fig. 10).
KERNEL_PPS = 0.534e6
PACKET_SIZES = (64, 128, 256, 512, 1024)


class PofInputError(PlacementInputError):
    """Bad POF input; the message names the field (and file) that is wrong."""


@dataclass(frozen=True)
class PofParams:
    """Latency model and capacity. Defaults from the paper: tau1 ~4 us (sNIC),
    tau2 ~50 us (kernel, not overloaded), tau3 ~7 ms (kernel, overloaded),
    tau_add 22.5 ms, tau_del 25.3 ms, M^sn = 4,800 POF-FTs."""

    tau1_us: float = 4.0
    tau2_us: float = 50.0
    tau3_us: float = 7000.0
    tau_add_us: float = 22500.0
    tau_del_us: float = 25300.0
    capacity: int = 4800
    # FR fixed costs: "paper" = eqs. (21)-(22) (tau_add iff a new flow is
    # offloaded, tau_del iff fewer existing flows stay offloaded); "per_flow" =
    # tau_add iff any flow not on the sNIC before is offloaded, tau_del iff any
    # flow on the sNIC before is removed (what the revalidator actually does).
    fixed_costs: str = "paper"

    def __post_init__(self) -> None:
        if self.fixed_costs not in ("paper", "per_flow"):
            raise PofInputError(f"params.fixed_costs: must be 'paper' or 'per_flow', got {self.fixed_costs!r}")
        for name in ("tau1_us", "tau2_us", "tau3_us", "tau_add_us", "tau_del_us"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise PofInputError(f"params.{name}: must be a finite number >= 0, got {v!r}")
        if int(self.capacity) != self.capacity or self.capacity < 0:
            raise PofInputError(f"params.capacity: must be a whole number >= 0, got {self.capacity!r}")


def kernel_throughput_mbps(packet_bytes: np.ndarray | int, kernel_pps: float = KERNEL_PPS) -> np.ndarray:
    """C^kr for a flow of the given packet size: the kernel path's packet rate
    times the packet size (0.534 Mpps x 64 B = 273 Mbps ... x 1024 B = 4,375 Mbps)."""
    return np.asarray(packet_bytes, dtype=np.float64) * 8.0 * kernel_pps / 1e6


@dataclass(frozen=True)
class Flows:
    """n flows: sending rate and kernel-path throughput (both Mbps); `ids`
    optional (None means "f0", "f1", ... on output)."""

    rate_mbps: np.ndarray
    kernel_mbps: np.ndarray
    ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        r = np.ascontiguousarray(self.rate_mbps, dtype=np.float64)
        k = np.ascontiguousarray(self.kernel_mbps, dtype=np.float64)
        object.__setattr__(self, "rate_mbps", r)
        object.__setattr__(self, "kernel_mbps", k)
        if r.ndim != 1 or r.shape != k.shape:
            raise PofInputError("flows: rate_mbps and kernel_mbps must be 1-D arrays of equal length")
        if self.ids is not None and len(self.ids) != len(r):
            raise PofInputError("flows: ids must have one entry per flow")

    def __len__(self) -> int:
        return int(self.rate_mbps.shape[0])

    def overloaded(self) -> np.ndarray:
        """C_i > C_i^kr: in the kernel the flow would see tau3 instead of tau2."""
        return self.rate_mbps > self.kernel_mbps

    def name(self, i: int, prefix: str = "f") -> str:
        return self.ids[i] if self.ids is not None else f"{prefix}{i}"


def kernel_latency(flows: Flows, p: PofParams) -> np.ndarray:
    """T_i when flow i stays in the kernel (eq. 1)."""
    return np.where(flows.overloaded(), p.tau3_us, p.tau2_us)


def offload_benefit(flows: Flows, p: PofParams) -> np.ndarray:
    """Latency saved by offloading flow i: kernel T_i - tau1."""
    return kernel_latency(flows, p) - p.tau1_us


@dataclass(frozen=True)
class FpInstance:
    flows: Flows
    params: PofParams = field(default_factory=PofParams)


@dataclass(frozen=True)
class FrInstance:
    existing: Flows
    offloaded: np.ndarray  # z_i: bool per existing flow
    new: Flows
    params: PofParams = field(default_factory=PofParams)

    def __post_init__(self) -> None:
        z = np.ascontiguousarray(self.offloaded, dtype=bool)
        object.__setattr__(self, "offloaded", z)
        if z.shape != (len(self.existing),):
            raise PofInputError("existing: `offloaded` must have one entry per existing flow")
        if int(z.sum()) > self.params.capacity:
            raise PofInputError(
                f"existing: {int(z.sum())} flows are marked offloaded but the sNIC holds only "
                f"params.capacity = {self.params.capacity} POF-FTs")


def fp_objective(inst: FpInstance, x: np.ndarray) -> float:
    """Eq. (2) for offload mask x; raises if x breaks eq. (3)."""
    x = np.asarray(x, dtype=bool)
    p = inst.params
    k = int(x.sum())
    if k > p.capacity:
        raise ValueError(f"eq. (3) violated: {k} flows offloaded > M^sn = {p.capacity}")
    t = np.where(x, p.tau1_us, kernel_latency(inst.flows, p))
    return float(t.sum()) + (p.tau_add_us if k > 0 else 0.0)


def fr_objective(inst: FrInstance, x_existing: np.ndarray, x_new: np.ndarray) -> float:
    """Eq. (17) with gamma and xi as eqs. (21)-(22) define them (or per flow,
    see `PofParams.fixed_costs`)."""
    xe = np.asarray(x_existing, dtype=bool)
    xn = np.asarray(x_new, dtype=bool)
    p = inst.params
    total = int(xe.sum()) + int(xn.sum())
    if total > p.capacity:
        raise ValueError(f"eq. (18) violated: {total} flows offloaded > M^sn = {p.capacity}")
    t = float(np.where(xe, p.tau1_us, kernel_latency(inst.existing, p)).sum())
    t += float(np.where(xn, p.tau1_us, kernel_latency(inst.new, p)).sum())
    z = inst.offloaded
    if p.fixed_costs == "per_flow":
        added, removed = bool(xn.any() or (xe & ~z).any()), bool((z & ~xe).any())
    else:
        added, removed = bool(xn.any()), int(xe.sum()) < int(z.sum())
    return t + (p.tau_add_us if added else 0.0) + (p.tau_del_us if removed else 0.0)


# ------------------------------------------------------------- random instances

def random_flows(n: int, rng: np.random.Generator, rate_range_mbps: tuple[float, float] = (100.0, 40000.0),
                 sizes: tuple[int, ...] = PACKET_SIZES) -> Flows:
    """The paper's simulation flows (§VI): packet size uniform over `sizes`,
    sending rate uniform in [100, 40,000] Mbps."""
    size = rng.choice(np.asarray(sizes), size=n)
    rate = rng.uniform(rate_range_mbps[0], rate_range_mbps[1], size=n)
    return Flows(rate, kernel_throughput_mbps(size))


def random_fp(n: int, seed: int, params: PofParams | None = None) -> FpInstance:
    return FpInstance(random_flows(n, np.random.default_rng(seed)), params or PofParams())


def random_fr(n_existing: int, n_new: int, seed: int, params: PofParams | None = None) -> FrInstance:
    """Existing flows were offloaded first-come-first-serve (the conventional
    scheme the paper improves on): the first min(M^sn, |N|) in arrival order."""
    p = params or PofParams()
    rng = np.random.default_rng(seed)
    ex = random_flows(n_existing, rng)
    z = np.zeros(n_existing, dtype=bool)
    z[: min(p.capacity, n_existing)] = True
    return FrInstance(ex, z, random_flows(n_new, rng), p)
