"""DIR/report.html and docs/reproduction.md from the experiments' summaries.

The HTML page is self-contained: every figure is inlined as a base64 PNG, the style
is inline, and one small script marks the page when every image has decoded
(``data-images-ok``) or a script error happened (``data-js-error``), which the
browser check in benches/reproduce_report.py reads. The markdown file is generated
(its first line says so) with one row per experiment: paper says / Tandem measures /
verdict / why different. Pure apart from reading PNGs and writing the two files.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

VERDICT_COLOUR = {"reproduced": "#1a7f37", "trend reproduced": "#9a6700", "not reproduced": "#cf222e",
                  "error": "#cf222e"}


def fmt(x) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        ax = abs(x)
        if ax != 0 and (ax >= 1e5 or ax < 1e-3):
            return f"{x:.3g}"
        if float(x).is_integer():
            return f"{int(x):,}"
        return f"{x:.3g}" if ax < 10 else f"{x:,.1f}"
    return str(x)


def paper_says(s: dict) -> str:
    parts = []
    for r in s["values"]:
        if r["label"] == "input":
            continue
        val = fmt(r["paper"]) if r["paper"] is not None else (r["paper_text"] or "")
        parts.append(f"{r['what']}: {val} {r['unit']}".strip() + f" ({r['label']}, {r['cite']})")
    return "; ".join(parts) if parts else s["claim"]


def tandem_says(s: dict) -> str:
    if s["error"]:
        return f"error: {s['error']}"
    parts = [f"{r['what']}: {fmt(r['ours'])} {r['unit']}".strip() for r in s["values"]
             if r["label"] != "input" and r["ours"] is not None]
    trend = s["trend"].get("says") or ""
    return "; ".join(parts + ([trend] if trend else []))


def why_different(s: dict) -> str:
    by_text: dict[str, list[str]] = {}
    for r in s["values"]:
        if r["verdict"] in ("differs", "not measured") and r["why"]:
            by_text.setdefault(r["why"], []).append(r["key"])
    whys = [f"{', '.join(keys)}: {text}" for text, keys in by_text.items()]
    if s["hardware"]:
        whys.append(f"hardware: {' '.join(s['hardware'].split())}")
    return "; ".join(whys)


def _img(path: Path) -> str:
    if not path.is_file():
        return '<p class="missing">no figure</p>'
    b64 = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.parent.name)}" src="data:image/png;base64,{b64}">'


CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px;color:#1f2328}
table{border-collapse:collapse;font-size:13px;width:100%}td,th{border:1px solid #d0d7de;padding:4px 6px;vertical-align:top}
th{background:#f6f8fa}.v{font-weight:600;white-space:nowrap}section{margin-top:2em;border-top:1px solid #d0d7de}
img{max-width:100%;border:1px solid #eee}.small{font-size:12px;color:#57606a}.missing{color:#cf222e}
"""

CHECK_JS = """
window.addEventListener('error',function(){document.body.setAttribute('data-js-error','1')});
window.addEventListener('load',function(){var imgs=document.images,ok=true;
for(var i=0;i<imgs.length;i++){if(!imgs[i].complete||imgs[i].naturalWidth===0){ok=false}}
document.body.setAttribute('data-images',String(imgs.length));
document.body.setAttribute('data-images-ok',ok?'1':'0');});
"""


def write_html(summaries: list[dict], out: Path, meta: str = "") -> Path:
    rows, sections = [], []
    for s in summaries:
        col = VERDICT_COLOUR.get(s["verdict"], "#57606a")
        rows.append(
            f"<tr><td><a href='#{s['name']}'>{html.escape(s['name'])}</a></td>"
            f"<td>{html.escape(s['paper_short'])} {html.escape(s['figure'])}</td>"
            f"<td>{html.escape(paper_says(s))}</td><td>{html.escape(tandem_says(s))}</td>"
            f"<td class='v' style='color:{col}'>{html.escape(s['verdict'])}</td>"
            f"<td>{html.escape(why_different(s))}</td></tr>")
        vals = "".join(
            f"<tr><td>{html.escape(r['what'])}</td><td>{fmt(r['paper']) if r['paper'] is not None else html.escape(r['paper_text'] or '')}"
            f" {html.escape(r['unit'])}</td><td>{fmt(r['ours'])}</td><td>{r['label']}</td><td>{html.escape(r['verdict'])}</td>"
            f"<td>{html.escape(r['cite'])}</td><td>{html.escape(r['why'] or '')}</td></tr>" for r in s["values"])
        sections.append(
            f"<section id='{s['name']}'><h2>{html.escape(s['name'])} — {html.escape(s['paper_short'])} "
            f"{html.escape(s['figure'])}</h2><p>{html.escape(s['shows'])}</p>"
            f"<p><b>Paper ({html.escape(s['cite'])}):</b> {html.escape(' '.join(s['claim'].split()))}</p>"
            f"<p><b>Tandem:</b> {html.escape(s['trend'].get('says') or '')} — <span class='v' style='color:{col}'>"
            f"{html.escape(s['verdict'])}</span></p>"
            + (f"<p class='small'>Not modelled: {html.escape(' '.join(s['hardware'].split()))}</p>" if s["hardware"] else "")
            + (f"<p class='small'>{html.escape(s['notes'])}</p>" if s["notes"] else "")
            + (f"<p class='missing'>{html.escape(s['error'])}</p>" if s["error"] else "")
            + f"<table><tr><th>value</th><th>paper</th><th>Tandem</th><th>label</th><th>verdict</th><th>cited</th>"
              f"<th>why different</th></tr>{vals}</table>"
            + _img(out / s["name"] / "figure.png") + "</section>")
    counts = {}
    for s in summaries:
        counts[s["verdict"]] = counts.get(s["verdict"], 0) + 1
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Tandem reproduction report</title>"
        f"<style>{CSS}</style><script>{CHECK_JS}</script></head><body>"
        "<h1>Tandem: the papers' figures, reproduced</h1>"
        f"<p class='small'>{html.escape(meta)} — " + ", ".join(f"{v}: {n}" for v, n in sorted(counts.items()))
        + "</p><p class='small'>calibrated = a model constant was set from the paper's number (matching it shows "
        "nothing); predicted = nothing was fitted to it.</p>"
        "<table><tr><th>experiment</th><th>figure</th><th>paper says</th><th>Tandem measures</th><th>verdict</th>"
        f"<th>why different</th></tr>{''.join(rows)}</table>{''.join(sections)}</body></html>")
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _md(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def write_markdown(summaries: list[dict], path: Path, command: str) -> Path:
    lines = [
        "<!-- generated by `tandem reproduce all --update-docs`; do not edit by hand -->",
        "# Reproduction of the papers' figures",
        "",
        f"Generated by `{command}` from the experiments' `summary.json` files; the paper's values come from "
        "`python/tandem/reproduce/papers/*.yaml`, each citing its section or figure. *calibrated*: a model "
        "constant was set from that number (matching it is no evidence); *predicted*: nothing was fitted to it. "
        "`tandem reproduce --list` lists the experiments; `tandem reproduce NAME --out DIR` runs one and writes "
        "`DIR/NAME/data.csv`, `figure.png`, `summary.json` and `DIR/report.html`.",
        "",
        "| experiment | figure | paper says | Tandem measures | verdict | why different |",
        "|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(f"| `{s['name']}` | {_md(s['paper_short'])} {_md(s['figure'])} | {_md(paper_says(s))} "
                     f"| {_md(tandem_says(s))} | **{s['verdict']}** | {_md(why_different(s))} |")
    lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
