"""Decision module and offload revalidator of OVS-POF-TC (§III-B 2–3), as pure functions.

What: given the POF-FTs the switch holds (as arrays: measured packet rate, frame size,
SetField/AddField counts, in_hw flag, "present at the last revalidation" flag) and the
sNIC's POF-FT memory, say which POF-FTs must be in hardware.
  * on install (`decide_install`): the flow-placement problem (FP, eqs. 2–16);
  * every revalidation period (`decide_revalidate`): flow replacement (FR, eqs. 17–31),
    the flows present at the previous revalidation being N (with z = in_hw) and the
    ones installed since being N^nw.
Policies: "exact" (the O(n) optimal algorithm of `placement.pof.exact`), "heuristic"
(the paper's Algorithms 1 and 2), "fifo" (first come, first served until the sNIC is
full; never replaces — the conventional scheme the paper argues against) and
"actions" (the rule of the §IV-A2 experiment: offload every POF-FT with a SetField or
AddField while there is room, in arrival order).
State: none. Cost: O(n) numpy work for exact/fifo/actions; the heuristic is the
paper's O(|B| n).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tandem.placement.pof.exact import solve_fp as exact_fp, solve_fr as exact_fr
from tandem.placement.pof.heuristic import heuristic_fp, heuristic_fr
from tandem.placement.pof.model import Flows, FpInstance, FrInstance, PofParams

from .timemodel import PathModel

POLICIES = ("exact", "heuristic", "fifo", "actions")


class PolicyError(ValueError):
    pass


@dataclass(frozen=True)
class FlowArrays:
    """One entry per POF-FT, in arrival order."""

    rate_pps: np.ndarray  # measured (or announced) offered packet rate
    frame_bytes: np.ndarray
    n_set: np.ndarray
    n_add: np.ndarray
    in_hw: np.ndarray  # bool, current placement z
    seen: np.ndarray  # bool, present at the previous revalidation (FR's N)

    def __len__(self) -> int:
        return int(self.rate_pps.shape[0])


def pof_params(model: PathModel, capacity: int, fixed_costs: str = "per_flow") -> PofParams:
    return PofParams(tau1_us=model.tau1_s * 1e6, tau2_us=model.tau2_s * 1e6, tau3_us=model.tau3_s * 1e6,
                     tau_add_us=model.tau_add_s * 1e6, tau_del_us=model.tau_del_s * 1e6,
                     capacity=int(capacity), fixed_costs=fixed_costs)


def kernel_pps(model: PathModel, n_set: np.ndarray, n_add: np.ndarray) -> np.ndarray:
    """C^kr per flow in packets/s (vectorised `PathModel.kernel_pps`)."""
    from .timemodel import SW_ADDFIELD_S, SW_SETFIELD_S
    return 1.0 / (1.0 / model.kernel_knee_pps + n_set * SW_SETFIELD_S + n_add * SW_ADDFIELD_S)


def engine_flows(f: FlowArrays, model: PathModel, sel: np.ndarray | slice = slice(None)) -> Flows:
    """The engine's view: C_i and C_i^kr in Mbps (eq. 1 compares them)."""
    bits = f.frame_bytes[sel] * 8.0 / 1e6
    return Flows(f.rate_pps[sel] * bits, kernel_pps(model, f.n_set[sel], f.n_add[sel]) * bits)


def _fifo(f: FlowArrays, capacity: int, eligible: np.ndarray) -> np.ndarray:
    x = f.in_hw.copy()
    room = capacity - int(x.sum())
    if room > 0:
        cand = np.flatnonzero(eligible & ~x)[:room]
        x[cand] = True
    return x


def decide_install(f: FlowArrays, policy: str, model: PathModel, capacity: int,
                   fixed_costs: str = "per_flow") -> np.ndarray:
    """Placement after a POF-FT was installed (it is the last entry): bool mask in_hw."""
    if policy == "fifo":
        return _fifo(f, capacity, np.ones(len(f), dtype=bool))
    if policy == "actions":
        return _fifo(f, capacity, (f.n_set + f.n_add) > 0)
    inst = FpInstance(engine_flows(f, model), pof_params(model, capacity, fixed_costs))
    if policy == "exact":
        return exact_fp(inst).offload
    if policy == "heuristic":
        return heuristic_fp(inst)
    raise PolicyError(f"unknown offload policy {policy!r}; choose one of {', '.join(POLICIES)}")


def decide_revalidate(f: FlowArrays, policy: str, model: PathModel, capacity: int,
                      fixed_costs: str = "per_flow") -> np.ndarray:
    """Placement after a revalidation period (flow replacement): bool mask in_hw."""
    if policy == "fifo":
        return _fifo(f, capacity, np.ones(len(f), dtype=bool))
    if policy == "actions":
        return _fifo(f, capacity, (f.n_set + f.n_add) > 0)
    params = pof_params(model, capacity, fixed_costs)
    allf = engine_flows(f, model)
    if f.seen.all():  # steady state: no gathers
        old, new = slice(None), slice(0, 0)
    else:
        old, new = np.flatnonzero(f.seen), np.flatnonzero(~f.seen)
    inst = FrInstance(Flows(allf.rate_mbps[old], allf.kernel_mbps[old]), f.in_hw[old],
                      Flows(allf.rate_mbps[new], allf.kernel_mbps[new]), params)
    if policy == "exact":
        a = exact_fr(inst)
        xe, xw = a.offload_existing, a.offload_new
    elif policy == "heuristic":
        xe, xw = heuristic_fr(inst)
    else:
        raise PolicyError(f"unknown offload policy {policy!r}; choose one of {', '.join(POLICIES)}")
    x = np.zeros(len(f), dtype=bool)
    x[old] = xe
    x[new] = xw
    return x
