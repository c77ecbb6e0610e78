"""Input fuzzing: damaged files of every kind through the real `tandem` commands.

Each input kind has seed files (the repository's examples and small documented
problems); ``make_case(kind, rng)`` damages one (text mutations for YAML and rule
text - extreme numbers, aliases, deleted or duplicated lines, stray bytes,
full-width digits; byte mutations for pcap) and names the command that reads
it. ``run_case`` runs that command in-process (the typer app, the same
top-level handler as the installed `tandem`) and ``verdict`` says what is wrong
with the outcome, if anything. The contract checked:

* the exit code is one of the README table (0, 1, 2, 3) - never 4 (an
  exception reached the top-level handler), never a traceback;
* a failure prints at least one line on stderr, and every stderr line is a
  message (not a traceback frame);
* the case ends within ``TIME_LIMIT_S`` of CPU time (the process's own time, so a
  machine shared with other work does not fail a case; wall time is kept too).

Used by ``tests/test_fuzz_inputs.py`` (hypothesis, bounded budget) and
``benches/fuzz.py`` (100,000 cases with counts). Writes only into the work
directory it is given.
"""

from __future__ import annotations

import random
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

TIME_LIMIT_S = 2.0
DOCUMENTED_CODES = {0, 1, 2, 3}

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"

KINDS = ("scenario", "rules", "groups", "topology", "uno", "smartchain", "pof-fp", "pof-fr", "pcap")

# Small problems of each placement kind (docs/placement*.md formats).
UNO_PROBLEM = """\
resources: [cores, mem]
host_capacity: {cores: 24}
snics:
  snic0: {pcie_gbps: 32, capacity: {cores: 36, mem: 8}}
nf_types:
  dpi: {host: {cores: 0.5556, mem: 0.1}, snic: {cores: 1.1111, mem: 0.2}}
nodes:
  eth0: {kind: port}
  vm1: {kind: vm}
  dpi1: {kind: nf, type: dpi}
  aes1: {kind: nf, accelerated: true, host_use: {cores: 3}, snic_use: {cores: 0.5}}
  fw1: {kind: nf, type: dpi, pin: host, load_gbps: 2}
edges:
  - {from: eth0, to: aes1, gbps: 4}
  - [aes1, dpi1, 4]
  - {from: dpi1, to: vm1, gbps: 4}
incremental:
  current: {dpi1: host, fw1: host}
  move_cost: 0.5
  move_budget: 2
"""
POF_FP = """\
params: {capacity: 2, tau_add_us: 100}
flows:
  - {id: a, rate_mbps: 1000, packet_bytes: 64}
  - {id: b, rate_mbps: 200, packet_bytes: 64}
  - {id: c, rate_mbps: 5000, kernel_mbps: 6000}
  - {id: d, rate_mbps: 9000, packet_bytes: 1024}
"""
POF_FR = """\
params: {capacity: 2, tau_add_us: 100, tau_del_us: 100}
existing:
  - {id: a, rate_mbps: 100, packet_bytes: 64, offloaded: true}
  - {id: b, rate_mbps: 200, packet_bytes: 64, offloaded: true}
new:
  - {id: c, rate_mbps: 5000, packet_bytes: 64}
  - {id: d, rate_mbps: 9000, packet_bytes: 1024}
"""

