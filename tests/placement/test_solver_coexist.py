"""The HiGHS adapter beside other highspy users in one process, and solver text
kept off stdout. Each check runs in a fresh interpreter: HiGHS's global thread
scheduler and its one-time banner are per process, and this pytest process has
already solved models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIG15 = ROOT / "examples" / "uno-fig15-dpi.yaml"
SMARTCHAIN = ROOT / "examples" / "smartchain-ids.yaml"

SCRIPT = r"""
import json, sys
import highspy

# An unrelated HiGHS user starts the process-wide scheduler with 2 threads first.
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.setOptionValue("threads", 2)
x = h.addVariable(0, 10)
y = h.addVariable(0, 10)
h.changeColsIntegrality(1, [0], [highspy.HighsVarType.kInteger])
h.addConstr(x + y <= 5.5)
h.maximize(x + 2 * y)
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal

from tandem.placement.uno.engine import solve_file as uno
from tandem.placement.smartchain.engine import solve_file as smartchain
from tandem.placement.pof.engine import solve_fp, solve_fr
from tandem.placement.pof.model import PofParams, random_fp, random_fr

out = {}
for m in ("fast", "milp"):
    r = uno(sys.argv[1], m)
    out["uno-" + m] = [r.status, r.objective]
for m in ("ilp", "decomposition"):
    r = smartchain(sys.argv[2], m)
    out["smartchain-" + m] = [r.status, r.objective]
p = PofParams(capacity=20)
r = solve_fp(random_fp(60, 1, p), "milp")
out["pof-fp-milp"] = [r.status, r.objective]
r = solve_fr(random_fr(40, 30, 1, p), "milp")
out["pof-fr-milp"] = [r.status, r.objective]
# the unrelated user can still solve afterwards
h.run()
out["other-after"] = [str(h.getModelStatus())]
print("RESULT " + json.dumps(out))
"""


def test_every_engine_after_an_unrelated_highspy_model():
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(FIG15), str(SMARTCHAIN)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(l for l in r.stdout.splitlines() if l.startswith("RESULT "))
    out = json.loads(line[len("RESULT "):])
    for key in ("uno-fast", "uno-milp", "smartchain-ilp", "smartchain-decomposition", "pof-fp-milp", "pof-fr-milp"):
        status, obj = out[key]
        assert status == "optimal" and obj is not None, (key, out[key])
    assert out["uno-fast"][1] == out["uno-milp"][1] or abs(out["uno-fast"][1] - out["uno-milp"][1]) <= 1e-9 * abs(
        out["uno-milp"][1])
    assert abs(out["smartchain-ilp"][1] - out["smartchain-decomposition"][1]) <= 1e-6 * max(
        1.0, abs(out["smartchain-ilp"][1]))
    assert out["other-after"] == ["HighsModelStatus.kOptimal"]


def test_place_json_is_pure_json_in_a_fresh_process():
    for args in (["uno", str(FIG15), "--method", "milp"], ["uno", str(FIG15)], ["smartchain", str(SMARTCHAIN)]):
        r = subprocess.run([sys.executable, "-c", "from tandem.cli import app; app()", "place", *args, "--json"],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stderr[-2000:]
        d = json.loads(r.stdout)  # the whole of stdout, no banner before it
        assert d["status"] == "optimal"
        assert "HiGHS" not in r.stdout
