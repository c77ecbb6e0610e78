"""PACKET_OUT oracle: random PACKET_OUTs holding clone(…) against one Open vSwitch bridge.

  tandem bench packet_out_oracle [--packet-outs 2000] [--only dp|translation] [--seed 0] [--batch 20] [--bundles]
                                 [--packet-ins] [--truncs] [--nsh-ttl] [--encap] [--meters] [--tun-long] [--table [--continued]]
                                 [--ct-groups [--nat]] [--whole [--whole-tun]] [--output-regs]

Each PACKET_OUT (``tandem.testing.packet_out_oracle.random_packet_out``) carries
field sets, a VLAN push, outputs to ports, IN_PORT, FLOOD and ALL, group calls,
notes, exits, check_pkt_larger into a register (shown in the frame by a move)
and at least one clone (nested up to two deep) from a port or
CONTROLLER; the same groups are on both sides. It checks (1) dp-core, running
the list as the emulator backend runs a PACKET_OUT, and (2) OneSwitch's
endpoint over OVS bridges (a host switch and two sNICs) against the plain
bridge: every port's frames must be byte-identical, and both must take every
PACKET_OUT. ``--bundles``: PACKET_OUTs with bundle / bundle_load (each load shown
by a move into the frame) instead of clones, with random ports set down on both
sides per batch (OneSwitch learns it from its bridges' PORT_STATUS). ``--packet-ins``: also
outputs to CONTROLLER and ``controller(…)`` after changes to the frame, pkt_mark, metadata,
tunnel_id, the other tunnel fields and registers, and ct_clear, at the top and in clones;
OneSwitch's packet-ins must be the plain bridge's byte for byte (each batch in one of the three
packet-in formats in turn: OpenFlow's, NXT_PACKET_IN, NXT_PACKET_IN2), dp-core's show the same frame and state. ``--truncs``: also
``output(port=P,max_len=N)`` to ports and IN_PORT, in clones too, and groups whose buckets push
or pop VLAN tags and output_reg (``tandem.testing.packet_out_trunc``); with ``--bundles`` bundles too. ``--nsh-ttl``: NSH
frames (TTL 0 to 63), one to three dec_nsh_ttl (after changes, in clones, after a set
of nsh_ttl) and group buckets holding it; invalid_ttl packet-ins compared too
(``tandem.testing.packet_out_nsh_ttl``). ``--meters`` (with ``--packet-ins``): most
``controller(…)`` packet-ins name a meter, fresh pktps meters per batch; dp-core and OneSwitch must pass the
same ones and count the same (``tandem.testing.packet_out_meters``). ``--encap``: the SFC encap pattern in every
PACKET_OUT, where the endpoint carries it out (``tandem.testing.packet_out_encap``). ``--tun-long``
(dp-core only): a long tun_metadata option written first in every PACKET_OUT
(``tandem.testing.packet_out_tun_long``). ``--table`` (translation only): every PACKET_OUT ends in
``output:TABLE`` and each batch meets fresh random rules in tables 0 and 1 (``tandem.testing.packet_out_table``);
with ``--continued`` (also ``--only dp``: ``tandem.testing.packet_out_continued``) lists go on after the TABLE
and write state before it, sent whole to the host.
``--whole`` (translation, with ``--packet-ins``): instead, PACKET_OUTs the endpoint sends whole to the
host switch, every port homed first: ct and check_pkt_larger before packet-ins, check_pkt_larger into
header fields (``tandem.testing.packet_out_whole``; with ``--only dp`` dp-core's ``Pipeline::packet_out``,
registers only: ``packet_out_whole_dp``). ``--whole-tun`` (with ``--whole --only translation``): one TLV map on both
sides, and half the changes writes to its options (set_field, load, move; a delete_field now and then) before the
packet-ins. ``--output-regs`` (with ``--packet-ins``): one or two output_reg at the end of every PACKET_OUT, from
in_port, metadata, tunnel_id, pkt_mark, xxreg0 and header fields, some holding CONTROLLER's number
(``tandem.testing.packet_out_output_reg``). ``--ct-groups``:
instead, connection-tracking rule sets and groups with ct in their buckets, and PACKET_OUTs of
connection traces' packets that apply them (``tandem.testing.packet_out_ct_group``; ``--nat``: with
nats in the rules and buckets), (1) dp-core running each on its own pipeline, as the emulator
backend's host does, and (2) OneSwitch over OVS, against one bridge in its own vswitchd: frames,
packet-ins and the tracker's connections compared. Prints one
line per check; exit 1 on any mismatch. Needs Open vSwitch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available
from tandem.testing.bench import oracle_exit
from tandem.testing.packet_out_meters import SLOW_S
from tandem.testing.packet_out_oracle import run_dp, run_translation


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packet-outs", type=int, default=2000, help="PACKET_OUTs per check")
    ap.add_argument("--only", choices=("dp", "translation"), help="run one check only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=20, help="PACKET_OUTs per group set and comparison")
    ap.add_argument("--show", type=int, default=3, help="mismatches to print in full")
    ap.add_argument("--bundles", action="store_true", help="bundle / bundle_load with ports down, not clones")
    ap.add_argument("--nsh-ttl", action="store_true", help="NSH frames and a dec_nsh_ttl in every PACKET_OUT")
    ap.add_argument("--packet-ins", action="store_true", help="also packet-ins after changes (compared too)")
    ap.add_argument("--truncs", action="store_true", help="also output(port=P,max_len=N), groups that push/pop")
    ap.add_argument("--encap", action="store_true", help="the SFC encap pattern in every PACKET_OUT (packet_out_encap)")
    ap.add_argument("--meters", action="store_true", help="with --packet-ins: metered packet-ins and meter counters "
                    "(packet_out_meters)")
    ap.add_argument("--tun-long", action="store_true",
                    help="a long tun_metadata option written first in every PACKET_OUT (dp-core only: packet_out_tun_long)")
    ap.add_argument("--table", action="store_true", help="every PACKET_OUT ending in output:TABLE, random table rules "
                    "(packet_out_table; with --only translation)")
    ap.add_argument("--continued", action="store_true", help="with --table: lists going on after output:TABLE, "
                    "state written before it (packet_out_table.random_continued; dp-core: packet_out_continued)")
    ap.add_argument("--whole", action="store_true", help="PACKET_OUTs sent whole to the host: packet-ins after ct "
                    "and check_pkt_larger, check_pkt_larger into header fields (packet_out_whole; --only translation or dp)")
    ap.add_argument("--whole-tun", action="store_true", help="with --whole: a TLV map, writes to tun_metadata and "
                    "delete_field before the packet-ins (packet_out_whole; --only translation)")
    ap.add_argument("--output-regs", action="store_true", help="with --packet-ins: output_reg from other fields than "
                    "registers, CONTROLLER's number (packet_out_output_reg)")
    ap.add_argument("--ct-groups", action="store_true", help="PACKET_OUTs applying groups with ct in a bucket")
    ap.add_argument("--nat", action="store_true", help="with --ct-groups: nats in the rules and buckets")
    a = ap.parse_args()
    if a.ct_groups:
        return _ct_groups(a)
    if a.tun_long and (a.packet_ins or a.only != "dp"):  # (a packet-in after a write to tun_metadata is refused)
        print("error: --tun-long runs with --only dp and without --packet-ins", file=sys.stderr)
        return 2
    if a.truncs and a.packet_ins:  # (OneSwitch refuses a packet-in after output_trunc, and its clones)
        print("error: --truncs runs without --packet-ins", file=sys.stderr)
        return 2
    if a.table and a.only != "translation" and not (a.continued and a.only == "dp"):
        print("error: --table runs with --only translation (--continued: also --only dp)", file=sys.stderr)
        return 2
    if a.whole_tun and (not a.whole or a.only != "translation"):
        print("error: --whole-tun runs with --whole --only translation (the emulator refuses them)", file=sys.stderr)
        return 2
    if a.whole and (a.only is None or not a.packet_ins):
        print("error: --whole runs with --only translation or --only dp, and --packet-ins", file=sys.stderr)
        return 2
    if a.output_regs and (not a.packet_ins or a.truncs or a.bundles or a.whole or a.table or a.encap or a.nsh_ttl):
        print("error: --output-regs runs with --packet-ins alone (a CONTROLLER number after other changes is refused)",
              file=sys.stderr)
        return 2
    if a.meters and not a.packet_ins:
        print("error: --meters runs with --packet-ins", file=sys.stderr)
        return 2
    if not ovs_available():
        print("error: Open vSwitch is not installed (make test installs openvswitch-switch)", file=sys.stderr)
        return 2
    print(f"packet_out oracle: {a.packet_outs} PACKET_OUTs per check; load {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.monotonic()
    bad: list[str] = []
    if a.continued:  # (packet_out_table.random_continued; dp-core: packet_out_continued.py)
        from tandem.testing.packet_out_continued import run_dp_continued

        dp = lambda sb, n, seed, batch, *rest, **more: run_dp_continued(sb, n, seed, batch)  # noqa: E731
    for name, run in (("dp-core vs OVS", dp if a.continued else run_dp), ("translation vs OVS", run_translation)):
        if a.only not in (None, name.split()[0].split("-")[0]):
            continue
        if a.whole and run is run_dp:  # (dp-core's Pipeline::packet_out, one tracker: packet_out_whole_dp.py)
            from tandem.testing.packet_out_whole_dp import run_dp_whole

            run = lambda sb, n, seed, batch, *_, **__: run_dp_whole(sb, n, seed, batch)  # noqa: E731
        with OvsSandbox() as sb:
            more = ({"meters": True} if a.meters else {}) | ({"tun_long": True} if a.tun_long else {}) \
                | ({"table": True} if a.table else {}) | ({"whole": True} if a.whole else {}) \
                | ({"continued": True} if a.continued and name.startswith("translation") else {}) \
                | ({"whole_tun": True} if a.whole_tun else {}) | ({"output_regs": True} if a.output_regs else {})
            r = run(sb, a.packet_outs, a.seed, a.batch, a.bundles, a.packet_ins, a.truncs, a.nsh_ttl, encap=a.encap, **more)
        print(f"{name}: {r.packet_outs} PACKET_OUTs, {r.clones} clones, {r.bundles} bundles, {r.checks} check_pkt_larger, {r.truncs} output_trunc, {r.groups} groups, {r.output_regs} output_reg, "
              f"{r.frames} frames out, {r.packet_ins} packet-ins ({r.nx_packet_ins} in Nicira's formats), "
              + (f"{r.metered} metered packet-ins ({r.slow} batches over {SLOW_S} s), " if a.meters else "")
              + (f"{r.tables} ending in output:TABLE, " if a.table else "")
              + f"{len(r.mismatches)} mismatches", flush=True)
        bad += r.mismatches
    return oracle_exit(t0, bad, a.show)


def _ct_groups(a: argparse.Namespace) -> int:
    from tandem.testing.packet_out_ct_group import run_ct_groups, run_dp_ct_groups

    if not ovs_available():
        print("error: Open vSwitch is not installed (make test installs openvswitch-switch)", file=sys.stderr)
        return 2
    print(f"packet_out oracle, groups with ct: {a.packet_outs} PACKET_OUTs; load {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.monotonic()
    bad: list[str] = []
    for name, run in (("dp-core vs OVS", run_dp_ct_groups), ("translation vs OVS", run_ct_groups)):
        if a.only not in (None, name.split()[0].split("-")[0]):
            continue
        r = run(a.packet_outs, a.seed, a.batch, nat=a.nat, **({"packet_ins": True} if a.packet_ins else {}))
        print(f"{name}: {r.packet_outs} PACKET_OUTs, {r.group_calls} group calls, {r.recirculating} applying a group "
              f"with ct(table=T), {r.nat_groups} one with a nat, {r.frames} frames out, {r.packet_ins} packet-ins, "
              f"{r.connections} connections compared, {len(r.mismatches)} mismatches", flush=True)
        bad += r.mismatches
    return oracle_exit(t0, bad, a.show)


if __name__ == "__main__":
    sys.exit(main())
