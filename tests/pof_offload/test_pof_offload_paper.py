"""OVS-POF-TC §IV on the emulated system: Figs. 6, 7, 9 and 10 (time model:
calibrated constants in `timemodel.py`; the asserted figures are predictions
unless the test says "calibrated")."""

import pytest

from tandem.pof_offload import experiments as E
from tandem.pof_offload import timemodel as T


def test_fig6_offloaded_flows_4us_kernel_flow_about_55us():
    r = E.fig6()
    assert r["in_hw"] == {"set": True, "add": True, "out": False}
    assert r["set"] == pytest.approx(4e-6) and r["add"] == pytest.approx(4e-6)  # tau1, calibrated
    # predicted: tau2 + M/D/1 wait at the assumed 0.3 Mpps (paper: 55.04 us)
    assert 50e-6 < r["out"] < 60e-6
    assert r["host_cpu_packets_of_offloaded_fts"] == 0


def test_fig6_kernel_latency_grows_with_the_kernel_load():
    assert E.fig6(rate_pps=0.1e6)["out"] < E.fig6(rate_pps=0.45e6)["out"]


def test_fig7_hitless_update_no_gap_no_loss_no_half_rule():
    r = E.fig7(update_at_s=1.0, duration_s=2.0)
    assert r["in_hw"]
    assert r["lost_packets"] == 0
    # 29.76 Mpps offered vs 28.64 / 26.65 served: the excess is dropped before and after alike
    exp = (r["offered_pps"] - r["before_pps"]) * 1.0 + (r["offered_pps"] - r["after_pps"]) * 1.0
    assert r["overcapacity_drops"] == pytest.approx(exp, rel=0.05)
    s = r["samples"]
    assert s["lost"] == 0 and s["other"] == 0 and s["old"] > 0 and s["new"] > 0  # every packet: whole old or new rule
    assert r["before_pps"] == pytest.approx(28.64e6, rel=1e-6)  # calibrated (Fig. 7)
    assert r["after_pps"] == pytest.approx(26.65e6, rel=1e-6)  # calibrated (Fig. 7)
    assert r["min_pps"] >= r["after_pps"] * 0.999  # no gap at any tick
    # the throughput switches once, tau_add after the update, and stays
    ts = [t for (t, v), (_, w) in zip(r["series"], r["series"][1:]) if abs(v - w) > 1]
    assert len(ts) == 1 and 1.0 < ts[0] + 1e-3 <= 1.0 + T.TAU_ADD_S + 2e-3


def test_fig9_trend_and_averages():
    r = E.fig9()
    for kind in ("set", "add"):
        rows = r[kind]["rows"]
        on = [x[1] for x in rows]
        off = [x[2] for x in rows]
        ratio = [x[3] for x in rows]
        assert on == sorted(on, reverse=True) and off == sorted(off, reverse=True)
        assert ratio == sorted(ratio)  # offload pays more with more actions
        assert (on[0] - on[-1]) / on[0] < (off[0] - off[-1]) / off[0]  # sNIC much less sensitive
    assert r["set"]["max_ratio"] == pytest.approx(1.94) and r["set"]["avg_ratio"] == pytest.approx(1.52)  # calibrated
    assert r["add"]["max_ratio"] == pytest.approx(4.78)  # calibrated
    assert r["add"]["avg_ratio"] == pytest.approx(3.28, rel=0.1)  # predicted (paper 3.28)
    # AddField throughputs of the sNIC path ~ SetField ones; software ones drop (Fig. 9a vs 9b)
    assert r["add"]["rows"][2][1] == pytest.approx(r["set"]["rows"][2][1])
    assert r["add"]["rows"][2][2] < r["set"]["rows"][2][2]


def test_fig10_kernel_knee():
    pts = E.fig10(duration_s=1.0)
    lo, hi = E.knee(pts)
    assert 0.447 <= lo and hi <= 0.596
    by_rate = {round(r, 3): (thr, lat) for r, thr, lat in pts}
    assert by_rate[0.447][1] < 100 and by_rate[0.596][1] == pytest.approx(7000, rel=0.05)
    assert max(thr for _, thr, _ in pts) == pytest.approx(0.534, rel=1e-3)  # calibrated knee
    lats = [lat for _, _, lat in pts]
    assert lats == sorted(lats)
