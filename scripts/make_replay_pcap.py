#!/usr/bin/env python3
"""Write the small recording that `examples/replay-pcap.yaml` replays.

Output: `examples/pcap/branch-office.pcap` (or the path given as the only
argument): 23 Ethernet frames (15 KB) of three conversations (DNS lookups, an
HTTPS upload in full-size segments with the server's ACKs, VoIP-like RTP every
20 ms) with irregular recorded gaps from 6 µs to 12.6 ms over a 40.4 ms span,
wall-clock timestamps from 2026-11-23 12:00:00 UTC, classic pcap with µs
timestamps. Deterministic: a fixed seed, fixed addresses, no clock reads, so
re-running it rewrites the same bytes. Needs scapy (in the project's .venv).

    .venv/bin/python scripts/make_replay_pcap.py
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from scapy.layers.dns import DNS, DNSQR
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

START = 1_795_435_200  # 2026-11-23 12:00:00 UTC
OUT = Path(__file__).resolve().parents[1] / "examples" / "pcap" / "branch-office.pcap"


def frames() -> list:
    rng = random.Random(6)
    eth = Ether(src="02:00:00:00:01:01", dst="02:00:00:00:00:fe")
    out: list[tuple[float, object]] = []
    for k, t in enumerate((0.0, 0.020, 0.040)):  # RTP: 200-byte voice frames every 20 ms
        for j in range(3):
            at = t + j * 0.0002
            out.append((at, eth / IP(src="10.1.0.7", dst="192.0.2.10") / UDP(sport=16384, dport=16386)
                        / Raw(bytes([k * 3 + j]) * 160)))
    for k, t in enumerate((0.001, 0.033)):  # DNS lookups
        out.append((t, eth / IP(src="10.1.0.7", dst="192.0.2.53") / UDP(sport=40000 + k, dport=53)
                    / DNS(id=k + 1, rd=1, qd=DNSQR(qname=f"host{k}.example.net"))))
    t, seq = 0.004, 1000
    for k in range(9):  # an upload: 1448-byte segments in bursts, with the server's ACKs
        t += rng.choice((12e-6, 15e-6, 40e-6, 2.5e-3))
        out.append((t, eth / IP(src="10.1.0.7", dst="198.51.100.4") / TCP(sport=51000, dport=443, flags="PA", seq=seq)
                    / Raw(bytes([65 + k % 26]) * 1448)))
        seq += 1448
        if k % 3 == 2:
            out.append((t + 30e-6, Ether(src="02:00:00:00:00:fe", dst="02:00:00:00:01:01")
                        / IP(src="198.51.100.4", dst="10.1.0.7") / TCP(sport=443, dport=51000, flags="A", ack=seq)))
    out.sort(key=lambda x: x[0])
    pkts = []
    for at, p in out:
        p.time = START + round(at * 1e6) / 1e6  # whole µs, as the file stores them
        pkts.append(p)
    return pkts


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    path.parent.mkdir(parents=True, exist_ok=True)
    pkts = frames()
    wrpcap(str(path), pkts)
    print(f"wrote {path}: {len(pkts)} frames, {sum(len(p) for p in pkts)} bytes")


if __name__ == "__main__":
    main()
