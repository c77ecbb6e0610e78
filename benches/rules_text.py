"""Rule text speed: ovs-ofctl syntax parse / print, and OVS's own load time.

  tandem bench rules_text [--rules 10000] [--seed 1] [--tables 4] [--runs 5] [--no-ovs]

Draws --rules seeded rules (every OVS-loadable feature, 4 groups), then times
format_rule over all of them, parse_rule over the printed lines, and
parse_dumped_flow over what OVS dumps back. Unless --no-ovs, also times
`ovs-ofctl add-flows` of the printed rules into a sandboxed dummy bridge and
checks that the dump re-parses to the same multiset of rules. Prints the
median over --runs of each rate (rules/s). Pure Python; installs nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter

from tandem.rules.generate import random_groups, random_ruleset
from tandem.rules.ofctl import format_group, format_rule, parse_dumped_flow, parse_rule


def _rate(n: int, fn) -> float:
    t0 = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-ovs", action="store_true")
    a = ap.parse_args()

    rng = random.Random(a.seed)
    groups = random_groups(rng, 4, [1, 2, 3, 4])
    rules = random_ruleset(rng, a.rules, [1, 2, 3, 4], a.tables, groups=[g.group_id for g in groups])
    texts = [format_rule(r) for r in rules]
    rates: dict[str, list[float]] = {"format_rule": [], "parse_rule": [], "parse_dumped_flow": [], "ovs add-flows": []}
    dumped: list[str] = []
    for _ in range(a.runs):
        rates["format_rule"].append(_rate(len(rules), lambda: [format_rule(r) for r in rules]))
        rates["parse_rule"].append(_rate(len(texts), lambda: [parse_rule(t) for t in texts]))
    if not a.no_ovs:
        from tandem.backends.ovs_sandbox import OvsSandbox

        with OvsSandbox() as ovs:
            for run in range(a.runs):
                br = f"b{run}"
                ovs.add_bridge(br, ports=[1, 2, 3, 4])
                ovs.add_groups(br, [format_group(g) for g in groups])
                rates["ovs add-flows"].append(_rate(len(texts), lambda: ovs.add_flows(br, texts)))
                dumped = ovs.dump_flows(br)
                ovs.vsctl("del-br", br)
        for _ in range(a.runs):
            rates["parse_dumped_flow"].append(_rate(len(dumped), lambda: [parse_dumped_flow(d) for d in dumped]))
        same = Counter(parse_dumped_flow(d) for d in dumped) == Counter(rules)
        print(f"OVS dump re-parses to the generated rules: {'yes' if same else 'NO'}")
    print(f"{a.rules} rules, {a.tables} tables, seed {a.seed}, median of {a.runs} runs")
    for name, rs in rates.items():
        if rs:
            print(f"  {name:<18} {statistics.median(rs):>10,.0f} rules/s")


if __name__ == "__main__":
    main()