# Values that have broken loaders somewhere: extremes, non-finite, wrong kinds, YAML tricks.
JUNK = [
    "1e30", "-1", "0", ".inf", "-.inf", ".nan", "1e300Gbps", "0Gbps", "0s", "1TB", "1e999", "99999999999999999999999",
    "１", "１０Gbps", "~", "[]", "{}", "[1, [2, [3]]]", "&a x", "*a", "*nosuch", "!!python/object/apply:os.system [ls]",
    "'", '"', "0x10", "1_000", "true", "no", "-0", "1e-320", "4294967296", "18446744073709551616", "nosuch",
    "snic0", "host", "eth0", "a.b.c", "10 Gbps", "10gbps", "1e3", "2.5E-6s", "\t", "\\x00", "é", "💥", "x" * 300,
]
RULE_JUNK = [
    "in_port=１", "priority=99999", "priority=-1", "output:99999999999", "goto_table:300", "group:4294967295",
    "actions=", ",,", "=", "dl_dst=zz:00:00:00:00:00", "nw_src=300.1.1.1", "ipv6_src=::::", "set_field:1->nosuch",
    "table=256", "cookie=0x1ffffffffffffffff", "tcp_dst=70000", "vlan_vid=5000", "metadata=0x1/0x", "push_vlan:0x1",
    "write_actions(", ")", "bucket=", "group_id=1", "type=nosuch", "weight:-3", "watch_port:0", "　", "\x00", "é",
]


@dataclass
class Case:
    kind: str
    files: dict[str, bytes]  # name -> content, written into the work directory
    argv: list[str]  # the command; "{dir}" is replaced by the work directory
    run_after: list[str] = field(default_factory=list)  # a second command when the first succeeds


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    seconds: float  # wall
    exception: str | None = None  # an exception the CLI runner caught (not SystemExit)
    cpu_seconds: float | None = None  # this process's CPU time during the command


# --------------------------------------------------------------------------- mutation


def mutate_text(rng: random.Random, text: str, junk: list[str] = JUNK, rounds: int | None = None) -> str:
    lines = text.splitlines()
    for _ in range(rounds or rng.randint(1, 3)):
        if not lines:
            lines = [rng.choice(junk)]
        i = rng.randrange(len(lines))
        op = rng.random()
        if op < 0.35:  # a value replaced by junk
            ln = lines[i]
            cut = max(ln.rfind(": "), ln.rfind("="), ln.rfind(":"))
            if cut >= 0:
                lines[i] = ln[:cut + 1] + (" " if ln[cut] == ":" and ln[cut:cut + 2] == ": " else "") + rng.choice(junk)
            else:
                lines[i] = ln + rng.choice(junk)
        elif op < 0.45:
            del lines[i]
        elif op < 0.55:
            lines.insert(i, lines[i])
        elif op < 0.62:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op < 0.70:  # indentation shifted
            lines[i] = (" " * rng.choice((1, 2, 4)) + lines[i]) if rng.random() < 0.5 else lines[i].lstrip()
        elif op < 0.80:  # stray characters
            ln = lines[i]
            k = rng.randrange(len(ln) + 1)
            lines[i] = ln[:k] + rng.choice(junk + [":", "-", "#", "{", "}", "[", "]", ",", "&", "*", "!", "|", ">"]) + ln[k:]
        elif op < 0.86:  # cut short
            ln = lines[i]
            lines[i] = ln[:rng.randrange(len(ln) + 1)]
            del lines[i + 1:]
        elif op < 0.92:  # a number made extreme
            ln = lines[i]
            digits = [k for k, c in enumerate(ln) if c.isdigit()]
            if digits:
                k = rng.choice(digits)
                lines[i] = ln[:k] + rng.choice(("9" * 30, "0", "1e308", "-", "１", ".")) + ln[k + 1:]
        elif op < 0.96:  # aliases: reuse, recursion, a small bomb
            anchor = rng.choice(("&x", "&y"))
            lines[i] = lines[i] + f" {anchor}" if ":" in lines[i] and not lines[i].rstrip().endswith(":") else lines[i]
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(("k: *x", "z: &r [*r]", _bomb_line(rng))))
        else:
            lines.insert(i, rng.choice(junk))
    return "\n".join(lines) + ("\n" if rng.random() < 0.9 else "")


