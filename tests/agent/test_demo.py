"""`tandem demo --story` (what `make demo` runs): the ramp, the agent's move, the report."""

import base64
import csv
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from tandem.agent.demo import run_demo
from tandem.cli import app

ROOT = Path(__file__).resolve().parents[2]
STORY = ROOT / "examples" / "demo-sdwan-ramp.yaml"


def test_story_ramps_moves_l7fw_once_without_loss_and_writes_the_report(tmp_path):
    report = run_demo(STORY, tmp_path, live=False)
    assert report == tmp_path / "report.html"
    res = json.loads((tmp_path / "metrics.json").read_text())
    assert res["decision"]["placement"] == {"l7fw1": "snic0", "secgw1": "snic0"}  # UNO at the first site's 1 Gbps
    migs = res["migrations"]
    assert [(m["nf"], m["from"], m["to"]) for m in migs] == [("l7fw1", "snic0", "host")]
    assert migs[0]["lost"] == migs[0]["duplicated"] == migs[0]["reordered"] == 0
    assert res["agent"]["final_placement"] == {"l7fw1": "host", "secgw1": "snic0"}
    # the traffic is live ESP: the real SECGW decrypted every frame that reached it, the L7FW named the flows
    sgw, fw = res["nf_counters"]["secgw1"], res["nf_counters"]["l7fw1"]
    assert sgw["decrypted"] == sgw["packets"] > 500_000
    assert sgw["auth_failed"] == sgw["replayed"] == sgw["too_old"] == 0
    assert 0.99 * sgw["decrypted"] < fw["packets"] <= sgw["decrypted"]  # the rest is in flight to the host at the end
    assert fw["detected_tls"] > fw["detected_http"] > 500
    # only flows whose first packets the saturated crypto engine dropped stay unnamed
    assert 0 < res["drops"]["accelerator_queue_full"] and fw["undetected"] < 0.05 * (fw["detected_tls"] + fw["detected_http"])
    with (tmp_path / "timeline.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 21  # every 50 ms before the 1.1 s end
    offered = [float(r["offered_gbps"]) for r in rows]
    assert offered[0] < 1.2 and offered[-1] > 9.5 and offered == sorted(offered)
    before = [r for r in rows if float(r["time_ms"]) <= migs[0]["start_s"] * 1e3]
    after = [r for r in rows if float(r["time_ms"]) > migs[0]["start_s"] * 1e3 + 60]
    assert all(float(r["host_cores"]) == 0 for r in before) and all(float(r["host_cores"]) > 0 for r in after)
    # the move happens when the chain no longer fits the sNIC's 12-core NF budget (2 cores/Gbps, headroom 15 %)
    assert 5.0 <= float(before[-1]["offered_gbps"]) <= 7.5
    page = report.read_text()
    img = re.search(r'src="data:image/png;base64,([^"]+)"', page)
    assert img and base64.b64decode(img.group(1))[:8] == b"\x89PNG\r\n\x1a\n"
    assert "l7fw1" in page and "snic0 → host" in page
    assert "ESP frames decrypted and authenticated" in page and "auth_failed 0, replayed 0" in page


def test_demo_story_command(tmp_path):
    r = CliRunner().invoke(app, ["demo", "--story", "--out", str(tmp_path / "d")], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    assert "report: " in r.output and (tmp_path / "d" / "report.html").exists()
    assert "migrations: 1 (l7fw1→host@" in r.output
    assert "(SECGW):" in r.output and "(L7FW):" in r.output


def test_demo_story_needs_an_agent(tmp_path):
    r = CliRunner().invoke(app, ["demo", "--story", str(ROOT / "examples" / "uno-sdwan.yaml"),
                                 "--out", str(tmp_path / "d")])
    assert r.exit_code == 2 and "run.agent" in r.output and "Traceback" not in r.output
