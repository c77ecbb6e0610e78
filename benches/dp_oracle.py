"""OVS oracle at scale: the emulated switch vs an Open vSwitch dummy bridge.

  tandem bench dp_oracle [--cases 5000] [--per-ruleset 25] [--seed 0]

Seeded random rule sets (1-4 tables, masks, priorities, VLAN push/pop,
set-field, dec_ttl, groups of type all/indirect, reserved ports) and random
packets biased to hit them go through both switches; every port's output must
be byte-identical (compared as a multiset per port). A case is one packet.
Prints the number of cases, frames compared and mismatches (listing the first
ones). Needs Open vSwitch (installed by `make test`/`make bench`).
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from tandem.testing.dataplane_oracle import OvsOracle, random_case
from tandem.rules.ofctl import format_group, format_rule
from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=5000, help="packets in total")
    ap.add_argument("--per-ruleset", type=int, default=25, help="packets per random rule set")
    ap.add_argument("--seed", type=int, default=0, help="first rule-set seed")
    ap.add_argument("--show", type=int, default=5, help="mismatches to print in full")
    a = ap.parse_args()
    if not ovs_available():
        print("error: Open vSwitch is not installed (make test installs openvswitch-switch)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    cases = frames = 0
    bad: list[tuple[int, object, list, list]] = []
    seed = a.seed
    with OvsSandbox() as sb:
        oracle = OvsOracle(sb)
        while cases < a.cases:
            rng = random.Random(seed)
            n_tables = rng.choice((1, 2, 3, 4))
            n = min(a.per_ruleset, a.cases - cases)
            rules, groups, packets = random_case(rng, oracle.ports, rng.randint(5, 60), n_tables, rng.randint(0, 5), n)
            res = oracle.compare(rules, groups, packets, n_tables)
            cases += res.packets
            frames += res.frames_compared
            bad += [(seed, m, rules, groups) for m in res.mismatches]
            seed += 1
    secs = time.monotonic() - t0
    print(f"OVS oracle: {cases} cases (packets) over {seed - a.seed} random rule sets (seeds {a.seed}..{seed - 1}), "
          f"{frames} emitted frames compared, {len(bad)} mismatches, {secs:.0f} s")
    for s, m, rules, groups in bad[: a.show]:
        print(f"--- rule-set seed {s}: {m}")
        for g in groups:
            print(f"    group: {format_group(g)}")
        for r in rules:
            print(f"    flow:  {format_rule(r)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
