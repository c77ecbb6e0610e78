"""Minimal ICMP echo ("ping") for the namespace tests, so they need no iputils.

Usage (as root, typically under ``ip netns exec NS``):
    python pyping.py DST_IP [TIMEOUT_S]
Exit status 0 when an echo reply from DST_IP arrives within the timeout.
"""

import os
import select
import socket
import struct
import sys
import time


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ping(dst: str, timeout: float) -> bool:
    ident = os.getpid() & 0xFFFF
    payload = b"tandem-ping-" + struct.pack("!d", time.time())
    header = struct.pack("!BBHHH", 8, 0, 0, ident, 1)
    packet = struct.pack("!BBHHH", 8, 0, checksum(header + payload), ident, 1) + payload
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as s:
        s.sendto(packet, (dst, 0))
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([s], [], [], left)[0]:
                return False
            data, (src, _) = s.recvfrom(2048)
            ihl = (data[0] & 0x0F) * 4
            icmp_type, _, _, rid, _ = struct.unpack_from("!BBHHH", data, ihl)
            if src == dst and icmp_type == 0 and rid == ident:
                return True
    return False


if __name__ == "__main__":
    sys.exit(0 if ping(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 1.0) else 1)
