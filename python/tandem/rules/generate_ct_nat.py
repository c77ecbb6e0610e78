"""Random connection-tracking rule sets with Open vSwitch's ``nat``, and traces whose
replies come back to the translated addresses, for the OVS oracles (``ct_oracle --nat``).

``nat_ruleset(rng, n, ports)``: ``generate_ct.ct_ruleset``'s rules, each ``ct`` then given
a ``nat`` with probability ``share`` (0.9): a commit ``nat(src=SNAT_ADDR[:SNAT_PORT])``
or ``nat(dst=DNAT_ADDR[:DNAT_PORT])`` (IPv6 rules: ``SNAT6``, ``DNAT6``), ranges of one
address and one or no port, so that Open vSwitch's choice is reproducible (no hash
with a random basis decides it), now and
then with ``persistent``, ``hash`` or ``random``, which then change nothing; any other ct
a bare ``nat``, which applies an established connection's translation.

``nat_traces(rng, pairs, n)``: ``generate_ct``'s connections, each IP one in one of
three flavours: plain; *snat* (the server answers ``SNAT_ADDR`` / ``SNAT6``, on the client's port or
``SNAT_PORT``), as after a source translation; *dnat* (the client sends to
``DNAT_VIP``, the answers come from ``DNAT_ADDR``, on the server's port or ``DNAT_PORT``),
as after a destination translation. A packet some rule did not translate the way its
trace expects is just another connection's: the oracle compares whatever happens.
Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
import struct
from dataclasses import replace

from .generate_ct import as_rounds, ct_ruleset
from .generate_ct_tcp import mixed_connections
from .ir import ApplyActions, Ct, CtNat, Rule, WriteActions
from .packets import checksum16

SNAT_ADDR, SNAT_PORT = 0x0A000009, 40000
DNAT_VIP, DNAT_ADDR, DNAT_PORT = 0x0A000064, 0x0A000008, 8080
# (the same for IPv6: 2001:db8::9, ::64, ::8)
SNAT6, DNAT6_VIP, DNAT6 = (0x20010DB8 << 96) | 9, (0x20010DB8 << 96) | 0x64, (0x20010DB8 << 96) | 8


def _nat_for(rng: random.Random, ct: Ct, eth: int | None) -> CtNat:
    if not (ct.commit and eth in (0x0800, 0x86DD)) or rng.random() < 0.15:
        return CtNat()
    v6 = eth == 0x86DD
    flags = {k: True for k in rng.sample(("persistent", "hash", "random"), rng.choice((0, 0, 1)))}
    if rng.random() < 0.5:
        return CtNat("src", SNAT6 if v6 else SNAT_ADDR, v6=v6, port_min=SNAT_PORT if rng.random() < 0.3 else None,
                     **flags)
    return CtNat("dst", DNAT6 if v6 else DNAT_ADDR, v6=v6, port_min=DNAT_PORT if rng.random() < 0.4 else None, **flags)


def with_nat(rng: random.Random, rules: list[Rule], share: float = 0.9) -> list[Rule]:
    """``rules`` with a ``nat`` added to each ct (applied or written) with probability ``share``."""
    out = []
    for r in rules:
        fm = dict(r.match.fields).get("eth_type")
        eth = fm.value if fm is not None and fm.mask is None else None
        ins = []
        for i in r.instructions:
            if type(i) in (ApplyActions, WriteActions):
                acts = tuple(replace(a, nat=_nat_for(rng, a, eth)) if type(a) is Ct and rng.random() < share else a
                             for a in i.actions)
                i = type(i)(acts)
            ins.append(i)
        out.append(replace(r, instructions=tuple(ins)))
    return out


def nat_ruleset(rng: random.Random, n: int, ports: list[int], newer: float = 1.0, share: float = 0.9) -> list[Rule]:
    return with_nat(rng, ct_ruleset(rng, n, ports, newer), share)


def uses_nat(rule: Rule) -> bool:
    return any(type(a) is Ct and a.nat is not None for i in rule.instructions
               if type(i) in (ApplyActions, WriteActions) for a in i.actions)


def _rewrite(frame: bytes, src: int | None = None, dst: int | None = None, sport: int | None = None,
             dport: int | None = None) -> bytes:
    """An IPv4 or IPv6 frame with new addresses / TCP-UDP ports, its checksums recomputed."""
    f = bytearray(frame)
    v6 = f[12:14] == b"\x86\xdd"
    width, at_src = (16, 22) if v6 else (4, 26)
    if src is not None:
        f[at_src:at_src + width] = src.to_bytes(width, "big")
    if dst is not None:
        f[at_src + width:at_src + 2 * width] = dst.to_bytes(width, "big")
    if v6:
        proto, l4, end = f[20], 54, 54 + struct.unpack_from("!H", f, 18)[0]
    else:
        ihl = (f[14] & 0xF) * 4
        proto, l4, end = f[23], 14 + ihl, 14 + struct.unpack_from("!H", f, 16)[0]
        f[24:26] = b"\0\0"
        f[24:26] = struct.pack("!H", checksum16(bytes(f[14:14 + ihl])))
    if proto in (6, 17):
        if sport is not None:
            f[l4:l4 + 2] = struct.pack("!H", sport)
        if dport is not None:
            f[l4 + 2:l4 + 4] = struct.pack("!H", dport)
    off = {6: 16, 17: 6, 58: 2}.get(proto)  # (where the checksum over the pseudo-header sits)
    at = l4 + (off or 0)
    if off is None or (proto == 17 and not v6 and f[at:at + 2] == b"\0\0"):
        return bytes(f)
    f[at:at + 2] = b"\0\0"
    seg = bytes(f[l4:end])
    addrs = bytes(f[at_src:at_src + 2 * width])
    pseudo = addrs + (struct.pack("!IxxxB", len(seg), proto) if v6 else struct.pack("!BBH", 0, proto, len(seg)))
    c = checksum16(pseudo + seg)
    f[at:at + 2] = struct.pack("!H", c if c or proto != 17 else 0xFFFF)
    return bytes(f)


FLAVOURS = ("plain", "snat", "snat", "dnat", "dnat")


def _flavour(rng: random.Random, conn: list[tuple[int, bytes]], kind: str | None = None) -> list[tuple[int, bytes]]:
    """``conn`` in the flavour ``kind`` (None: one drawn from ``FLAVOURS``)."""
    client = conn[0][0]
    v6 = struct.unpack_from("!H", conn[0][1], 12)[0] == 0x86DD
    snat, vip, dnat = (SNAT6, DNAT6_VIP, DNAT6) if v6 else (SNAT_ADDR, DNAT_VIP, DNAT_ADDR)
    kind = kind or rng.choice(FLAVOURS)
    if kind == "plain":
        return conn
    out = []
    if kind == "snat":
        port = SNAT_PORT if rng.random() < 0.3 else None
        for p, f in conn:
            out.append((p, f if p == client else _rewrite(f, dst=snat, dport=port)))
        return out
    port = DNAT_PORT if rng.random() < 0.4 else None
    for p, f in conn:
        out.append((p, _rewrite(f, dst=vip) if p == client else _rewrite(f, src=dnat, sport=port)))
    return out


def nat_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int,
               tcp_odd: float = 0.0) -> list[list[tuple[int, bytes]]]:
    """``generate_ct``'s connections in the three flavours, as rounds."""
    return as_rounds([_flavour(rng, c) for c in mixed_connections(rng, pairs, n, tcp_odd)])
