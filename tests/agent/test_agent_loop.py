"""The agent's loop (tandem.agent.emu_loop) over a fake machine whose counters follow a
load profile, and its wiring into `tandem run` (run.agent)."""

import json

import pytest
from agent_fakes import FakeMachine, sdwan

from tandem.agent.core import AgentPolicy
from tandem.agent.emu_loop import run_agent
from tandem.placement.from_scenario import decide


def ramp(t):  # 1 -> 10 Gbps over the 2 s run
    return 1.0 + 9.0 * min(t, 2.0) / 2.0


def test_loop_replaces_as_load_ramps_and_calls_migrate_at_the_period():
    sc = sdwan(d_cores=16, agent="{period: 100ms, smoothing: 1.0}")
    start = decide(sc).placement
    fm = FakeMachine(ramp, start)
    log = run_agent(sc, fm, start, 2.0)
    assert fm.advanced == pytest.approx([0.1 * k for k in range(1, 20)])  # every period before the end
    assert fm.migrations == [("l7fw1", "host", pytest.approx(fm.migrations[0][2]))]
    nf, to, at = fm.migrations[0]
    # measured load over the period ending at `at` is the ramp's mean over it
    mean = (ramp(at - 0.1) + ramp(at)) / 2
    assert mean > 8.0 and (ramp(at - 0.2) + ramp(at - 0.1)) / 2 <= 8.0
    assert log["migrations"] == 1 and log["final_placement"] == {"l7fw1": "host", "secgw1": "snic0"}
    rec = next(d for d in log["decisions"] if d["moves"])
    assert rec["time_s"] == pytest.approx(at)
    assert rec["moves"] == [{"nf": "l7fw1", "from": "snic0", "to": "host"}]
    assert rec["traffic_gbps"]["secgw1->l7fw1"] == pytest.approx(mean, rel=1e-2)
    assert rec["objective_now"] == 0.0 and rec["objective_target"] > 0
    assert len(log["decisions"]) == 19 and all(d["reason"] for d in log["decisions"])
    assert log["policy"]["period_s"] == pytest.approx(0.1)
    json.dumps(log)  # metrics.json-ready


def test_loop_does_not_flap_on_an_oscillating_load():
    sc = sdwan(d_cores=16, agent="{period: 100ms}")
    start = decide(sc).placement
    osc = lambda t: 8.0 * (1.1 if int(t * 10 + 1e-6) % 2 else 0.9)  # ±10 % per period
    for smoothing in (1.0, 0.5):
        fm = FakeMachine(osc, start)
        run_agent(sc, fm, start, 4.0, AgentPolicy(smoothing=smoothing))
        assert len(fm.migrations) <= 1, fm.migrations
    fm = FakeMachine(osc, start)
    run_agent(sc, fm, start, 4.0, AgentPolicy(smoothing=1.0, headroom=0.0, dwell_s=0.0, rel_threshold=0.0,
                                              abs_threshold=0.0, move_cost=0.0))
    assert len(fm.migrations) >= 30  # undamped, it flaps


def test_overloaded_nf_drops_count_as_load():
    # 7 Gbps offered but l7fw1 processes only 60 %: the agent must still see 7 Gbps into it.
    sc = sdwan(d_cores=16, agent="{period: 100ms, smoothing: 1.0}")
    start = decide(sc).placement
    fm = FakeMachine(lambda t: 7.0, start, drop_share=0.4)
    log = run_agent(sc, fm, start, 0.3)
    tm = log["decisions"][0]["traffic_gbps"]
    assert tm["secgw1->l7fw1"] == pytest.approx(7.0, rel=1e-3)
    assert tm["l7fw1->vm1"] == pytest.approx(4.2, rel=1e-3)


def test_policy_comes_from_the_scenario():
    sc = sdwan(agent="{period: 50ms, headroom: 0.3, dwell: 2s, rel_threshold: 0.2}")
    p = AgentPolicy.from_settings(sc.run.agent)
    assert (p.period_s, p.headroom, p.dwell_s, p.rel_threshold) == (0.05, 0.3, 2.0, 0.2)
    assert sdwan(agent="{}").run.agent.period == 0.1


def test_bad_agent_settings_name_the_field():
    from tandem.model.load import ScenarioError

    with pytest.raises(ScenarioError, match=r"run\.agent\.headroom"):
        sdwan(agent="{headroom: -1}")
    with pytest.raises(ScenarioError, match=r"run\.agent\.policy"):
        sdwan(agent="{policy: greedy}")


def test_loop_waits_while_a_migration_runs_and_keeps_run_pins():
    sc = sdwan(d_cores=16, agent="{period: 100ms, smoothing: 1.0}")
    start = decide(sc).placement
    # each migration takes 250 ms: the two periods after the move only record that they wait
    fm = FakeMachine(ramp, start, migration_s=0.25)
    log = run_agent(sc, fm, start, 2.5)
    i = next(k for k, d in enumerate(log["decisions"]) if d["moves"])
    assert [d["reason"].startswith("waiting") for d in log["decisions"][i + 1:i + 4]] == [True, True, False]
    assert len(fm.migrations) == 1
    # with L7FW fixed on the sNIC by the run (--place), the ramp moves nothing: no placement fits at 10 Gbps
    fm = FakeMachine(ramp, start)
    log = run_agent(sc, fm, start, 2.0, pins={"l7fw1": "snic0"})
    assert fm.migrations == []
    assert any("no placement fits" in d["reason"] for d in log["decisions"])
