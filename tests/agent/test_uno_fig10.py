"""UNO Fig. 10 analogue (tandem.experiments.uno_fig10), quick: real emulator runs."""

import csv

import pytest

from tandem.experiments import uno_fig10


def test_quick_run_writes_csv_and_png_and_the_agent_saves_host_cores(tmp_path):
    r = uno_fig10.run(tmp_path, quick=True)
    rows = {row["gbps"]: row for row in r["rows"]}
    assert sorted(rows) == [1.0, 4.0, 10.0]
    with open(tmp_path / "data.csv") as f:
        assert [float(x["gbps"]) for x in csv.DictReader(f)] == [1.0, 4.0, 10.0]
    assert (tmp_path / "figure.png").stat().st_size > 10_000
    four = rows[4.0]
    assert four["label"] == "calibrated" and rows[1.0]["label"] == "predicted"
    # the calibration point comes back: 6 busy x86 cores host only, 8 TILE-Gx cores offloaded
    assert four["host_only_host_cores_used"] == pytest.approx(6.0, rel=0.02)
    assert four["agent_snic_cores_used"] == pytest.approx(8.0, rel=0.02)
    # the agent (starting host only, deciding on the run's telemetry) offloads both NFs
    for row in rows.values():
        assert row["agent_placement"] == "secgw1@snic0 l7fw1@snic0"
        assert row["agent_host_cores"] == 0
        assert row["host_only_host_cores"] >= row["host_only_host_cores_used"]
    assert four["agent_carries"] and four["host_cores_saved"] == four["host_only_host_cores"] >= 6
    # host-only cores grow with load
    assert rows[1.0]["host_only_host_cores"] < four["host_only_host_cores"] < rows[10.0]["host_only_host_cores"]
    # at 10 Gbps the sNIC's crypto engine saturates: no saving is claimed there
    assert not rows[10.0]["agent_carries"] and rows[10.0]["host_cores_saved"] is None
    assert "accelerator_queue_full" in rows[10.0]["agent_drops"]
    assert r["max_host_cores_saved"] == four["host_cores_saved"]
