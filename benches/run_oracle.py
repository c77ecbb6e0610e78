"""`tandem run` vs the OVS oracle: every example scenario and N random scenarios.

For each case, the frames leaving every external port of the rule-driven
emulated machine (OneSwitch translation in dp-core pipelines on host and
sNICs, NFs at their places, PCIe) are compared, per port as multisets, with
those of the same virtual rules on one real Open vSwitch bridge whose NFs are
pass-through (tandem.testing.run_oracle). Examples: chains compiled to rules, at
the placement the run decides and with every NF that can run there on the
host. Random: seeds 1..N, 1-2 sNICs, 2-4 NFs at random places, >= --rules
virtual rules (all match/action features but MPLS, VLAN push/pop in every
stage, so frames NFs hand back with two tags cross PCIe; see the module).
Prints one line per case and the totals.

    tandem bench run_oracle [--seeds 20] [--rules 500] [--per-port 40]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from tandem.backends.ovs_sandbox import OvsError, OvsSandbox
from tandem.testing.run_oracle import compare, random_case, scenario_packets
from tandem.model.load import load_scenario
from tandem.oneswitch.scenario import virtual_rules
from tandem.placement.from_scenario import decide

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--rules", type=int, default=500)
    ap.add_argument("--per-port", type=int, default=40)
    a = ap.parse_args()
    total = {"cases": 0, "packets": 0, "frames": 0, "mismatches": 0, "rules": 0, "errors": 0}
    t0 = time.perf_counter()

    def record(label: str, run) -> None:
        # one private ovs-vswitchd per case: a crash of the reference cannot spoil the next case
        try:
            with OvsSandbox() as sb:
                sb.vsctl("set", "Open_vSwitch", ".", "other_config:vlan-limit=2")
                rep, n_rules = run(sb)
        except OvsError as e:
            total["errors"] += 1
            print(f"  {label:44s} OVS reference failed: {str(e)[-120:]}")
            return
        total["cases"] += 1
        total["packets"] += rep.packets
        total["frames"] += rep.frames_out
        total["two_tags"] = total.get("two_tags", 0) + rep.two_tags
        total["mismatches"] += rep.mismatches
        total["rules"] += n_rules
        worst = ", ".join(f"{d.name} -{len(d.missing)}/+{len(d.extra)}" for d in rep.diffs) or "-"
        print(f"  {label:44s} rules {n_rules:5d}  packets {rep.packets:4d}  frames out {rep.frames_out:5d}"
              f" (2 tags: {rep.two_tags:4d})  mismatches {rep.mismatches} ({worst})")

    print("examples (chains compiled to virtual rules):")
    for path in EXAMPLES:
        sc = load_scenario(path)
        rules = virtual_rules(sc)
        packets = scenario_packets(sc, rules)
        decided = decide(sc).placement
        host = {n: sc.host_id if sc.nf_types[i.type].profile_for(sc.host_id, "host") else decided[n]
                for n, i in sc.nfs().items()}
        for tag, placement in (("decided", decided), ("on host", host)):
            if tag == "on host" and host == decided:
                continue
            record(f"{path.stem} ({tag})", lambda sb: (compare(sb, sc, placement, rules, [], packets, "ex"), len(rules)))
    print(f"random scenarios (seeds 1..{a.seeds}, >= {a.rules} virtual rules):")
    for seed in range(1, a.seeds + 1):
        sc, placement, rules, groups, packets = random_case(seed, a.rules, a.per_port)
        where = ",".join(f"{n}@{d}" for n, d in placement.items())
        record(f"seed {seed} [{where}]", lambda sb: (compare(sb, sc, placement, rules, groups, packets, "rnd"), len(rules)))
    print(f"total: {total['cases']} cases, {total['rules']} virtual rules, {total['packets']} packets in, "
          f"{total['frames']} frames out ({total.get('two_tags', 0)} with two VLAN tags), {total['mismatches']} mismatches, {total['errors']} OVS failures "
          f"({time.perf_counter() - t0:.0f} s)")
    print("uptime:", os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()
