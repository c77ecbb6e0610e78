"""Decision module and offload revalidator: policies, capacity, convergence, and the
adaptive-vs-FIFO workload (OVS-POF-TC §III-B, §V)."""

import numpy as np
import pytest

from tandem.pof_offload import experiments as E
from tandem.pof_offload.decision import FlowArrays, PolicyError, decide_install, decide_revalidate
from tandem.pof_offload.system import OffloadSystem, PofFt, PofOffloadError, TrafficFlow
from tandem.pof_offload.timemodel import PathModel
from tandem.rules.ir import Output, PofAddField, PofField, SetField


def _arrays(rates, in_hw=None, seen=None, n_set=None):
    n = len(rates)
    return FlowArrays(np.asarray(rates, float), np.full(n, 64.0), np.asarray(n_set if n_set is not None else [1] * n, float),
                      np.zeros(n), np.asarray(in_hw if in_hw is not None else [False] * n, bool),
                      np.asarray(seen if seen is not None else [False] * n, bool))


def test_fifo_fills_in_arrival_order_and_never_replaces():
    m = PathModel()
    x = decide_install(_arrays([1e3, 2e6, 3e6, 1e3]), "fifo", m, capacity=2)
    assert x.tolist() == [True, True, False, False]
    x = decide_revalidate(_arrays([1e3, 1e3, 3e6, 3e6], in_hw=[True, True, False, False], seen=[True] * 4), "fifo", m, 2)
    assert x.tolist() == [True, True, False, False]


def test_exact_picks_the_overloaded_flows_within_capacity():
    m = PathModel()
    rates = [1e3] * 5 + [1e6] * 5  # the last five exceed the kernel knee
    x = decide_install(_arrays(rates), "exact", m, capacity=4)
    assert int(x.sum()) == 4 and not x[:5].any()
    # replacement, light flows on the sNIC and heavy ones new: 4 swaps save 4 x (7000 - 4) us,
    # less than tau_add + tau_del = 47,800 us -> kept; 8 swaps save more -> swapped
    x = decide_revalidate(_arrays(rates, in_hw=[True] * 4 + [False] * 6, seen=[True] * 5 + [False] * 5), "exact", m, 4)
    assert x[:4].all() and not x[4:].any()
    rates = [1e3] * 10 + [1e6] * 10
    x = decide_revalidate(_arrays(rates, in_hw=[True] * 8 + [False] * 12, seen=[True] * 10 + [False] * 10), "exact", m, 8)
    assert x[10:].sum() == 8 and not x[:10].any()
    # a few light flows alone are not worth tau_add (eq. 2)
    assert not decide_install(_arrays([1e3] * 3), "exact", m, capacity=4).any()


def test_actions_policy_is_the_fig6_rule():
    x = decide_install(_arrays([0, 0, 0], n_set=[1, 0, 2]), "actions", PathModel(), capacity=10)
    assert x.tolist() == [True, False, True]


def test_unknown_policy_is_a_precise_error():
    with pytest.raises(PolicyError, match="unknown offload policy 'lru'"):
        OffloadSystem(policy="lru")


def test_offload_and_removal_latencies_and_capacity():
    s = OffloadSystem(policy="actions", capacity=1)
    s.add(PofFt("a", ((208, 32, 1),), (SetField(PofField(240, 32), 5), Output(5))))
    s.add(PofFt("b", ((208, 32, 2),), (PofAddField(112, 32, 7), Output(5))))
    assert not s.fts["a"].in_hw  # the offload batch takes tau_add (Fig. 8)
    s.advance(s.model.tau_add_s - 1e-4)
    assert not s.fts["a"].in_hw
    s.advance(s.model.tau_add_s)
    assert s.fts["a"].in_hw and not s.fts["b"].in_hw  # sNIC memory holds one POF-FT
    s.delete("a")  # frees the slot; b is offloaded after tau_add
    s.advance(s.now + s.model.tau_add_s)
    assert s.fts["b"].in_hw and "a" not in s.fts
    with pytest.raises(PofOffloadError, match="no POF-FT 'zz'"):
        s.delete("zz")
    with pytest.raises(PofOffloadError, match="output port 9"):
        s.add(PofFt("c", ((208, 32, 3),), (Output(9),)))
    with pytest.raises(PofOffloadError, match="exists already"):
        s.add(PofFt("b", ((208, 32, 3),), (Output(5),)))


