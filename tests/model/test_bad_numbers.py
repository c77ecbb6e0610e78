"""Numbers `validate` accepts are numbers `run` can handle: bounds in the schema, no
non-finite numbers, YAML alias bombs refused; and every failure is one line with a
documented exit code (tandem/errors.py), never a traceback."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.model.load import ScenarioError, parse_scenario_text

REPO = Path(__file__).resolve().parents[2]
SDWAN = (REPO / "examples" / "uno-sdwan.yaml").read_text()
runner = CliRunner()


def variant(old: str, new: str) -> str:
    assert SDWAN.count(old) == 1, old
    return SDWAN.replace(old, new)


BAD = [
    ("    cores: 24 ", "    cores: 1000000000000000000000000000000 ", "devices.host.cores", "must be ≤ 4096"),
    ("    cores: 24 ", "    cores: 1e30 ", "devices.host.cores", "expected a whole number"),
    ("queue_depth_packets: 1024", "queue_depth_packets: 100000000000000000000", "links.pcie0.queue_depth_packets", "must be ≤"),
    ("flows: 10000 ", "flows: 1000000000000 ", "traffic.wan-in.flows", "must be ≤"),
    ("packet_size: 1280B", "packet_size: 1TB", "traffic.wan-in.packet_size", "larger than a frame can be"),
    ("duration: 1s", "duration: 0s", "run.duration", "must be > 0"),
    ("eth1: {rate: 10Gbps}", "eth1: {rate: 0Gbps}", "devices.snic0.ports.eth1.rate", "must be > 0"),
    ("bandwidth: 32Gbps ", "bandwidth: 1e300Gbps ", "links.pcie0.bandwidth", "too large"),
    ("bandwidth: 4Gbps ", "bandwidth: 0Gbps ", "traffic.wan-in.bandwidth", "must be > 0"),
    ("{cycles_per_byte: 5.8,", "{cycles_per_byte: .inf,", "nf_types.l7fw.cost.host.cycles_per_byte", "finite"),
    ("{cycles_per_byte: 5.8,", "{cycles_per_byte: .nan,", "nf_types.l7fw.cost.host.cycles_per_byte", "finite"),
    ("    speed: 1.0           # reference core", "    speed: .inf", "devices.host.speed", "finite"),
    ("  seed: 1\n", "  seed: -1\n", "run.seed", "must be ≥ 0"),
    ("  seed: 1\n", "  seed: 100000000000000000000000\n", "run.seed", "must be ≤"),
    ("drr_weight: 1", "drr_weight: .inf", "tenants.acme.drr_weight", "finite"),
    ("clock: 2.7GHz", "clock: 0GHz", "devices.host.clock", "must be > 0"),
]


@pytest.mark.parametrize("old,new,path,msg", BAD, ids=[b[1].strip()[:30] for b in BAD])
def test_validate_refuses_with_file_line_and_path(old, new, path, msg):
    text = variant(old, new)
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(text, "s.yaml")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if new.strip().split("\n")[0] in ln)
    rendered = str(e.value).splitlines()
    hit = [r for r in rendered if f": {path}" in r and msg in r]
    assert hit, rendered
    assert hit[0].startswith(f"s.yaml:{line}:"), hit


@pytest.mark.parametrize("old,new,path,msg", BAD[:6], ids=[b[1].strip()[:30] for b in BAD[:6]])
def test_run_refuses_the_same_numbers_with_exit_2(tmp_path, old, new, path, msg):
    f = tmp_path / "s.yaml"
    f.write_text(variant(old, new))
    r = runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "out"), "--duration", "1ms"])
    assert r.exit_code == 2, r.output
    assert path in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("seed,needle", [("-1", "greater than or equal to 0"), ("1e23", "valid integer"),
                                         ("100000000000000000000000", "less than or equal to")])
def test_run_seed_flag_is_bounded(tmp_path, seed, needle):
    r = runner.invoke(app, ["run", str(REPO / "examples" / "uno-sdwan.yaml"), "--out", str(tmp_path), "--seed", seed])
    assert r.exit_code == 2
    assert needle in r.output and "--seed" in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_recursive_alias_is_one_line_with_its_place(tmp_path):
    f = tmp_path / "rec.yaml"
    f.write_text("name: x\ndevices: &a {host: *a}\n")
    r = runner.invoke(app, ["validate", str(f)])
    assert r.exit_code == 2
    assert r.output.strip() == f"{f}:2:10: recursive alias: this node contains itself (an anchor used inside its own value)"


def _bomb(levels: int = 9) -> str:
    lines = ["name: bomb", "a0: &a0 [x,x,x,x,x,x,x,x,x,x]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines + [f"devices: {{h: {{kind: host}}, z: *a{levels}}}"]) + "\n"


def test_alias_bomb_is_refused_quickly_in_every_loader(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text(_bomb())
    assert len(f.read_text()) < 1200
    for args in (["validate", str(f)], ["translate", "--topology", str(f), "--rules", "/dev/null", "--out", str(tmp_path / "o")],
                 ["place", "uno", str(f)], ["place", "smartchain", str(f)], ["place", "pof-fp", str(f)]):
        t = time.monotonic()
        r = runner.invoke(app, args)
        assert time.monotonic() - t < 5, args
        assert r.exit_code == 2, (args, r.output)
        assert "alias bomb" in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, r.output


def test_a_few_reused_anchors_are_fine():
    text = variant("  eth0: {rate: 10Gbps}\n", "  eth0: &port {rate: 10Gbps}\n").replace(
        "eth1: {rate: 10Gbps}", "eth1: *port")
    s = parse_scenario_text(text)
    assert s.devices["snic0"].ports["eth1"].rate == 10e9


def test_an_unexpected_exception_is_one_line_exit_4_and_debug_shows_it(tmp_path):
    code = ("import sys, typer\nfrom tandem.cli import app\n"
            "@app.command('boom-test')\ndef boom():\n    raise KeyError('x')\n"
            "sys.argv = ['tandem', 'boom-test']\napp()\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 4
    assert p.stderr.strip().splitlines() == [
        "internal error: KeyError: 'x' (a bug in tandem; TANDEM_DEBUG=1 shows the traceback)"]
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "TANDEM_DEBUG": "1"})
    assert p.returncode == 4 and "Traceback" in p.stderr


def test_memory_error_is_an_input_error(tmp_path):
    code = ("import sys\nfrom tandem.cli import app\n"
            "@app.command('mem-test')\ndef mem():\n    raise MemoryError()\n"
            "sys.argv = ['tandem', 'mem-test']\napp()\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "out of memory" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("args,needle", [
    (["--bogus"], "error: tandem: No such option: --bogus"),
    (["nosuchcmd"], "error: tandem: No such command 'nosuchcmd'"),
    (["rules", "nosuch"], "error: tandem rules: No such command 'nosuch'"),
    (["validate"], "error: tandem validate: Missing argument 'SCENARIO'"),
    (["rules", "gen", "--count", "x"], "error: tandem rules gen: Invalid value for '--count'"),
])
def test_usage_errors_are_one_line_exit_2(args, needle):
    tandem = str(Path(sys.executable).with_name("tandem"))
    p = subprocess.run([tandem, *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and p.stderr.startswith(needle), p.stderr