def _bomb_line(rng: random.Random) -> str:
    n = rng.randint(2, 8)
    parts = ["b0: &b0 [q,q,q,q,q,q,q,q,q,q]"] + [f"b{i}: &b{i} [" + ",".join([f"*b{i - 1}"] * 10) + "]" for i in range(1, n)]
    return "\n".join(parts)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.4 and b:  # random bytes flipped (headers are the first 24 + 16 bytes)
            k = rng.randrange(min(len(b), 80)) if rng.random() < 0.6 else rng.randrange(len(b))
            b[k] = rng.randrange(256)
        elif op < 0.6 and len(b) >= 36:  # a record length made huge or tiny
            off = 24 + 8
            struct.pack_into("<I", b, off, rng.choice((0, 1, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, len(b))))
        elif op < 0.75:
            del b[rng.randrange(len(b) + 1):]
        elif op < 0.85 and len(b) >= 32:  # a timestamp sent back in time or far ahead
            off = 24 + rng.choice((0, 4))
            struct.pack_into("<I", b, off, rng.choice((0, 0xFFFFFFFF, 1 << 31)))
        elif op < 0.92:
            b[0:4] = rng.choice((b"\x0a\x0d\x0d\x0a", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x00\x00\x00\x00"))
        else:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return bytes(b)


# --------------------------------------------------------------------------- cases


def _seed_text(kind: str, rng: random.Random) -> str:
    if kind == "scenario":
        return (rng.choice(sorted(EXAMPLES.glob("*.yaml")))).read_text(encoding="utf-8")
    if kind == "topology":
        return (EXAMPLES / "oneswitch" / "topology.yaml").read_text(encoding="utf-8")
    if kind == "uno":
        return UNO_PROBLEM if rng.random() < 0.6 else (EXAMPLES / "uno-fig15-dpi.yaml").read_text(encoding="utf-8")
    if kind == "smartchain":
        return (EXAMPLES / "smartchain-ids.yaml").read_text(encoding="utf-8")
    if kind == "pof-fp":
        return POF_FP
    if kind == "pof-fr":
        return POF_FR
    raise KeyError(kind)


def _rules_text(rng: random.Random, groups: bool) -> str:
    from tandem.rules.generate import random_groups, random_ruleset
    from tandem.rules.ofctl import format_group, format_rule

    ports = [1, 2, 3, 4]
    if groups:
        lines = [format_group(g) for g in random_groups(rng, rng.randint(1, 6), ports)]
        if rng.random() < 0.3:  # a chain, a self-reference or a cycle among them
            a, b = rng.randint(1, 6), rng.randint(1, 6)
            lines.append(f"group_id={a},type=all,bucket=group:{b}")
    else:
        lines = [format_rule(r) for r in random_ruleset(rng, rng.randint(1, 12), ports, rng.randint(1, 3))]
    return mutate_text(rng, "\n".join(lines), JUNK + RULE_JUNK)


def make_case(kind: str, rng: random.Random, *, run_valid: bool = True) -> Case:
    """A damaged input of ``kind`` and the command that reads it."""
    if kind in ("rules", "groups"):
        name = "case.groups" if kind == "groups" else "case.flows"
        return Case(kind, {name: _rules_text(rng, kind == "groups").encode()}, ["rules", "check", "{dir}/" + name])
    if kind == "topology":
        text = mutate_text(rng, _seed_text(kind, rng))
        rules = (EXAMPLES / "oneswitch" / "rules.flows").read_bytes()
        return Case(kind, {"topo.yaml": text.encode(), "v.flows": rules},
                    ["translate", "--topology", "{dir}/topo.yaml", "--rules", "{dir}/v.flows", "--out", "{dir}/out"])
    if kind in ("uno", "smartchain", "pof-fp", "pof-fr"):
        text = mutate_text(rng, _seed_text(kind, rng))
        return Case(kind, {"problem.yaml": text.encode()}, ["place", kind, "{dir}/problem.yaml", "--json", "--time-limit", "1"])
    if kind == "pcap":
        pcap = mutate_bytes(rng, (EXAMPLES / "pcap" / "branch-office.pcap").read_bytes())
        scen = (EXAMPLES / "replay-pcap.yaml").read_text(encoding="utf-8").replace("pcap/branch-office.pcap", "case.pcap")
        after = ["run", "{dir}/replay.yaml", "--duration", "2ms", "--out", "{dir}/out"] if run_valid else []
        return Case(kind, {"case.pcap": pcap, "replay.yaml": scen.encode()}, ["validate", "{dir}/replay.yaml"], after)
    if kind == "scenario":
        text = mutate_text(rng, _seed_text(kind, rng))
        if "pcap/branch-office.pcap" in text:  # keep the replay example's recording reachable
            text = text.replace("pcap/branch-office.pcap", str(EXAMPLES / "pcap" / "branch-office.pcap"))
        after = ["run", "{dir}/s.yaml", "--duration", "200us", "--out", "{dir}/out"] if run_valid else []
        return Case(kind, {"s.yaml": text.encode("utf-8", "surrogatepass")}, ["validate", "{dir}/s.yaml"], after)
    raise KeyError(f"unknown input kind {kind!r}; known: {', '.join(KINDS)}")


def run_argv(argv: list[str], workdir: Path) -> Outcome:
    from typer.testing import CliRunner

    from tandem.cli import app

    args = [a.replace("{dir}", str(workdir)) for a in argv]
    t, c = time.perf_counter(), time.process_time()
    r = CliRunner().invoke(app, args)
    took, cpu = time.perf_counter() - t, time.process_time() - c
    _forget_captured_streams()
    exc = None
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        exc = f"{type(r.exception).__name__}: {r.exception}"
    return Outcome(r.exit_code, r.stdout, r.stderr, took, exc, cpu)


def _forget_captured_streams() -> None:
    """Empty click's cache of wrapped standard streams (typer's bundled copy, or
    click itself for an older typer). It maps
    each ``sys.stdout``/``sys.stderr`` it has seen to a wrapper that is the stream
    itself, in a WeakKeyDictionary the value therefore keeps alive: each
    ``CliRunner.invoke`` left its captured streams and output behind (about ten
    objects a case, for good, in the fuzz bench's long-lived workers)."""
    import importlib
    from weakref import WeakKeyDictionary

    for module in ("typer._click._compat", "click._compat"):
        try:
            compat = importlib.import_module(module)
        except ImportError:
            continue
        for name in ("_default_text_stdin", "_default_text_stdout", "_default_text_stderr"):
            for cell in getattr(getattr(compat, name, None), "__closure__", None) or ():
                if isinstance(cell.cell_contents, WeakKeyDictionary):
                    cell.cell_contents.clear()


def run_case(case: Case, workdir: Path) -> list[Outcome]:
    workdir.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (workdir / name).write_bytes(data)
    first = run_argv(case.argv, workdir)
    out = [first]
    if first.code == 0 and case.run_after:
        out.append(run_argv(case.run_after, workdir))
    return out


def verdict(o: Outcome) -> str | None:
    """What breaks the contract in one outcome (None: success or one clean error)."""
    if o.exception is not None:
        return f"exception escaped: {o.exception}"
    if "Traceback (most recent call last)" in o.stderr or "Traceback (most recent call last)" in o.stdout:
        return "a traceback was printed"
    if o.code not in DOCUMENTED_CODES:
        first = (o.stderr.strip().splitlines() or [""])[0]
        return f"exit code {o.code} ({first[:200]})"
    if o.code != 0 and not o.stderr.strip():
        return f"exit code {o.code} with no message on stderr"
    if any(ln.startswith('  File "') for ln in o.stderr.splitlines()):
        return "a traceback frame on stderr"
    spent = o.cpu_seconds if o.cpu_seconds is not None else o.seconds
    if spent > TIME_LIMIT_S:
        return f"took {spent:.2f} s of CPU ({o.seconds:.2f} s wall; limit {TIME_LIMIT_S} s)"
    return None
