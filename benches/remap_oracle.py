"""OneSwitch port remaps on real OVS with the packet oracle after every step.

For each seed: 1,000 random virtual rules (plus the NF port's steering
rules), an NF port moved host <-> sNIC ten times with
``OneSwitchState.remap``, each consistent-update plan applied step by step to
the OVS backend's bridges (``backends/ovs.py``), and after every step every
test packet injected into the physical bridges (the NF port's packets at its
old and/or new location, as the plan allows then) and into a reference
bridge holding the virtual rules (``tandem.testing.remap_oracle``). Prints
per seed and in total: steps, oracle runs, packets compared, frames the
virtual switch sends to the NF port, lost (left at neither location),
(random rules the translator refuses at the port's other location are
redrawn first and counted as ``redrawn``),
duplicated (left at both / twice), other mismatches.

    tandem bench remap_oracle [--seeds 3] [--rules 1000] [--remaps 10] [--per-port 20]
"""

from __future__ import annotations

import argparse
import os
import time

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.remap_oracle import run_remap_oracle


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rules", type=int, default=1000)
    ap.add_argument("--remaps", type=int, default=10)
    ap.add_argument("--per-port", type=int, default=20)
    a = ap.parse_args()
    keys = ("redrawn", "remaps", "steps", "checks", "packets", "to_port", "lost", "duplicated", "other_mismatches")
    total = dict.fromkeys(keys, 0)
    t0 = time.perf_counter()
    print(f"load {os.getloadavg()[0]:.2f}; {a.rules} rules, {a.remaps} remaps per seed, {a.per_port} packets per port and kind")
    with OvsSandbox() as sb:
        for seed in range(1, a.seeds + 1):
            rep = run_remap_oracle(sb, n_rules=a.rules, n_remaps=a.remaps, per_port=a.per_port, seed=seed)
            print(f"seed {seed}: " + " ".join(f"{k}={getattr(rep, k)}" for k in keys) + f" ({rep.seconds:.1f} s)", flush=True)
            for ex in rep.examples:
                print("  " + ex.replace("\n", "\n  "))
            for k in keys:
                total[k] += getattr(rep, k)
    print("total: " + " ".join(f"{k}={v}" for k, v in total.items()) + f" ({time.perf_counter() - t0:.1f} s, "
          f"load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
