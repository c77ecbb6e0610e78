"""Random connection-tracking rule sets with Open vSwitch's ``nat``, and traces whose
replies come back to the translated addresses, for the OVS oracles (``ct_oracle --nat``).

``nat_ruleset(rng, n, ports)``: ``generate_ct.ct_ruleset``'s rules, each ``ct`` then given
a ``nat`` with probability ``share`` (0.9): a commit (IPv4 rules) ``nat(src=SNAT_ADDR[:SNAT_PORT])``
or ``nat(dst=DNAT_ADDR[:DNAT_PORT])`` (ranges of one address and one or no port, so that
Open vSwitch's choice is reproducible: no hash with a random basis decides it), now and
then with ``persistent``, ``hash`` or ``random``, which then change nothing; any other ct
(IPv4 or IPv6) a bare ``nat``, which applies an established connection's translation.

``nat_traces(rng, pairs, n)``: ``generate_ct``'s connections, each IPv4 one in one of
three flavours: plain; *snat* (the server answers ``SNAT_ADDR``, on the client's port or
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

from .generate_ct import as_rounds, ct_connections, ct_ruleset
from .ir import ApplyActions, Ct, CtNat, Rule, WriteActions
from .packets import checksum16

SNAT_ADDR, SNAT_PORT = 0x0A000009, 40000
DNAT_VIP, DNAT_ADDR, DNAT_PORT = 0x0A000064, 0x0A000008, 8080


def _nat_for(rng: random.Random, ct: Ct, v4: bool) -> CtNat:
    if not (ct.commit and v4) or rng.random() < 0.15:
        return CtNat()
    flags = {k: True for k in rng.sample(("persistent", "hash", "random"), rng.choice((0, 0, 1)))}
    if rng.random() < 0.5:
        return CtNat("src", SNAT_ADDR, port_min=SNAT_PORT if rng.random() < 0.3 else None, **flags)
    return CtNat("dst", DNAT_ADDR, port_min=DNAT_PORT if rng.random() < 0.4 else None, **flags)


def with_nat(rng: random.Random, rules: list[Rule], share: float = 0.9) -> list[Rule]:
    """``rules`` with a ``nat`` added to each ct (applied or written) with probability ``share``."""
    out = []
    for r in rules:
        eth = dict(r.match.fields).get("eth_type")
        v4 = eth is not None and eth.value == 0x0800
        ins = []
        for i in r.instructions:
            if type(i) in (ApplyActions, WriteActions):
                acts = tuple(replace(a, nat=_nat_for(rng, a, v4)) if type(a) is Ct and rng.random() < share else a
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


def _rewrite_v4(frame: bytes, src: int | None = None, dst: int | None = None, sport: int | None = None,
                dport: int | None = None) -> bytes:
    """An IPv4 frame with new addresses / TCP-UDP ports, its checksums recomputed."""
    f = bytearray(frame)
    ihl = (f[14] & 0xF) * 4
    total = struct.unpack_from("!H", f, 16)[0]
    if src is not None:
        f[26:30] = src.to_bytes(4, "big")
    if dst is not None:
        f[30:34] = dst.to_bytes(4, "big")
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", checksum16(bytes(f[14:14 + ihl])))
    proto, l4 = f[23], 14 + ihl
    if proto in (6, 17):
        if sport is not None:
            f[l4:l4 + 2] = struct.pack("!H", sport)
        if dport is not None:
            f[l4 + 2:l4 + 4] = struct.pack("!H", dport)
        at = l4 + (16 if proto == 6 else 6)
        if proto == 17 and f[at:at + 2] == b"\0\0":
            return bytes(f)
        f[at:at + 2] = b"\0\0"
        seg = bytes(f[l4:14 + total])
        c = checksum16(bytes(f[26:34]) + struct.pack("!BBH", 0, proto, len(seg)) + seg)
        f[at:at + 2] = struct.pack("!H", c if c or proto == 6 else 0xFFFF)
    return bytes(f)


def _flavour(rng: random.Random, conn: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    client = conn[0][0]
    if struct.unpack_from("!H", conn[0][1], 12)[0] != 0x0800:
        return conn
    kind = rng.choice(("plain", "snat", "snat", "dnat", "dnat"))
    if kind == "plain":
        return conn
    out = []
    if kind == "snat":
        port = SNAT_PORT if rng.random() < 0.3 else None
        for p, f in conn:
            out.append((p, f if p == client else _rewrite_v4(f, dst=SNAT_ADDR, dport=port)))
        return out
    port = DNAT_PORT if rng.random() < 0.4 else None
    for p, f in conn:
        out.append((p, _rewrite_v4(f, dst=DNAT_VIP) if p == client else _rewrite_v4(f, src=DNAT_ADDR, sport=port)))
    return out


def nat_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int) -> list[list[tuple[int, bytes]]]:
    """``generate_ct``'s connections in the three flavours, as rounds."""
    return as_rounds([_flavour(rng, c) for c in ct_connections(rng, pairs, n)])
