"""Emulation speed of one switch pipeline: parse + 2 tables x N mixed-wildcard
rules + output, in simulated packets per wall-second on one core.

  tandem bench pipeline_speed [--rules 10000] [--flows 10000] [--packets 1000000] [--runs 5] [--seed 1]
  tandem bench pipeline_speed --rules FILE --trace FILE [--packets N] [--runs 5]
  (either form) [--two-pipelines]

Table 0 holds N rules mixing exact and wildcarded fields (in_port, eth_type,
IPv4 source/destination prefixes /8../32, protocol, TCP/UDP ports) that write
metadata and go to table 1; table 1 holds N rules on metadata, destination
prefixes and ports that output to a port; both tables end in a priority-0
table-miss rule. Traffic: 64-byte TCP/UDP frames from --flows flows, each
built to hit a random table-0 rule. The packet loop runs inside Rust
(`Pipeline.bench_process`); the caches — a whole-pipeline exact-match path
cache (as OVS's EMC) in front of per-table flow caches — are on and, for
comparison, off (in the same pipeline, switched run by run, each switch-on
emptying the caches; --two-pipelines: in two pipelines built alike, the
caches never emptied). Prints the median of --runs.

With --rules FILE --trace FILE (ClassBench / dpdk-test-acl format, as
../shared/bench/classbench_gen.py writes acl.rules and acl.trace) the pipeline
is one table holding those rules (first line highest priority, rule i outputs
to port 1 + i % 8, a table-miss rule to port 8) and the traffic is the trace's
packets in order (64-byte TCP/UDP frames from port 9); every packet's port is
checked against a linear scan of the rules first.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys

from pathlib import Path

from tandem import _dp
from tandem.dataplane import Switch
from tandem.rules import classbench
from tandem.rules.ir import ApplyActions, GotoTable, Match, Output, Rule, WriteMetadata
from tandem.rules.packets import build_frame
from tandem.testing.bench import run_restoring_affinity

PORTS = list(range(1, 9))


def prefix_mask(length: int) -> int:
    return (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF if length else 0


def table0_rule(rng: random.Random, prio: int) -> tuple[Rule, dict]:
    """A mixed-wildcard rule and the field values of a packet that hits it."""
    fields: dict = {}
    m: dict = {"eth_type": 0x0800}
    src, dst = rng.getrandbits(32), rng.getrandbits(32)
    fields.update(ipv4_src=src, ipv4_dst=dst)
    sl, dl = rng.choice((0, 8, 16, 24, 32)), rng.choice((8, 16, 24, 32))
    if sl:
        m["ipv4_src"] = (src & prefix_mask(sl), prefix_mask(sl)) if sl < 32 else src
    m["ipv4_dst"] = (dst & prefix_mask(dl), prefix_mask(dl)) if dl < 32 else dst
    proto = rng.choice((6, 17))
    sport, dport = rng.randrange(1024, 65536), rng.choice((22, 53, 80, 443, 8080, rng.randrange(1, 65536)))
    name = "tcp" if proto == 6 else "udp"
    fields.update(ip_proto=proto, **{f"{name}_src": sport, f"{name}_dst": dport})
    if rng.random() < 0.7:
        m["ip_proto"] = proto
        if rng.random() < 0.6:
            m[f"{name}_dst"] = dport
    in_port = rng.choice(PORTS)
    if rng.random() < 0.3:
        m["in_port"] = in_port
    meta = rng.randrange(1, 64)
    rule = Rule(Match.of(**m), (WriteMetadata(meta, 0xFF), GotoTable(1)), table=0, priority=prio)
    return rule, dict(fields=fields, in_port=in_port)


def table1_rule(rng: random.Random, prio: int) -> Rule:
    m: dict = {"metadata": (rng.randrange(1, 64), 0xFF)}
    if rng.random() < 0.5:
        dl = rng.choice((8, 16, 24))
        m["eth_type"] = 0x0800
        m["ipv4_dst"] = (rng.getrandbits(32) & prefix_mask(dl), prefix_mask(dl))
    if rng.random() < 0.3:
        m.setdefault("eth_type", 0x0800)
        m["ip_proto"] = 6
        m["tcp_dst"] = rng.choice((22, 80, 443))
    return Rule(Match.of(**m), (ApplyActions((Output(rng.choice(PORTS)),)),), table=1, priority=prio)


def build(rules: int, flows: int, seed: int) -> tuple[Switch, list[int], list[bytes]]:
    rng = random.Random(seed)
    sw = Switch(PORTS, n_tables=2)
    hints = []
    prios = rng.sample(range(1, 65535), rules)
    for p in prios:
        r, hint = table0_rule(rng, p)
        sw.add_rule(r)
        hints.append(hint)
    for p in rng.sample(range(1, 65535), rules):
        sw.add_rule(table1_rule(rng, p))
    sw.add_rule(Rule(Match(), (WriteMetadata(0, 0xFF), GotoTable(1)), table=0, priority=0))
    sw.add_rule(Rule(Match(), (ApplyActions((Output(PORTS[-1]),)),), table=1, priority=0))
    in_ports, frames = [], []
    for _ in range(flows):
        h = rng.choice(hints)
        frames.append(build_frame(**h["fields"]))  # 60 bytes + 4 FCS on the wire = 64 B
        in_ports.append(h["in_port"])
    return sw, in_ports, frames


def build_files(rules_path: Path, trace_path: Path) -> tuple[Switch, list[int], list[bytes], list[int]]:
    """One table of ClassBench rules; frames from the trace; expected ports."""
    rules, pkts = classbench.load(rules_path, trace_path)
    sw = Switch(list(range(1, 10)), n_tables=1)
    sw.add_rules(classbench.to_openflow(rules, PORTS))
    sw.add_rule(Rule(Match(), (ApplyActions((Output(PORTS[-1]),)),), table=0, priority=0))
    ref = _dp.AclBench([(r.src, r.src_len, r.dst, r.dst_len, *r.sport, *r.dport, r.proto, r.proto_mask) for r in rules],
                       [(p.src, p.dst, p.sport, p.dport, p.proto) for p in pkts]).reference()  # linear scan
    frames, want = [], []
    for pk, i in zip(pkts, ref):
        l4 = {}
        if pk.proto in (6, 17):
            name = "tcp" if pk.proto == 6 else "udp"
            l4 = {f"{name}_src": pk.sport, f"{name}_dst": pk.dport}
        frames.append(build_frame(ipv4_src=pk.src, ipv4_dst=pk.dst, ip_proto=pk.proto, **l4))
        want.append(PORTS[i % len(PORTS)] if i >= 0 else PORTS[-1])
    return sw, [9] * len(frames), frames, want


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="10000", help="rules per table, or a ClassBench rule file (with --trace)")
    ap.add_argument("--trace", type=Path, default=None, help="ClassBench trace file (with --rules FILE)")
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--packets", type=int, default=1000000, help="packets per timed run")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--two-pipelines", action="store_true",
                    help="caches on and off in two pipelines built alike, so no run starts with the caches just "
                         "switched on (emptied); by default one pipeline switches them run by run")
    a = ap.parse_args()
    try:
        os.sched_setaffinity(0, {0})
    except (AttributeError, OSError):
        pass
    if a.rules.isdigit() and a.trace is None:
        sw, in_ports, frames = build(int(a.rules), a.flows, a.seed)
        what = f"2 tables x {a.rules} mixed-wildcard rules (+ table-miss rules), {len(frames)} flows of 64-byte frames"
    elif a.rules.isdigit() or a.trace is None:
        print("error: --rules FILE and --trace FILE go together", file=sys.stderr)
        return 2
    else:
        try:
            sw, in_ports, frames, want = build_files(Path(a.rules), a.trace)
        except classbench.ClassBenchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        what = f"1 table of {a.rules} ({sw.n_rules} OpenFlow rules), {len(frames)} packets of {a.trace}"
        got = [[port for port, _ in sw.process(ip, f)] for ip, f in zip(in_ports, frames)]
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != [w]]
        print(f"checked against a linear scan of the rules: {len(frames) - len(bad)}/{len(frames)} packets on the expected port")
        if bad:
            print(f"  packet {bad[0]}: expected port {want[bad[0]]}, got {got[bad[0]]}", file=sys.stderr)
            return 1
    rounds = max(1, a.packets // len(frames))
    p = sw.pipeline
    p.bench_process(in_ports, frames, 1)  # warm up
    sw_off = None
    if a.two_pipelines:
        sw_off = build(int(a.rules), a.flows, a.seed)[0] if a.trace is None else build_files(Path(a.rules), a.trace)[0]
        sw_off.set_cache_enabled(False)
        sw_off.pipeline.bench_process(in_ports, frames, 1)
    results = {}
    # caches on and off interleaved run by run, so both see the same machine load
    runs: dict[bool, list] = {True: [], False: []}
    for _ in range(a.runs):
        for cache in (True, False):
            if sw_off is None:
                sw.set_cache_enabled(cache)
            pipe = p if cache or sw_off is None else sw_off.pipeline
            n, outs, secs, cpu_secs = pipe.bench_process(in_ports, frames, rounds)
            runs[cache].append((n / secs, n / cpu_secs if cpu_secs else float("nan"), outs / n))
    for cache, rs in runs.items():
        results[cache] = (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs), rs[-1][2])
    pairs = [on[1] / off[1] for on, off in zip(runs[True], runs[False])]
    sw.set_cache_enabled(True)
    c = sw.counters()
    tables = [k.split(".")[1] for k in c if k.startswith("table.") and k.endswith(".cache_hits")]
    print(f"machine: {os.cpu_count()} cores, load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min)")
    print(f"pipeline: {what}")
    print(f"table 0 rule hit rate {1 - c['table.0.missed'] / max(1, c['table.0.lookups']):.3f}; outputs per packet {results[True][2]:.2f}; "
          f"path cache hits {c['path_cache.hits']}, misses {c['path_cache.misses']}, bypassed {c.get('path_cache.bypassed', 0)}; "
          f"per-table flow caches (behind it) hits {sum(c[f'table.{t}.cache_hits'] for t in tables)}, "
          f"misses {sum(c[f'table.{t}.cache_misses'] for t in tables)}, "
          f"bypassed {sum(c.get(f'table.{t}.cache_bypassed', 0) for t in tables)}")
    print(f"median of {a.runs} runs x {rounds * len(frames)} packets; 'cpu' = packets per second of CPU time this thread got "
          f"(the one-core figure on a shared machine), 'wall' = per wall-clock second")
    for cache, label in ((True, "on "), (False, "off")):
        w, cp, _ = results[cache]
        print(f"parse + lookups + output, caches {label}: {cp / 1e6:6.2f} Mpps cpu, {w / 1e6:6.2f} Mpps wall")
    print(f"ratio caches on / off: {results[True][1] / results[False][1]:.2f} cpu, {results[True][0] / results[False][0]:.2f} wall "
          f"(cpu, per interleaved pair: {', '.join(f'{r:.2f}' for r in pairs)})")
    return 0


if __name__ == "__main__":
    sys.exit(run_restoring_affinity(main))
