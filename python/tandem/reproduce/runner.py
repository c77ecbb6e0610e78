"""Run experiments and judge them against the paper: DIR/NAME/summary.json.

``run_one`` runs one experiment in this process and writes its summary; ``run_many``
runs several, in ``jobs`` worker processes when jobs > 1, reporting each finished
experiment through a callback (the CLI's progress bar). An experiment that raises is
recorded with verdict ``error`` and its one-line message; the others still run.

Verdicts. A paper value is ``calibrated`` when a model constant was solved from it
(matching it shows nothing), ``match`` when our number is within its tolerance,
``differs`` otherwise (with the reason), ``not measured`` when we have no number.
An experiment is ``reproduced`` (trend holds, every predicted number matches),
``trend reproduced`` (trend holds, some numbers differ or the paper gives none),
``not reproduced`` (the paper's trend does not hold in Tandem), ``trend not checked``
(the experiment returned numbers only) or ``error``.
"""

from __future__ import annotations

import importlib
import json
import math
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from tandem.reproduce.paper import load_paper, paper_experiment
from tandem.reproduce.registry import Experiment, by_name

REPRODUCED = "reproduced"
TREND = "trend reproduced"
NOT = "not reproduced"
ERROR = "error"
UNCHECKED = "trend not checked"  # an experiment that returns numbers but no trend verdict


def _resolve(target: str) -> Callable:
    mod, _, fn = target.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _generic_adapt(result: dict, keys: list[str]) -> dict:
    ours = {k: result[k] for k in keys if isinstance(result.get(k), (int, float))}
    return {"ours": ours, "trend": {"ok": None, "says": "trend not checked by this experiment"}}


def judge_value(v, ours: float | None, reason: str | None) -> dict:
    row = {"key": v.key, "what": v.what, "paper": v.value, "paper_text": v.text, "unit": v.unit, "cite": v.cite,
           "label": v.label, "ours": ours, "why": None}
    if v.label == "input":
        row["verdict"] = "input"
    elif v.label == "calibrated":
        row["verdict"] = "calibrated"
        row["why"] = "a model constant was set from this number, so matching it is no evidence"
    elif ours is None or (isinstance(ours, float) and math.isnan(ours)):
        row["verdict"] = "not measured"
        row["why"] = reason or v.differs_because or "Tandem has no measurement for it"
    elif v.value is None:
        row["verdict"] = "see trend"
    elif abs(ours - v.value) <= v.tolerance * abs(v.value) + 1e-12:
        row["verdict"] = "match"
    else:
        row["verdict"] = "differs"
        row["why"] = reason or v.differs_because or "no reason known"
    return row


def verdict(trend_ok: bool | None, rows: list[dict]) -> str:
    if trend_ok is False:
        return NOT
    if trend_ok is None:
        return UNCHECKED
    predicted = [r for r in rows if r["label"] == "predicted" and r["paper"] is not None]
    if predicted and all(r["verdict"] == "match" for r in predicted):
        return REPRODUCED
    return TREND


def summarize(exp: Experiment, result: dict | None, seconds: float, quick: bool, error: str | None = None) -> dict:
    paper = load_paper(exp.paper)
    pe = paper_experiment(exp.paper, exp.name)
    if result is not None and exp.adapt:
        result = _resolve(exp.adapt)(result)
    elif result is not None and "ours" not in result:
        result = _generic_adapt(result, [v.key for v in pe.values])
    ours = (result or {}).get("ours", {})
    reasons = (result or {}).get("reasons", {})
    rows = [judge_value(v, ours.get(v.key), reasons.get(v.key)) for v in pe.values]
    trend = (result or {}).get("trend", {"ok": None, "says": ""})
    return {
        "name": exp.name, "paper": exp.paper, "paper_short": paper.short, "paper_title": paper.title, "venue": paper.venue,
        "figure": pe.figure, "shows": exp.shows, "claim": pe.claim, "cite": pe.cite, "hardware": pe.hardware,
        "quick": quick, "seconds": round(seconds, 2),
        "verdict": ERROR if error else verdict(trend.get("ok"), rows),
        "trend": trend, "values": rows, "notes": (result or {}).get("notes", ""), "error": error,
    }


def _fallback_figure(summary: dict, path: Path) -> None:
    """Bars of the paper's numbers beside ours, for experiments that draw no figure."""
    from tandem.reproduce import plot
    rows = [r for r in summary["values"] if r["paper"] is not None]
    plot.paper_vs_ours_bars(rows, f"{summary['paper_short']} {summary['figure']}", path)


def run_one(name: str, out: Path, quick: bool = False) -> dict:
    exp = by_name()[name]
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result = error = None
    try:
        result = _resolve(exp.target)(d, quick=quick)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # recorded, the other experiments still run
        error = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        (d / "error.txt").write_text(traceback.format_exc())
    s = summarize(exp, result, time.perf_counter() - t0, quick, error)
    if error is None and not (d / "figure.png").exists():
        try:
            _fallback_figure(s, d / "figure.png")
        except Exception as e:  # a missing picture is reported, not fatal
            s["notes"] = (s["notes"] + f" (no figure: {e})").strip()
    (d / "summary.json").write_text(json.dumps(s, indent=2, default=float) + "\n")
    return s


def _child(name: str, out: str, quick: bool) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    return run_one(name, Path(out), quick)


def run_many(names: list[str], out: Path, quick: bool = False, jobs: int = 1,
             on_start: Callable[[str], None] | None = None,
             on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """Run the experiments; summaries come back in the order given."""
    out.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict] = {}
    if jobs <= 1:
        for n in names:
            if on_start:
                on_start(n)
            done[n] = _child(n, str(out), quick)
            if on_done:
                on_done(done[n])
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed
        # longest first, so the last worker is not left with the longest experiment
        reg = by_name()
        order = sorted(names, key=lambda n: -(reg[n].quick_seconds if quick else reg[n].seconds))
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            futs = {}
            for n in order:
                futs[pool.submit(_child, n, str(out), quick)] = n
                if on_start:
                    on_start(n)
            for f in as_completed(futs):
                s = f.result()
                done[futs[f]] = s
                if on_done:
                    on_done(s)
    return [done[n] for n in names]


def load_summaries(out: Path, names: list[str]) -> list[dict]:
    """The summaries a run left in ``out`` (in the order given), skipping absent ones."""
    res = []
    for n in names:
        p = out / n / "summary.json"
        if p.is_file():
            res.append(json.loads(p.read_text()))
    return res
