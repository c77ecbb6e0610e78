"""The demo summary: what it shows for each example (rendered to text)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tandem.model import load_scenario
from tandem.model.summary import offload_estimate, summarize

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def render(name: str) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=200)
    for part in summarize(load_scenario(EXAMPLES / name)):
        console.print(part)
    return buf.getvalue()


def test_large_instance_lists_are_grouped():
    out = render("uno-fig15-dpi.yaml")
    assert "dpi1, dpi2 … dpi18 (18)" in out and "vm1, vm2 … vm9 (9)" in out
    assert "T = 10 Gbps, D = 36 cores" in out


def test_sdwan_summary_shows_the_link_breakdown_and_estimate():
    out = render("uno-sdwan.yaml")
    assert "26 µs" in out and "fpc_ehi 5 µs + sriov 15 µs + pcie 2 µs + cpu 4 µs" in out
    assert "4 × 10 Gbps ports" in out and "crypto accelerator mica: 40 Gbps" in out


def test_estimate_needs_ratios_on_every_nf():
    (sc,) = offload_estimate(load_scenario(EXAMPLES / "smartchain-ids.yaml"))
    assert sc.host_cores is None and sc.snic_cores is None
    assert "Static load estimate" not in render("smartchain-ids.yaml")
