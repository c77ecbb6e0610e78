"""`tandem pof run|add|del|dump` over a scenario run, and precise errors."""

import json
from pathlib import Path

from typer.testing import CliRunner

from tandem.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pof_offload" / "fig4.yaml"
runner = CliRunner()


def _blocks(text):
    return {b.split("handle ")[1].split("\n")[0]: b for b in text.split("filter protocol")[1:]}


def test_run_add_del_dump(tmp_path):
    run = tmp_path / "run"
    r = runner.invoke(app, ["pof", "run", str(EXAMPLE), "-o", str(run)])
    assert r.exit_code == 0, r.output
    b = _blocks(r.output)
    assert set(b) == {"ft1", "ft2"} and all("\n  in_hw" in x for x in b.values())
    # 3000 pps x 0.5 s: all packets counted, most of them on the sNIC (the first tau_add in the kernel)
    hw = int(b["ft1"].split("pkt (sNIC")[0].split()[-1])
    kr = int(b["ft1"].split("pkt (kernel")[0].split()[-1])
    assert 1400 <= hw + kr <= 1510 and hw > 10 * kr
    r = runner.invoke(app, ["pof", "add", str(run), "--id", "ft3", "--match", "208/32=0x02020209",
                            "--actions", "add_field:112/32=0x01020304,output:5"])
    assert r.exit_code == 0, r.output
    b = _blocks(r.output)
    assert "\n  in_hw" in b["ft3"] and "add_field:112/32=0x01020304,output:5" in b["ft3"]
    r = runner.invoke(app, ["pof", "del", str(run), "ft1"])
    assert r.exit_code == 0 and set(_blocks(r.output)) == {"ft2", "ft3"}
    r = runner.invoke(app, ["pof", "dump", str(run)])
    assert r.exit_code == 0 and set(_blocks(r.output)) == {"ft2", "ft3"}
    state = json.loads((run / "state.json").read_text())
    assert [f["id"] for f in state["pof_fts"]] == ["ft2", "ft3"]


def test_errors_are_one_line_and_precise(tmp_path):
    run = tmp_path / "run"
    assert runner.invoke(app, ["pof", "run", str(EXAMPLE), "-o", str(run)]).exit_code == 0
    r = runner.invoke(app, ["pof", "add", str(run), "--id", "x", "--match", "208/32", "--actions", "output:5"])
    assert r.exit_code == 1 and "--match[0]: expected OFFSET/LENGTH=VALUE" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["pof", "add", str(run), "--id", "x", "--match", "208/8=0x1ff", "--actions", "output:5"])
    assert r.exit_code == 1 and "does not fit in 8 bits" in r.output
    r = runner.invoke(app, ["pof", "add", str(run), "--id", "x", "--match", "208/32=1", "--actions", "jump:3"])
    assert r.exit_code == 1 and "unknown action 'jump'" in r.output
    r = runner.invoke(app, ["pof", "del", str(run), "nope"])
    assert r.exit_code == 1 and "no POF-FT 'nope'" in r.output
    r = runner.invoke(app, ["pof", "dump", str(tmp_path)])
    assert r.exit_code == 1 and "not a POF scenario run" in r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("params: {policy: exact}\npof_fts:\n  - {id: a, match: \"208/32=1\", actions: \"output:5\"}\n"
                   "traffic:\n  - {name: t, ft: zz, src: 1.1.1.1, dst: 2.2.2.2, rate_pps: 10}\n")
    r = runner.invoke(app, ["pof", "run", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and f"{bad}:5:19: traffic[0].ft: no POF-FT 'zz'; known: a" in r.output
    bad.write_text("pof_fts:\n  - {id: a, match: \"208/32=1\", actions: \"output:5,drop:1\"}\n")
    r = runner.invoke(app, ["pof", "run", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and f"{bad}:2:5: pof_fts[0].actions[1]: unknown action 'drop'" in r.output
    bad.write_text("params: {policy: lru}\n")
    r = runner.invoke(app, ["pof", "run", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and f"{bad}:1:" in r.output and "policy" in r.output


def test_scenario_events_update_and_rate(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("""params: {policy: actions}
ports: [4, 5]
pof_fts:
  - {id: ft1, match: "208/32=0x02020203", actions: "set_field:240/32=0x0a020202,output:5", frame_bytes: 60}
traffic:
  - {name: a, ft: ft1, src: 2.2.2.3, dst: 2.2.2.1, length: 60, rate_pps: 3000, in_port: 4}
events:
  - {at_s: 0.2, update: ft1, actions: "add_field:112/32=0x0a0a0908,output:5"}
  - {at_s: 0.3, rate: a, rate_pps: 10000}
run: {duration_s: 0.5, tick_s: 0.001, pcap_packets: 4}
""")
    r = runner.invoke(app, ["pof", "run", str(sc), "-o", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    b = _blocks(r.output)["ft1"]
    assert "\n  in_hw" in b and "add_field:112/32=0x0a0a0908,output:5" in b
    hw = int(b.split("pkt (sNIC")[0].split()[-1])
    kr = int(b.split("pkt (kernel")[0].split()[-1])
    assert hw + kr == 300 * 3 + 200 * 10  # 3 kpps for 0.3 s, then 10 kpps for 0.2 s
    rows = (tmp_path / "run" / "throughput.csv").read_text().splitlines()
    assert rows[0].startswith("t_s,hw_pps,kernel_pps") and len(rows) == 501


def test_traffic_errors_name_the_field(tmp_path):
    bad = tmp_path / "b.yaml"
    head = 'ports: [4, 5]\npof_fts:\n  - {id: a, match: "208/32=1", actions: "output:5"}\ntraffic:\n'
    bad.write_text(head + "  - {name: t, ft: a, src: 1.1.1.1, dst: 2.2.2.2, rate_pps: 10, in_port: 7}\n")
    r = runner.invoke(app, ["pof", "run", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and f"{bad}:5:73: traffic[0].in_port: port 7 is not a NIC port (4, 5)" in r.output
    bad.write_text(head + "  - {name: t, ft: a, src: 1.1.1.999, dst: 2.2.2.2, rate_pps: 10, in_port: 4}\n")
    r = runner.invoke(app, ["pof", "run", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and f"{bad}:5:" in r.output and "traffic[0].src" in r.output
