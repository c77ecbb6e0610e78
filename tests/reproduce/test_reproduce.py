"""`tandem reproduce`: every experiment runs at its smallest size and shows the trend
its paper draws its conclusion from (checked on its data.csv, not only on its own
verdict); the paper values are complete data; report.html and docs are generated
from the summaries; the CLI lists, runs and refuses bad names."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.reproduce import report, runner
from tandem.reproduce.paper import PAPER_FILES, load_paper
from tandem.reproduce.registry import EXPERIMENTS, Experiment, by_name, select

NAMES = [e.name for e in EXPERIMENTS]


def rows(d: Path) -> list[dict]:
    with (d / "data.csv").open() as f:
        out = []
        for r in csv.DictReader(f):
            conv = {}
            for k, v in r.items():
                try:
                    conv[k] = float(v)
                except (TypeError, ValueError):
                    conv[k] = v
            out.append(conv)
        return out


def _by(rs, key):
    return {r[key]: r for r in rs}


# The paper's trend, checked on the data each experiment wrote.
def check_uno_fig2(rs):
    by = {(r["mode"], int(r["nfs"])): r for r in rs}
    assert by[("full_offload", 2)]["throughput_gbps"] < by[("no_offload", 2)]["throughput_gbps"]
    assert by[("full_offload", 3)]["throughput_gbps"] < by[("full_offload", 1)]["throughput_gbps"]
    assert by[("full_offload", 3)]["latency_us_p50"] > by[("no_offload", 3)]["latency_us_p50"]


def check_uno_fig10(rs):
    carried = [r for r in rs if r["agent_carries"] in (True, "True")]
    assert carried and all(r["agent_host_cores"] < r["host_only_host_cores"] for r in carried)
    host = [r["host_only_host_cores"] for r in rs]
    assert host == sorted(host) and host[-1] > host[0]  # host-only needs more cores as load grows


def check_uno_fig13(rs):
    main = sorted((r for r in rs if r["lanes"] != 1), key=lambda r: r["flows"])
    assert [r["flows"] for r in main] == [250, 500, 750, 1000]
    assert all(a["state_bytes"] < b["state_bytes"] for a, b in zip(main, main[1:]))
    assert all(a["migration_ms"] < b["migration_ms"] for a, b in zip(main, main[1:]))
    assert all(r["lost"] == 0 and r["duplicated"] == 0 and r["reordered"] == 0 for r in rs)


def check_uno_fig16(rs):
    host = [r["host_cores"] for r in rs]
    snic = [r["snic_cores"] for r in rs]
    assert all(a >= b - 1e-9 for a, b in zip(host, host[1:])) and host[0] > host[-1]
    assert all(a <= b + 1e-9 for a, b in zip(snic, snic[1:])) and max(snic) <= 36 + 1e-9
    assert rs[0]["T_gbps"] == 10 and rs[0]["offloaded_nfs"] < rs[-1]["offloaded_nfs"]


def check_uno_fig8(rs):
    by = _by(rs, "rules_on")
    assert by["HOST"]["host_switch_cores"] > by["HALF"]["host_switch_cores"] > by["sNIC"]["host_switch_cores"]
    assert by["HALF"]["host_switch_cores"] == pytest.approx(by["HOST"]["host_switch_cores"] / 2, rel=0.1)


def check_uno_fig11(rs):
    for t in ("l7fw", "secgw"):
        e = {on: [r["joule_per_gbit"] for r in rs if r["nf"] == t and r["on"] == on] for on in ("host", "snic")}
        assert min(e["host"]) > max(e["snic"])  # the sNIC spends less energy per bit at every load
        p = [r["power_increase_w"] for r in rs if r["nf"] == t and r["on"] == "host"]
        assert p == sorted(p)  # more traffic, more power


def check_uno_fig9(rs):
    by = {(int(r["packet_bytes"]), r["deployment"]): r["pcie_gbps"] / r["delivered_pkts"] for r in rs}
    big, small = max(k[0] for k in by), min(k[0] for k in by)
    assert by[(big, "qat")] > 2 * by[(big, "aesni")] and by[(big, "snic")] < by[(big, "aesni")]
    assert by[(small, "snic")] / by[(small, "aesni")] < by[(big, "snic")] / by[(big, "aesni")]


def check_uno_fig14(rs):
    by = {(r["setup"], r["load_gbps"]): r for r in rs}
    assert by[("uno_full", 1.0)]["latency_ms_mean"] > by[("host", 1.0)]["latency_ms_mean"]
    assert by[("uno_full", 1.0)]["host_cores_used"] == 0 < by[("uno_partial", 1.0)]["host_cores_used"]
    # switch offload crosses PCIe 7 times: more than the host-only setup (1 crossing)
    assert by[("switch_offload", 1.0)]["pcie_gbps"] > 5 * by[("host", 1.0)]["pcie_gbps"]


def check_uno_rules(rs):
    for r in rs:
        assert r["physical_rules"] > r["virtual_rules"]
        assert r["on_host"] > 0 and r["on_snic0"] > 0 and r["on_snic1"] > 0


def check_smartchain_fig5(rs):
    by = _by(rs, "method")
    assert by["SmartChain"]["pcie_transmissions"] == 2 and by["suitability-greedy"]["pcie_transmissions"] == 4
    assert "logger@snic" in by["sequential"]["order"]
    assert by["SmartChain"]["benefit_us"] > max(by["sequential"]["benefit_us"], by["suitability-greedy"]["benefit_us"])


def check_smartchain_fig8(rs):
    for r in rs:
        assert r["smartchain_k_us"] >= r["sequential_us"] - 1e-6 and r["smartchain_k_us"] >= r["greedy_us"] - 1e-6
    assert max(r["gain_vs_greedy_pct"] for r in rs) > 0


def check_smartchain_fig9(rs):
    assert all(r["median_s"] < 0.5 for r in rs if r["part"] == "a")
    assert _by([r for r in rs if r["part"] == "b"], "case")["10x10"]["median_s"] < 5


def check_smartchain_fig10(rs):
    for param in ("suitability", "capacity"):
        mean = {a: sum(r["mean"] for r in rs if r["parameter"] == param and r["algorithm"] == a) for a in
                ("smartchain", "sequential", "greedy")}
        assert mean["smartchain"] > mean["sequential"] and mean["smartchain"] > mean["greedy"]
    assert all(r["mean"] > 0.9 for r in rs if r["algorithm"] == "smartchain")


def check_smartchain_fig11(rs):
    for r in rs:
        if r["method"] == "SmartChain":
            same = [x["latency_us"] for x in rs if x["graph"] == r["graph"] and x["packet_bytes"] == r["packet_bytes"]]
            assert r["latency_us"] <= 1.02 * min(same)
    seq = {(r["graph"], r["packet_bytes"]): r["latency_us"] for r in rs if r["method"] == "sequential"}
    assert any(r["latency_us"] < 0.8 * seq[(r["graph"], r["packet_bytes"])] for r in rs if r["method"] == "SmartChain")


def check_smartchain_fig12(rs):
    gr = {(r["graph"], r["packet_bytes"]): r["throughput_gbps"] for r in rs if r["method"] == "suitability-greedy"}
    assert all(r["throughput_gbps"] >= 0.9 * gr[(r["graph"], r["packet_bytes"])] for r in rs if r["method"] == "SmartChain")
    sc = [r["throughput_gbps"] for r in rs if r["method"] == "SmartChain" and r["graph"] == "graph1"]
    assert sc[-1] > sc[0]  # larger packets, more Gb/s


def check_smartchain_fig13(rs):
    by = {(r["graph"], r["method"]): r for r in rs}
    for g in ("graph1", "graph2"):
        assert by[(g, "SmartChain")]["latency_us"] <= 1.02 * min(by[(g, m)]["latency_us"] for m in
                                                                  ("sequential", "suitability-greedy"))


def check_smartchain_eq9(rs):
    (r,) = rs
    assert r["measured_gbps"] == pytest.approx(r["eq9_gbps"], rel=0.05) and r["offered_gbps"] > r["eq9_gbps"]


def check_pof_fig5(rs):
    assert len(rs) == 8 and all(r["path"] == "hw" for r in rs)
    for r in rs:
        if r["src"] == "2.2.2.3":
            assert r["dst"] == "10.2.2.2" and r["length"] == 60
        else:
            assert r["length"] == 128 and r["inserted"] == "0a0a0908"


def check_pof_fig6(rs):
    by = _by(rs, "flow")
    assert by["out"]["latency_us"] > 5 * max(by["set"]["latency_us"], by["add"]["latency_us"])
    assert by["set"]["in_hw"] == "True" and by["out"]["in_hw"] == "False"


def check_pof_fig7(rs):
    v = [r["throughput_mpps"] for r in rs]
    half = len(v) // 2
    before, after = sorted(v[: half - 5])[half // 2], sorted(v[half + 50:])[(len(v) - half - 50) // 2]
    assert after < before and min(v) > 0.9 * after  # lower, never interrupted


def check_pof_fig8(rs):
    add = [r["offload_ms"] for r in rs]
    assert max(add) - min(add) < 1.0 and len(rs) >= 3


def check_pof_fig9(rs):
    assert all(r["offload_on_mpps"] > r["offload_off_mpps"] for r in rs)
    add = [r for r in rs if r["action"] == "add"]
    assert add[-1]["offload_off_mpps"] < 0.5 * add[0]["offload_off_mpps"]


def check_pof_fig10(rs):
    lat = {round(r["offered_mpps"], 3): r["latency_us"] for r in rs}
    assert lat[0.447] < 1000 < lat[0.596]  # the knee lies between 0.447 and 0.596 Mpps
    assert max(r["throughput_mpps"] for r in rs) == pytest.approx(0.534, rel=0.03)


def _check_table(rs):
    for r in rs:
        assert r["exact_obj_us"] <= r["heuristic_obj_us"] + 1e-6
        if r["milp_obj_us"] != "":
            assert r["exact_obj_us"] <= r["milp_obj_us"] + 1e-6
            assert r["heuristic_obj_us"] <= 1.05 * r["milp_obj_us"]
    big = rs[-1]
    assert big["heuristic_time_s"] < big["milp_time_s"]


check_pof_table2 = check_pof_table3 = _check_table


def check_fairnic_fig10(rs):
    for r in rs:
        assert r["ovs1_isolated_gbps"] == pytest.approx(r["ovs1_alone_gbps"], rel=0.05)
        assert r["ovs1_non_isolated_gbps"] == pytest.approx(r["ovs2_non_isolated_gbps"], rel=0.15)
        assert r["ovs1_non_isolated_gbps"] < 0.8 * r["ovs1_alone_gbps"]


def check_fairnic_fig11(rs):
    by = _by(rs, "config")
    assert by["isolated"]["gbps"] >= 0.95 * by["alone"]["gbps"]
    assert by["non_isolated"]["gbps"] < 0.5 * by["alone"]["gbps"]
    assert by["non_isolated"]["mean_latency_us"] > 10 * by["isolated"]["mean_latency_us"]


def check_fairnic_fig12(rs):
    for r in rs:
        assert r["ovs1_non_isolated_gbps"] < 0.8 * r["ovs1_alone_gbps"]
        assert r["ovs1_isolated_gbps"] >= 0.9 * r["ovs1_alone_gbps"]


CHECKS = {n[len("check_"):]: f for n, f in dict(globals()).items() if n.startswith("check_")}


def test_every_experiment_has_a_trend_check_and_paper_values():
    assert set(NAMES) <= set(CHECKS), f"experiments without a trend check: {set(NAMES) - set(CHECKS)}"
    for e in EXPERIMENTS:
        pe = load_paper(e.paper).experiments[e.name]
        assert pe.claim and pe.cite and pe.figure
        assert pe.values, e.name
        for v in pe.values:
            assert v.cite and (v.value is not None or v.text), (e.name, v.key)


@pytest.mark.parametrize("name", NAMES)
def test_experiment_runs_small_and_shows_the_papers_trend(name, tmp_path):
    s = runner.run_one(name, tmp_path, quick=True)
    d = tmp_path / name
    assert s["error"] is None, (d / "error.txt").read_text() if (d / "error.txt").exists() else s["error"]
    assert (d / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((d / "summary.json").read_text())["verdict"] == s["verdict"]
    CHECKS[name](rows(d))
    assert s["trend"]["ok"] is True, s["trend"]["says"]
    assert s["verdict"] in (runner.REPRODUCED, runner.TREND)
    for r in s["values"]:
        if r["verdict"] == "differs":
            assert r["why"] and r["why"] != "no reason known", (name, r["key"])


def test_paper_files_load_and_every_yaml_experiment_is_known_or_left_to_the_lead():
    yaml_names = {n for p in PAPER_FILES for n in load_paper(p).experiments}
    # uno_fig10 / uno_fig13 are the NF agent's and the migration's (added to the registry with them)
    assert yaml_names - set(NAMES) <= {"uno_fig10", "uno_fig13"}


def test_verdicts_follow_the_rules():
    from tandem.reproduce.paper import PaperValue
    pv = PaperValue(key="x", what="x", value=10.0, cite="§1", label="predicted", tolerance=0.1)
    assert runner.judge_value(pv, 10.5, None)["verdict"] == "match"
    bad = runner.judge_value(pv, 12.0, "because")
    assert bad["verdict"] == "differs" and bad["why"] == "because"
    cal = PaperValue(key="y", what="y", value=1.0, cite="§2", label="calibrated")
    assert runner.judge_value(cal, 1.0, None)["verdict"] == "calibrated"
    assert runner.verdict(False, [runner.judge_value(pv, 10.0, None)]) == runner.NOT
    assert runner.verdict(True, [runner.judge_value(pv, 10.0, None)]) == runner.REPRODUCED
    assert runner.verdict(True, [bad]) == runner.TREND
    assert runner.verdict(True, [runner.judge_value(cal, 1.0, None)]) == runner.TREND  # calibrated proves nothing


def test_an_experiment_that_raises_is_an_error_verdict_and_the_rest_still_run(tmp_path, monkeypatch):
    from tandem.reproduce import registry
    boom = Experiment("uno_fig2", "uno", "Fig. 2", "x", 1, 1, "tandem.reproduce.exp_uno:no_such_function")
    monkeypatch.setattr(registry, "EXPERIMENTS", (boom,))
    monkeypatch.setattr(runner, "by_name", lambda: {"uno_fig2": boom})
    s = runner.run_one("uno_fig2", tmp_path)
    assert s["verdict"] == runner.ERROR and "no_such_function" in s["error"]
    assert (tmp_path / "uno_fig2" / "error.txt").exists()


def test_report_and_docs_are_generated_from_the_summaries(tmp_path):
    names = ["smartchain_fig5", "pof_fig9"]
    ss = runner.run_many(names, tmp_path, quick=True, jobs=2)
    assert [s["name"] for s in ss] == names
    page = report.write_html(ss, tmp_path, "test").read_text()
    assert page.count("data:image/png;base64,") == 2 and "<img" in page and "src=\"http" not in page
    for s in ss:
        assert f"id='{s['name']}'" in page and s["verdict"] in page
    md = report.write_markdown(ss, tmp_path / "reproduction.md", "tandem reproduce all --update-docs").read_text()
    table = [ln for ln in md.splitlines() if ln.startswith("| `")]
    assert len(table) == 2 and "generated by" in md.splitlines()[0]
    assert "4.78 x (calibrated" in md  # a paper value is shown with its label


def test_select_names_and_unknown_ones():
    assert [e.name for e in select(["all"])] == NAMES
    assert [e.name for e in select(["pof_fig9", "uno_fig2"])] == ["uno_fig2", "pof_fig9"]
    with pytest.raises(Exception, match="unknown experiment.*nope"):
        select(["nope"])
    assert by_name()["uno_fig2"].paper == "uno"


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tandem.cli", "reproduce", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


def test_cli_lists_runs_and_refuses_bad_input(tmp_path):
    r = _cli("--list")
    assert r.returncode == 0 and all(n in r.stdout for n in NAMES)
    r = _cli("no_such_figure", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown experiment(s) no_such_figure" in r.stderr
    r = _cli("pof_fig9")
    assert r.returncode == 2 and "--out" in r.stderr
    r = _cli("pof_fig9", "smartchain_fig5", "--out", str(tmp_path), "--quick", "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "report.html").is_file() and (tmp_path / "pof_fig9" / "summary.json").is_file()
    assert "report:" in r.stdout


def test_docs_reproduction_md_has_a_row_per_experiment():
    md = (Path(__file__).resolve().parents[2] / "docs" / "reproduction.md").read_text()
    assert md.startswith("<!-- generated by `tandem reproduce all --update-docs`")
    rows = [ln.split("|")[1].strip().strip("`") for ln in md.splitlines() if ln.startswith("| `")]
    assert rows == NAMES, "docs/reproduction.md is stale: run `tandem reproduce all --quick --update-docs`"


def test_a_plain_dict_experiment_is_compared_by_key_and_gets_a_fallback_figure(tmp_path, monkeypatch):
    """How the NF agent's Figs. 10/13 plug in: run(out_dir, quick) -> any dict that
    writes data.csv; numbers named like the paper's keys are compared, bars drawn."""
    from tandem.reproduce import registry

    def fake_fig13(out: Path, quick: bool = False) -> dict:
        (out / "data.csv").write_text("flows,state_mb\n750,1.3\n1000,1.9\n")
        return {"state_mb_750": 1.3, "state_mb_1000": 1.9, "other": "ignored"}
    exp = Experiment("uno_fig13", "uno", "Fig. 13", "migration", 1, 1, "x:fake")
    monkeypatch.setattr(runner, "by_name", lambda: {"uno_fig13": exp})
    monkeypatch.setattr(runner, "_resolve", lambda target: fake_fig13)
    s = runner.run_one("uno_fig13", tmp_path, quick=True)
    vals = {r["key"]: r for r in s["values"]}
    assert vals["state_mb_750"]["verdict"] == "match" and vals["state_mb_1000"]["ours"] == 1.9
    assert vals["latency_increase_ms"]["verdict"] == "not measured"
    assert s["trend"]["ok"] is None and s["verdict"] == runner.UNCHECKED
    assert (tmp_path / "uno_fig13" / "figure.png").read_bytes()[:4] == b"\x89PNG"
    assert registry.EXPERIMENTS  # the real registry is untouched
