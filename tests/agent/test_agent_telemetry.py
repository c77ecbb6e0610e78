"""The NF-level traffic matrix from two metrics snapshots (tandem.agent.telemetry)."""

import pytest

from tandem.agent.telemetry import Counters, TelemetryError, counters, summary, traffic_matrix

SHAPE = [("snic0.eth0", "secgw1", 4e9), ("secgw1", "l7fw1", 4e9), ("l7fw1", "vm1", 4e9)]


def snap(t, pk, nf=None, drops=None, size=1000):
    nf = nf or {}
    return {"duration_s": t, "flows": {"a": {"tx_packets": pk, "tx_bytes": pk * size}},
            "nfs": {n: {"packets": v} for n, v in nf.items()}, "drops_by_place": drops or {}}


def test_rates_follow_the_counters_of_the_period():
    prev = counters(snap(0.1, 1000, {"secgw1": 1000, "l7fw1": 1000}))
    cur = counters(snap(0.2, 126000, {"secgw1": 126000, "l7fw1": 126000}))
    m = traffic_matrix(SHAPE, prev, cur, 4e9)
    # 125,000 packets of 1000 B in 0.1 s = 10 Gbps on every hop
    for k in [("snic0.eth0", "secgw1"), ("secgw1", "l7fw1"), ("l7fw1", "vm1")]:
        assert m[k] == pytest.approx(10e9)
    assert summary(m)["secgw1->l7fw1"] == pytest.approx(10.0)


def test_a_saturated_nf_shows_its_offered_load_not_its_capacity():
    drops = {"nf:l7fw1": {"core_queue_full": 50000}}
    cur = counters(snap(0.1, 100000, {"secgw1": 100000, "l7fw1": 50000}, drops))
    m = traffic_matrix(SHAPE, Counters(0.0), cur, 4e9)
    assert m[("secgw1", "l7fw1")] == pytest.approx(8e9)  # processed 50k + dropped 50k at it
    assert m[("l7fw1", "vm1")] == pytest.approx(4e9)  # what it processed


def test_edges_share_an_nf_by_their_configured_weights_and_plain_edges_scale():
    shape = [("a.eth0", "fw", 3e9), ("b.eth0", "fw", 1e9), ("a.eth1", "vm1", 2e9)]
    cur = counters(snap(1.0, 500000, {"fw": 500000}))  # 4 Gbps at 1000 B
    m = traffic_matrix(shape, Counters(0.0), cur, 4e9)
    assert m[("a.eth0", "fw")] == pytest.approx(3e9)
    assert m[("b.eth0", "fw")] == pytest.approx(1e9)
    assert m[("a.eth1", "vm1")] == pytest.approx(2e9)  # 4/4 of its configured rate


def test_bad_snapshots_are_named():
    with pytest.raises(TelemetryError, match="duration_s"):
        counters({"flows": {}})
    with pytest.raises(TelemetryError, match="advance time"):
        traffic_matrix(SHAPE, Counters(0.2), Counters(0.2), 1e9)
