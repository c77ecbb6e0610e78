"""Nicira learn through OneSwitch on real OVS, against one OVS bridge.

For each seed and topology (a host + 2 sNICs; a chain host - sNIC - sNIC): a random
learning rule set (``tandem.rules.generate_learn``: about half the rules learn),
translated as the endpoint does it (every sNIC port homed to the host first), loaded
on the physical bridges and on one reference bridge; traffic one packet at a time
(datapath flows deleted after each), a share of the learning rules deleted on both
sides half-way; every frame leaving every virtual port compared, and the flows the
host learned (ports mapped back to virtual numbers) compared with the reference
bridge's (``tandem.testing.learn_oracle``). Prints per run and in total: rules,
learning rules, packets, frames out, mismatches, learned flows, learned-flow
mismatches.

``--normal``: rule sets that output to NORMAL (``tandem.rules.generate_normal``) and
traffic with VLAN tags and broadcasts instead; "learning_rules" then counts the rules
that output to NORMAL.

``--dp``: the emulator's switch (dp-core) instead of the translation, against one OVS
bridge with the same rules (``tandem.testing.learn_dp_oracle``; one sandbox, one run
per seed). ``--normal --dp``: dp-core's NORMAL, frames and MAC tables
(``tandem.testing.normal_dp_oracle``). ``--normal --emu``: the translation on the
emulator backend (dp-core switches) instead of OVS bridges
(``tandem.testing.normal_emu_oracle``). ``--clone``: every learn action runs inside a
clone (``tandem.rules.generate_clone_learn``), with or without ``--dp``.
``--bucket-learn``: every learning rule applies a group of its own with learn actions
in its buckets, which do nothing there, as in Open vSwitch 3.1
(``tandem.rules.generate_bucket_learn``); "group_rules" counts the rules applying one.
``--bundle-normal`` (with ``--normal``, any of the three runs): each NORMAL of an
apply-actions list is a member of an ``active_backup`` or ``hrw`` bundle instead
(``tandem.rules.generate_bundle_normal``).

    tandem bench learn_oracle [--seeds 17] [--rules 120] [--packets 100] [--normal [--bundle-normal] | --clone | --bucket-learn] [--dp | --emu]
"""

from __future__ import annotations

import argparse
import os
import time

from tandem.rules.generate_normal import normal_ruleset
from tandem.testing.learn_oracle import TOPOS, run_learn_oracle


def _dp_runs(seeds: int, n_rules: int, n_packets: int, normal: bool = False, ruleset=None):
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.testing.learn_dp_oracle import run_learn_dp_oracle
    from tandem.testing.normal_dp_oracle import run_normal_dp_oracle

    with OvsSandbox() as sb:
        for seed in range(1, seeds + 1):
            if normal:
                yield seed, "dp-core", run_normal_dp_oracle(sb, seed, n_rules, n_packets, ruleset=ruleset or normal_ruleset)
            else:
                yield seed, "dp-core", run_learn_dp_oracle(sb, seed, n_rules, n_packets, ruleset=ruleset)


def _emu_runs(seeds: int, n_rules: int, n_packets: int, ruleset=None):
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.testing.normal_emu_oracle import run_normal_emu_oracle

    with OvsSandbox() as sb:
        for seed in range(1, seeds + 1):
            for name, topo in TOPOS.items():
                yield seed, f"{name} emu", run_normal_emu_oracle(sb, topo, seed, n_rules, n_packets,
                                                                  ruleset=ruleset or normal_ruleset)


def _translation_runs(seeds: int, n_rules: int, n_packets: int, normal: bool, ruleset=None):
    for seed in range(1, seeds + 1):
        for name, topo in TOPOS.items():
            yield seed, name, run_learn_oracle(topo, seed, n_rules, n_packets, normal=normal, ruleset=ruleset)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=17)
    ap.add_argument("--rules", type=int, default=120)
    ap.add_argument("--packets", type=int, default=100)
    ap.add_argument("--normal", action="store_true")
    ap.add_argument("--dp", action="store_true", help="dp-core against one OVS bridge")
    ap.add_argument("--emu", action="store_true", help="with --normal: the translation on the emulator backend")
    ap.add_argument("--clone", action="store_true", help="every learn action inside a clone (generate_clone_learn)")
    ap.add_argument("--bucket-learn", action="store_true", help="groups with learn in their buckets (generate_bucket_learn)")
    ap.add_argument("--bundle-normal", action="store_true", help="with --normal: NORMAL as a bundle member (generate_bundle_normal)")
    a = ap.parse_args()
    keys = ("rules", "learning_rules", "packets", "outputs", "mismatches", "learned", "learned_mismatches", "group_rules")
    total = dict.fromkeys(keys, 0)
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"load {os.getloadavg()[0]:.2f}; {a.rules} {'NORMAL' if a.normal else 'learning'} rules and "
          f"{a.packets} packets per run", flush=True)
    if a.emu and not a.normal:
        ap.error("--emu covers NORMAL only")
    if a.clone and a.normal:
        ap.error("--clone covers learn only")
    ruleset = None
    if a.clone:
        from tandem.rules.generate_clone_learn import clone_learn_ruleset as ruleset
    if a.bucket_learn:
        if a.normal or a.clone:
            ap.error("--bucket-learn goes with neither --normal nor --clone")
        from tandem.rules.generate_bucket_learn import bucket_learn_ruleset as ruleset
    if a.bundle_normal:
        if not a.normal:
            ap.error("--bundle-normal goes with --normal")
        from tandem.rules.generate_bundle_normal import bundle_normal_ruleset as ruleset
    runs = (_dp_runs(a.seeds, a.rules, a.packets, a.normal, ruleset) if a.dp else _emu_runs(a.seeds, a.rules, a.packets, ruleset)
            if a.emu else _translation_runs(a.seeds, a.rules, a.packets, a.normal, ruleset))
    t = time.perf_counter()
    for seed, name, r in runs:
        row = dict(rules=r.rules, learning_rules=r.learning_rules, packets=r.traffic.packets,
                   outputs=r.traffic.outputs, mismatches=len(r.traffic.mismatches), learned=r.learned_ref,
                   learned_mismatches=len(r.learned_mismatches), group_rules=r.group_rules)
        print(f"seed {seed} {name}: " + " ".join(f"{k}={v}" for k, v in row.items())
              + f" ({time.perf_counter() - t:.1f} s)", flush=True)
        t = time.perf_counter()
        for m in r.traffic.mismatches[:2]:
            print("  " + str(m).replace("\n", "\n  "))
        for m in r.learned_mismatches[:2]:
            print("  " + m)
        for k in keys:
            total[k] += row[k]
    print("total: " + " ".join(f"{k}={v}" for k, v in total.items()) + f" ({time.perf_counter() - t0:.1f} s wall, "
          f"{time.process_time() - c0:.1f} s CPU here, load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
