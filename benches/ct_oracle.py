"""OVS oracle for connection tracking (ct, ct_clear, the ct_* matches).

  tandem bench ct_oracle [--rules 2000] [--set-size 200] [--conns 24] [--only dp|translation] [--newer K] [--recirc-id]
                         [--nat] [--focus ct_tp_hidden|ct_table0|recirc_id|write_ct_table0|clone_ct_clear|clone_ct|lookup_ct|ct_table_in_clone]
                         [--tcp-odd P] [--icmp-errors P] [--bucket-ct] [--alg P] [--alg-number Q]

Random rule sets in which every rule uses connection tracking (generate_ct.py)
and connection traces between virtual ports (UDP, TCP handshakes with data, FIN
and RST, ICMP/ICMPv6 echo, GRE, stray segments; each direction entering on its
own port), replayed round by round: (1) the emulator's switch (dp-core's
tracker) against one Open vSwitch bridge, (2) OneSwitch's translation (every
sNIC port extended to the host while a ct rule exists) against the virtual
switch, on a host + 2 sNIC topology and a chain, the client and server of most
connections on different switches. Every output frame must be byte-identical and
charged to the same packet. Prints one line per rule set and the totals; exit 1
on any mismatch. Needs Open vSwitch. ``--recirc-id``: about 30 % of the rules
also match ``recirc_id=0`` (met on arrival in table 0, never by a copy ct(table=T)
recirculated). ``--nat``: about 70 % of the ct actions also translate addresses
(``generate_ct_nat.py``: ranges of one address and one or no port) and most IPv4
connections' replies come back to the translated addresses; the count of rules
using ``nat`` is printed.
``--focus FORM``: every rule but the skeleton uses FORM
(generate_ct_focus.py); the count of rules using it is printed per oracle.
``--tcp-odd P``: about P of the connections test the TCP window checks
(generate_ct_tcp.py: segments past or behind the window, RSTs off the sequence,
acknowledgements far ahead, mid-stream pickups, window scaling).
``--bucket-ct``: half the rules apply groups with ct / ct_clear in their buckets
(generate_ct_bucket.py), in both oracles (the translation homes every port while a
group holds ct: oneswitch/bucket_ct.py); the count of rules applying such a group is
printed. With ``--nat`` the dp-core oracle's groups also translate in about half their
buckets' commits (``generate_ct_bucket.with_bucket_nat``, IPv4 ranges that IPv6 packets
meet too; dp-core ``pipeline/bucket_nat.rs``), counted as printed.
``--icmp-errors P``: about P of the connections carry an ICMP error about one of
their packets (generate_ct_icmp.py: +rel, or +inv about no connection), and a rule
per IP version outputs +rel packets.
``--alg P``: rule sets committing ``ct(alg=ftp|tftp)`` (generate_ct_alg.py: new
connections to TCP 21 / UDP 69, and ALG copies of about a third of the rules with a
ct; no ``force``) and about P of the connections FTP control conversations (PORT /
227 over IPv4, EPRT / 229 over IPv6, some malformed) with their data connections, or
TFTP reads; megaflows are off on every bridge (OVS decides which packets are ALG
control packets by the datapath flow's ports: a megaflow made by another packet could
lend other ports). The count of rules using ``alg`` is printed.
``--alg-number Q``: about Q of the ct actions get an alg number Open vSwitch runs no
ALG for (``alg=80``: generate_ct_alg_number.py); the count of rules using one is printed.
``--alg P --nat``: the ALG rule sets with nats (``ct(commit,alg=ftp|tftp,nat(...))``, expected
connections committed with a nat: generate_ct_alg_nat.py) and the conversations in the
NAT flavours; the count of rules with an alg (and with ftp) beside a nat is printed, and dp-core's count
of FTP messages it rewrote and packets whose numbers it shifted (ftp_rewritten, ftp_shifted).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

from collections import Counter

from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available
from tandem.rules.ct_shown import ct_ports_hidden
from tandem.rules.ir import Ct, CtClear, WriteActions
from tandem.rules.generate_ct import ct_ruleset
from tandem.rules.generate_ct_tcp import ct_traces
from tandem.rules.generate_ct_nat import nat_ruleset, nat_traces, uses_nat
from tandem.rules.generate_ct_bucket import bucket_ct_ruleset, uses_bucket_ct, uses_bucket_nat, with_bucket_nat
from tandem.rules.generate_ct_icmp import icmp_traces, with_rel_rules
from tandem.rules.generate_ct_focus import FOCUS, focused_ct_ruleset, uses as focus_uses
from tandem.rules.generate_fields import with_recirc_id
from tandem.rules.generate_ct_alg import alg_ruleset, alg_traces, uses_alg
from tandem.rules.generate_ct_alg_number import uses_alg_number, with_alg_numbers
from tandem.rules.generate_ct_alg_nat import alg_nat_ruleset, alg_nat_traces, uses_alg_nat
from tandem.testing.ct_oracle import cross_pairs, ct_topologies, dp_core_vs_ovs, translation_vs_ovs

TOPOS = ct_topologies()
DP_PORTS = [1, 2, 3, 4]
NEWER = ("written ct/ct_clear", "ct back into its own or an earlier table", "ct(table=0)", "ct_tp without ct_nw_proto")


def newer_forms(rules) -> Counter:
    """How many of ``rules`` use each of the forms added last."""
    out: Counter = Counter()
    for r in rules:
        written = [a for i in r.instructions if type(i) is WriteActions for a in i.actions]
        back = [a for a in r.apply_actions if type(a) is Ct and a.table is not None and a.table <= r.table]
        out[NEWER[0]] += any(type(a) in (Ct, CtClear) for a in written)
        out[NEWER[1]] += bool(back)
        out[NEWER[2]] += any(a.table == 0 for a in back)
        out[NEWER[3]] += ct_ports_hidden(r.match)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", type=int, default=2000, help="rules in all, per oracle")
    ap.add_argument("--set-size", type=int, default=200, help="rules per rule set")
    ap.add_argument("--conns", type=int, default=24, help="connections per rule set")
    ap.add_argument("--only", choices=("dp", "translation"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--recirc-id", action="store_true", help="add recirc_id=0 to about 30 %% of the rules")
    ap.add_argument("--newer", type=float, default=1.0, help="scale the share of the forms added last (ct / ct_clear "
                    "written into the action set, recirculation back, ct_tp_* without ct_nw_proto)")
    ap.add_argument("--nat", action="store_true", help="ct actions with nat, and traces answering translated addresses")
    ap.add_argument("--focus", choices=FOCUS, help="every rule but the skeleton uses this form")
    ap.add_argument("--tcp-odd", type=float, default=0.0, help="share of connections that test the TCP window checks")
    ap.add_argument("--bucket-ct", action="store_true", help="groups with ct in their buckets")
    ap.add_argument("--icmp-errors", type=float, default=0.0, help="share of connections with an ICMP error")
    ap.add_argument("--alg", type=float, default=0.0, help="share of FTP / TFTP conversations (rules commit ct(alg=...))")
    ap.add_argument("--alg-number", type=float, default=0.0, help="share of ct actions with an alg number OVS runs no ALG for")
    ap.add_argument("--show", type=int, default=5)
    a = ap.parse_args()
    if not ovs_available():
        print("error: Open vSwitch is not installed (make test installs openvswitch-switch)", file=sys.stderr)
        return 2
    print(f"ct oracle: {a.rules} rules per oracle, {a.set_size} per set; load {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.monotonic()
    bad: list[str] = []
    uses: Counter = Counter()
    dp_counters: dict = {}
    ruleset, traces = (nat_ruleset, nat_traces) if a.nat else (ct_ruleset, ct_traces)
    if a.icmp_errors:
        base = ruleset
        ruleset = lambda rng, n, ports, newer: with_rel_rules(rng, base(rng, n, ports, newer), ports)  # noqa: E731
        traces = lambda rng, pairs, n, odd: icmp_traces(rng, pairs, n, odd, a.icmp_errors, a.nat)  # noqa: E731
    if a.alg:
        ruleset = lambda rng, n, ports, newer: with_rel_rules(rng, alg_ruleset(rng, n, ports, newer), ports)  # noqa: E731
        traces = lambda rng, pairs, n, odd: alg_traces(rng, pairs, n, odd, a.alg)  # noqa: E731
    if a.alg and a.nat:
        ruleset = lambda rng, n, ports, newer: with_rel_rules(rng, alg_nat_ruleset(rng, n, ports, newer), ports)  # noqa: E731
        traces = lambda rng, pairs, n, odd: alg_nat_traces(rng, pairs, n, odd, a.alg)  # noqa: E731
    if a.alg_number:
        numbered = ruleset
        ruleset = lambda rng, n, ports, newer: with_alg_numbers(rng, numbered(rng, n, ports, newer), a.alg_number)  # noqa: E731
    for oracle in ("dp", "translation"):
        if a.only not in (None, oracle):
            continue
        rules = packets = frames = sets = 0
        while rules < a.rules:
            rng = random.Random(a.seed * 100_003 + sets + (0 if oracle == "dp" else 50_000))
            if oracle == "dp":
                groups: list = []
                if a.bucket_ct:
                    rs, groups = bucket_ct_ruleset(rng, a.set_size, DP_PORTS, ruleset)
                    groups = with_bucket_nat(rng, groups) if a.nat else groups
                    uses[oracle, "bucket_ct"] += sum(map(uses_bucket_ct, rs))
                    uses[oracle, "bucket_nat"] += sum(map(uses_bucket_nat, groups))
                else:
                    rs = ruleset(rng, a.set_size, DP_PORTS, a.newer) if not a.focus else focused_ct_ruleset(rng, a.set_size, DP_PORTS, a.focus)
                rs = with_recirc_id(rng, rs) if a.recirc_id else rs
                rounds = traces(rng, [(x, y) for x in DP_PORTS for y in DP_PORTS if x != y], a.conns, a.tcp_odd)
                with OvsSandbox() as sb:
                    if a.alg:
                        sb.appctl("upcall/disable-megaflows")
                    n, f, miss = dp_core_vs_ovs(sb, rs, rounds, DP_PORTS, groups=groups, counters=dp_counters)
                where = "dp-core"
            else:
                name = ("k3", "chain")[sets % 2]
                topo = TOPOS[name]
                groups = []
                if a.bucket_ct:
                    rs, groups = bucket_ct_ruleset(rng, a.set_size, sorted(topo.port_map), ruleset)
                    uses[oracle, "bucket_ct"] += sum(map(uses_bucket_ct, rs))
                else:
                    rs = (ruleset(rng, a.set_size, sorted(topo.port_map), a.newer) if not a.focus
                          else focused_ct_ruleset(rng, a.set_size, sorted(topo.port_map), a.focus))
                rs = with_recirc_id(rng, rs) if a.recirc_id else rs
                rounds = traces(rng, cross_pairs(topo), a.conns, a.tcp_odd)
                _, rep = translation_vs_ovs(topo, rs, rounds, groups, megaflows=not a.alg)
                n, f, miss = rep.packets, rep.outputs, [str(m) for m in rep.mismatches]
                where = f"translation {name}"
            sets += 1
            rules += len(rs)
            packets += n
            frames += f
            bad += miss
            used = newer_forms(rs)
            for k, v in used.items():
                uses[oracle, k] += v
            uses[oracle, "nat"] += sum(map(uses_nat, rs))
            uses[oracle, "alg"] += sum(map(uses_alg, rs))
            uses[oracle, "alg number"] += sum(map(uses_alg_number, rs))
            uses[oracle, "alg with nat"] += sum(map(uses_alg_nat, rs))
            uses[oracle, "ftp with nat"] += sum(uses_alg_nat(r, ("ftp",)) for r in rs)
            if a.focus:
                uses[oracle, a.focus] += sum(focus_uses(r, a.focus) for r in rs)
            print(f"  {where} set {sets}: {len(rs)} rules, {n} packets, {f} frames out, {len(miss)} mismatches", flush=True)
        label = "dp-core vs OVS" if oracle == "dp" else "translation vs OVS"
        print(f"  rules using: " + ", ".join(f"{k} {uses[oracle, k]}" for k in NEWER + ("nat", "alg", "alg number", "alg with nat", "ftp with nat")), flush=True)
        if a.focus:
            print(f"  rules using the focus {a.focus}: {uses[oracle, a.focus]}", flush=True)
        if a.bucket_ct:
            print(f"  rules applying a group with ct in its buckets: {uses[oracle, 'bucket_ct']}", flush=True)
            if a.nat and oracle == "dp":
                print(f"  groups with a nat in a bucket's commit: {uses[oracle, 'bucket_nat']}", flush=True)
        if a.alg and oracle == "dp":
            print("  dp-core's ALG verdicts: " + ", ".join(f"{k.removeprefix('ct.alg.')} {v}" for k, v in dp_counters.items()
                                                          if k.startswith("ct.alg.")), flush=True)
        print(f"{label}: {sets} rule sets, {rules} rules (every one uses ct), {packets} packets, {frames} frames out, "
              f"{len([m for m in bad])} mismatches so far", flush=True)
    print(f"total {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}")
    for m in bad[: a.show]:
        print("---", m)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
