"""OVS oracle per OpenFlow 1.3 field and action beyond the common set.

  tandem bench of13_oracle [--per-item 2000] [--only dp|translation] [--items match:sctp_src,push_mpls]

For every item (``match:F``, ``set:F`` for SCTP, ARP SHA/THA, IPv6 flow label,
ICMPv6, ND target/SLL/TLL, MPLS TC/BOS, tunnel_id, and the actions push_mpls,
pop_mpls, set_mpls_ttl, dec_mpls_ttl, set_nw_ttl, set_queue; and Open
vSwitch's extensions: pkt_mark, registers, tcp_flags, ip_frag, nw_ttl,
mpls_ttl, load, move, push/pop ``stack``, note, exit, pop_queue, sample,
``dec_ttl_ids`` (dec_ttl(ids)), resubmit, output_reg — ``--items nx`` runs those
only; ``clone``: runs of apply-actions wrapped in clone(...); ``output_trunc``:
output(port=P,max_len=N) among them; ``conjunction``: conjunction actions and conj_id, drawn as whole conjunctive
blocks inside random rule sets; ``multipath``, ``bundle``, ``bundle_load``, whose
bundle rule sets run with random ports set down on both sides; ``output_reg_runtime``: output_reg of a register
only the pipeline sets; ``group_resubmit``: groups whose buckets resubmit; ``group_clone``,
``group_check_trunc``: groups whose buckets hold clone, or check_pkt_larger and output_trunc; ``write_output_table``,
``write_resubmit0``: lookups in table 0 written into the action set; ``bucket_output_table``,
``bucket_resubmit0``: groups whose buckets look table 0 up; ``output_reg_table``: output_reg
of TABLE's number) it draws rule
sets in which every rule uses the item (``--per-item`` rules in all) and
packets built to hit them, then checks (1) the emulator's switch (dp-core)
against one Open vSwitch bridge and (2) OneSwitch's translation against the
virtual switch (both in OVS, four topologies with k = 2 and 3). Every port's
output must be byte-identical. Prints one line per item and oracle and the
totals; exit 1 on any mismatch. Needs Open vSwitch.
``long:tun_metadata`` (options mapped 16..124 bytes) runs in dp-core with its matches
narrowed to bits 0..119 of an option, as the emulator backend matches them (its actions whole).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available
from tandem.oneswitch.topology import Topology
from tandem.testing.of13_oracle import ITEMS, NX_ITEMS, run_dp, run_translation

TOPOS = {
    "k3": Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                         [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                         {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"}),
    "k2": Topology.build({"host": "host", "snic0": "snic"}, [("host:200", "snic0:7")],
                         {1: "host:1", 2: "host:2", 3: "host:3", 5: "snic0:1", 6: "snic0:2"}),
    "k3wide": Topology.build({"hv": "host", "a": "snic", "b": "snic"}, [("hv:50", "a:50"), ("hv:51", "b:50")],
                             {10: "hv:1", 11: "a:1", 12: "a:2", 13: "b:1", 14: "b:2"}),
    "transit": Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("h:2", "s1:9")],
                              {1: "s0:1", 2: "s0:2", 3: "s1:1"}),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-item", type=int, default=2000, help="rules that use each item, per oracle")
    ap.add_argument("--only", choices=("dp", "translation"), help="run one oracle only")
    ap.add_argument("--items", default="", help="comma-separated items, or nx for Open vSwitch's extensions (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set-size", type=int, default=500, help="rules per rule set")
    ap.add_argument("--packets", type=int, default=100, help="packets per rule set (dp-core oracle)")
    ap.add_argument("--per-port", type=int, default=20, help="packets per virtual port per rule set (translation)")
    ap.add_argument("--show", type=int, default=5, help="mismatches to print in full")
    a = ap.parse_args()
    if not ovs_available():
        print("error: Open vSwitch is not installed (make test installs openvswitch-switch)", file=sys.stderr)
        return 2
    items = list(NX_ITEMS) if a.items == "nx" else [i for i in a.items.split(",") if i] or list(ITEMS)
    unknown = [i for i in items if i not in ITEMS]
    if unknown:
        print(f"error: unknown item(s) {', '.join(unknown)}; known: {', '.join(ITEMS)}", file=sys.stderr)
        return 2
    print(f"of13 oracle: {len(items)} items x {a.per_item} rules per oracle; load {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.monotonic()
    results = {}
    with OvsSandbox() as sb:
        if a.only in (None, "dp"):
            results["dp-core vs OVS"] = run_dp(sb, items, a.per_item, a.seed, a.set_size, a.packets,
                                             log=lambda s: print(s, flush=True))
        if a.only in (None, "translation"):
            results["translation vs OVS"] = run_translation(sb, TOPOS, items, a.per_item, a.seed, a.set_size,
                                                            a.per_port, log=lambda s: print(s, flush=True))
    bad = []
    for name, res in results.items():
        rules = sum(r.rules for r in res.values())
        packets = sum(r.packets for r in res.values())
        frames = sum(r.frames for r in res.values())
        mism = [m for r in res.values() for m in r.mismatches]
        least = min(r.item_rules for r in res.values())
        print(f"{name}: {len(res)} items, >= {least} rules using each, {rules} rules, {packets} packets, "
              f"{frames} frames out, {len(mism)} mismatches")
        bad += mism
    print(f"total {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}")
    for m in bad[: a.show]:
        print("---", m)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