def test_revalidator_runs_every_period_and_removal_takes_tau_del():
    s = OffloadSystem(policy="exact", capacity=8, period_s=0.5)
    frames = []
    for i in range(8):
        s.add(PofFt(f"f{i}", ((208, 32, 0x0B000000 + i),), (Output(5),), frame_bytes=64))
        frames.append(TrafficFlow(f"f{i}", f"f{i}", E.udp_frame(f"11.0.0.{i}", "2.2.2.1", 64), 1e6))
    rows = s.run(frames, until=1.2, dt=5e-3)
    assert s.counters["revalidations"] == 2  # at 0.5 s and 1.0 s
    assert all(ft.in_hw for ft in s.fts.values())  # 8 flows above the knee: offloaded at the 0.5 s revalidation
    assert rows[-1]["hw_pps"] == pytest.approx(8e6)
    for f in frames:
        f.rate_pps = 1e3
    s.run(frames, until=2.0, dt=5e-3)  # revalidation at 1.5 s sees only light flows
    hw = [ft.in_hw for ft in s.fts.values()]
    # removing costs tau_del and saves nothing under eq. 17 -> the exact FR keeps them
    assert all(hw)


def test_adaptive_beats_fifo_and_heuristic_and_converges_within_two_periods():
    ex, ff, he = (E.adaptive(p) for p in ("exact", "fifo", "heuristic"))
    for r in (ex, ff, he):
        assert r["a_filled_snic_at_s"] is not None and r["a_filled_snic_at_s"] < 0.1  # light-to-be flows filled it
    assert ex["b_in_hw"] == 20 and ff["b_in_hw"] == 0
    assert ex["throughput_pps"] > 10 * ff["throughput_pps"]
    assert ex["throughput_pps"] > 10 * he["throughput_pps"]
    assert ex["throughput_pps"] == pytest.approx(ex["offered_pps"], rel=1e-6)
    assert 0 < ex["periods_to_converge"] <= 2.0


def test_batch_install_and_revalidation_on_the_running_system_use_the_columns():
    r = E.system_revalidation_time(n=20_000, capacity=300, runs=2)
    assert r["in_hw"] == 300  # a third of 20,000 flows are above the knee: the sNIC is filled with them
    assert r["median_s"] < 1.0  # one period (loose: the machine is shared; the bench prints the figure)


def test_delete_of_a_pending_offload_cancels_it():
    s = OffloadSystem(policy="actions", capacity=2)
    s.add(PofFt("a", ((208, 32, 1),), (SetField(PofField(240, 32), 5), Output(5))))
    s.delete("a")
    s.advance(1.0)
    assert s.fts == {} and s.snic.n_rules == 1  # only the table-miss rule to the host


def test_heuristic_policy_swaps_when_algorithm_2_applies():
    # more flows on the sNIC side than room (|N| > M^sn, Alg. 2 line 15) and the new heavy
    # flows counted as new at the first revalidation after the shift: Alg. 2 swaps them in
    kw = dict(n_a=30, a_bytes=1024, a_light_pps=(0.1e6, 0.4e6), shift_at_s=2.02)
    he, ff = E.adaptive("heuristic", **kw), E.adaptive("fifo", **kw)
    assert he["b_in_hw"] == 20 and ff["b_in_hw"] == 0
    assert he["throughput_pps"] > 3 * ff["throughput_pps"]
    assert he["periods_to_converge"] <= 2.0


def test_offload_never_exceeds_the_snic_memory_even_if_a_batch_races_a_removal():
    s = OffloadSystem(policy="fifo", capacity=1)
    s.add(PofFt("a", ((208, 32, 1),), (Output(5),)))
    s.advance(0.1)
    assert s.fts["a"].in_hw
    # force an offload batch while the sNIC is full and no removal is pending
    from tandem.pof_offload.system import Pending
    s.add(PofFt("b", ((208, 32, 2),), (Output(5),)))
    s.cols["target"][s.fts["b"].slot] = True
    s.pending.append(Pending(s.now + 0.01, "offload", ("b",)))
    s.advance(0.2)
    assert not s.fts["b"].in_hw and s.counters["offloads_refused_full"] == 1
    assert sum(f.in_hw for f in s.fts.values()) == 1 and s.snic.n_rules == 2
