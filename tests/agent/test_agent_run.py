"""`tandem run` with run.agent: the loop is driven by the real emulator's telemetry.
The emulator's own NF migration lives elsewhere, so the machine here is the real one
with `advance` and a `migrate` that only records the request."""

import json
from pathlib import Path

import pytest
import yaml

import tandem.emu.run as run_mod
from tandem.model.load import parse_scenario_text

SDWAN = Path(__file__).resolve().parents[2] / "examples" / "uno-sdwan.yaml"


class Recording:
    """A real Machine plus advance (run_until) and a migrate that records the call."""

    def __init__(self, m, horizon_s):
        self._m, self.calls, self._h = m, [], horizon_s

    def __getattr__(self, name):
        return getattr(self._m, name)

    def advance(self, until_s):
        self._m.emu.set_horizon(self._h * 1e9)
        self._m.emu.run_until(until_s * 1e9)

    def migrate(self, nf, to_device, at_s):
        self.calls.append((nf, to_device, at_s))


def scenario(d_cores=12):
    data = yaml.safe_load(SDWAN.read_text())
    data["placement"]["uno"].pop("edges")  # derived from the chain and both sources
    data["placement"]["uno"]["snic_capacity_cores"] = {"snic0": d_cores}
    data["traffic"]["surge"] = {"target": "sdwan", "bandwidth": "4Gbps", "packet_size": "1280B", "flows": 1000,
                                "start": "50ms"}
    data["run"].update({"duration": "100ms", "agent": {"period": "10ms", "smoothing": 1.0}})
    return parse_scenario_text(yaml.safe_dump(data))


def test_run_agent_records_decisions_on_real_telemetry(tmp_path, monkeypatch):
    made = []
    real = run_mod.build_from_scenario

    def build(sc, **kw):
        m, b = real(sc, **kw)
        made.append(Recording(m, sc.run.duration))
        return made[-1], b

    monkeypatch.setattr(run_mod, "build_from_scenario", build)
    # the engine, counting both sources (8 Gbps), would start L7FW on the host; start it on the sNIC
    from tandem.placement.from_scenario import Decision

    start = Decision("pinned", {"secgw1": "snic0", "l7fw1": "snic0"})
    res = run_mod.run_scenario(scenario(), tmp_path, decision=start)
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    agent = on_disk["agent"]
    assert res["agent"] == agent
    assert res["placement"] == {"l7fw1": "snic0", "secgw1": "snic0"}
    ds = agent["decisions"]
    assert [d["time_s"] for d in ds] == pytest.approx([0.01 * k for k in range(1, 10)])
    # 4 Gbps measured before the surge, 8 Gbps after (1280 B frames, from the emulator's counters)
    assert ds[2]["traffic_gbps"]["secgw1->l7fw1"] == pytest.approx(4.0, rel=0.02)
    assert ds[7]["traffic_gbps"]["secgw1->l7fw1"] == pytest.approx(8.0, rel=0.02)
    # at 8 Gbps the chain needs 16 sNIC cores > D = 12: L7FW goes to the host, once
    moved = [d for d in ds if d["moves"]]
    assert len(moved) == 1 and moved[0]["moves"] == [{"nf": "l7fw1", "from": "snic0", "to": "host"}]
    assert 0.05 < moved[0]["time_s"] <= 0.07
    assert made[0].calls == [("l7fw1", "host", pytest.approx(moved[0]["time_s"]))]
    assert agent["migrations"] == 1 and agent["final_placement"] == {"l7fw1": "host", "secgw1": "snic0"}
    assert on_disk["duration_s"] == pytest.approx(0.1)  # the run still ends where it should
    assert on_disk["flows"]["wan-in"]["tx_packets"] > 0


def test_run_agent_moves_the_nf_for_real_with_no_loss(tmp_path):
    """The same ramp on the real machine: the agent's move is a real migration
    (Machine.migrate), recorded in metrics.json, with nothing lost or duplicated."""
    from tandem.placement.from_scenario import Decision

    start = Decision("pinned", {"secgw1": "snic0", "l7fw1": "snic0"})
    res = run_mod.run_scenario(scenario(), tmp_path, decision=start)
    agent = res["agent"]
    moved = [d for d in agent["decisions"] if d["moves"]]
    assert len(moved) == 1 and moved[0]["moves"] == [{"nf": "l7fw1", "from": "snic0", "to": "host"}]
    assert agent["final_placement"] == {"l7fw1": "host", "secgw1": "snic0"}
    migs = res["migrations"]
    assert len(migs) == 1
    mig = migs[0]
    assert mig["nf"] == "l7fw1" and mig["to"] == "host"
    assert mig["start_s"] == pytest.approx(moved[0]["time_s"])
    assert mig["lost"] == 0 and mig["duplicated"] == 0 and mig["reordered"] == 0
    assert res["flows"]["wan-in"]["tx_packets"] > 0
