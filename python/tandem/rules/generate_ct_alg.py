"""FTP and TFTP conversations and rule sets committing ``ct(alg=ftp|tftp)``, for the
OVS oracles (``tandem bench ct_oracle -- --alg P``).

``alg_ruleset(rng, n, ports, newer)``: ``generate_ct.ct_ruleset``'s rules (``force``
taken out: Open vSwitch drops a forced connection's expectations only when its
cleaner next runs), a skeleton committing new connections to TCP port 21 with
``alg=ftp`` and to UDP port 69 with ``alg=tftp`` (each with a mark), and, for about
a third of the rules with a ct, a copy one priority up that also matches ``tcp`` or
``udp`` (now and then port 21 / 69 too) whose ct actions carry the ALG.

``alg_conn(rng, a, b, k)``: one conversation, client on port ``a``: an FTP control
connection to port 21 (IPv4: ``PORT`` and ``PASV``/``227``; IPv6: ``EPRT``, its address
now and then written out in full, and ``EPSV``/``229``; now and then a malformed command, one naming another address, or a
message cut before its last octet) with the data connections the commands announce
(from the right peer, or from another address or to another port), or a TFTP read:
a request to port 69, data from another server port, acknowledgements, sometimes a
second request. ``alg_traces`` mixes ``share`` of such conversations into
``generate_ct_tcp.mixed_connections``' ones, as rounds. Pure: all randomness from
``rng``.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import replace

from .generate_ct import _S, V4, V6, _tcp_frame, as_rounds, ct_ruleset
from .generate_ct_tcp import mixed_connections
from .ir import ApplyActions, Ct, Match, Output, Rule, WriteActions
from .packets import build_frame

SYN, ACK, FIN, PSH = 0x02, 0x10, 0x01, 0x08
ALG_PROTO = {"ftp": 6, "tftp": 17}
ALG_PORT = {"ftp": ("tcp_dst", 21), "tftp": ("udp_dst", 69)}


def uses_alg(rule: Rule) -> bool:
    return any(type(a) is Ct and a.alg is not None for i in rule.instructions
               if type(i) in (ApplyActions, WriteActions) for a in i.actions)


def _map_ct(rule: Rule, fix) -> Rule:
    """``rule`` with ``fix`` applied to each of its (applied or written) ct actions."""
    ins = tuple(replace(i, actions=tuple(fix(a) if type(a) is Ct else a for a in i.actions))
                if type(i) in (ApplyActions, WriteActions) else i for i in rule.instructions)
    return replace(rule, instructions=ins)


def alg_ruleset(rng: random.Random, n: int, ports: list[int], newer: float = 1.0) -> list[Rule]:
    """``ct_ruleset``'s rules without ``force``, an ALG skeleton, and ALG copies of about a
    third of the rules with a ct (``n`` or a few more in all)."""
    base = [_map_ct(r, lambda a: replace(a, force=False)) for r in ct_ruleset(rng, max(1, n * 3 // 4), ports, newer)]
    used = {(r.table, r.priority) for r in base}
    out = list(base)

    def add(r: Rule) -> None:
        prio = r.priority
        while (r.table, prio) in used:
            prio += 1
        used.add((r.table, prio))
        out.append(replace(r, priority=prio))

    new = (_S["trk"] | _S["new"], _S["trk"] | _S["new"] | _S["inv"] | _S["rel"])
    for eth in (0x0800, 0x86DD):
        for alg in ("ftp", "tftp"):
            field, port = ALG_PORT[alg]
            m = Match.of(eth_type=eth, ip_proto=ALG_PROTO[alg], ct_state=new, **{field: port})
            act = Ct(commit=True, exec=(("ct_mark", rng.choice((3, 7)), None),), alg=alg)
            add(Rule(m, (ApplyActions((act, Output(rng.choice(ports)))),), 1, 30000))
    for r in base:
        if len(out) >= n:
            break
        has_ct = any(type(a) is Ct for i in r.instructions if type(i) in (ApplyActions, WriteActions) for a in i.actions)
        if not has_ct or "eth_type" not in r.match or rng.random() > 0.45:
            continue
        alg = rng.choice(("ftp", "tftp"))
        fm = r.match.get("ip_proto")
        if fm is not None and fm.value != ALG_PROTO[alg]:
            continue
        m = r.match.with_field("ip_proto", ALG_PROTO[alg])
        if rng.random() < 0.3:
            m = m.with_field(*ALG_PORT[alg])
        add(replace(_map_ct(r, lambda a: replace(a, alg=alg)), match=m, priority=r.priority + 1))
    return out


# ---------------------------------------------------------------- conversations

def _addr_text(v6: bool, addr: int) -> str:
    if v6:
        return str(ipaddress.IPv6Address(addr))
    return ",".join(str(addr >> s & 0xFF) for s in (24, 16, 8, 0))


def _ftp_conn(rng: random.Random, a: int, b: int, k: int, rename=None) -> list[tuple[int, bytes]]:
    """``rename(active, addr)``: the address a PORT / EPRT (``active``) or 227 names instead of
    the sender's own (``generate_ct_alg_nat``: as the sender sees it under a translation)."""
    v6 = rng.random() < 0.35
    ca, sa = rng.sample(V6 if v6 else V4, 2)
    other = next(x for x in (V6 if v6 else V4) if x not in (ca, sa))
    cport = 30000 + k
    seq = {"c": rng.randrange(1 << 31), "s": rng.randrange(1 << 31)}
    out: list[tuple[int, bytes]] = []

    def ctl(who: str, flags: int, msg: bytes = b"") -> None:
        peer = "s" if who == "c" else "c"
        args = (ca, sa, cport, 21) if who == "c" else (sa, ca, 21, cport)
        out.append((a if who == "c" else b, _tcp_frame(v6, *args, seq[who], seq[peer], flags, msg)))
        seq[who] += len(msg) + (1 if flags & (SYN | FIN) else 0)

    ctl("c", SYN)
    seq["s"] += 0
    out.append((b, _tcp_frame(v6, sa, ca, 21, cport, seq["s"], seq["c"], SYN | ACK)))
    seq["s"] += 1
    ctl("c", ACK)
    data_n = 0
    for _ in range(rng.randint(1, 3)):
        port = rng.randrange(1024, 65536)
        active = rng.random() < 0.5
        odd = rng.random()
        addr = ca if active else sa
        if rename is not None:
            addr = rename(active, addr)
        if odd < 0.1:
            addr = other  # another address: +inv
        if v6:
            text = _addr_text(True, addr) if rng.random() < 0.7 else ipaddress.IPv6Address(addr).exploded
            msg = (f"EPRT |2|{text}|{port}|" if active else
                   f"229 Entering Extended Passive Mode (|||{port}|)").encode()
        else:
            msg = (f"PORT {_addr_text(False, addr)},{port >> 8},{port & 0xFF}" if active else
                   f"227 Entering Passive Mode ({_addr_text(False, addr)},{port >> 8},{port & 0xFF})").encode()
        if rng.random() < 0.3:
            msg = msg.lower()
        if 0.1 <= odd < 0.18:
            msg = msg[: rng.randint(4, len(msg) - 3)]  # cut short
        if not (0.18 <= odd < 0.25):
            msg += b"\r\n"  # (else its last octet, not read by OVS, is part of the port)
        if not active:
            ctl("c", PSH | ACK, b"EPSV\r\n" if v6 else b"PASV\r\n")
        ctl("c" if active else "s", PSH | ACK, msg)
        ctl("s" if active else "c", PSH | ACK, b"200 OK\r\n" if active else b"LIST\r\n")
        # the data connection: from the server (active) or the client (passive)
        for _ in range(rng.choice((1, 1, 2))):
            data_n += 1
            src, dst = (sa, ca) if active else (ca, sa)
            if rng.random() < 0.15:
                src = other
            dport = port if rng.random() < 0.85 else port ^ 1
            sport = (20 if active else 40000 + 8 * k + data_n) if rng.random() < 0.7 else rng.randrange(1024, 65536)
            i_src, i_dst = (b, a) if active else (a, b)
            d = {"x": rng.randrange(1 << 31), "y": rng.randrange(1 << 31)}
            out.append((i_src, _tcp_frame(v6, src, dst, sport, dport, d["x"], 0, SYN)))
            out.append((i_dst, _tcp_frame(v6, dst, src, dport, sport, d["y"], d["x"] + 1, SYN | ACK)))
            out.append((i_src, _tcp_frame(v6, src, dst, sport, dport, d["x"] + 1, d["y"] + 1, ACK)))
            payload = bytes(rng.randint(1, 12))
            out.append((i_src, _tcp_frame(v6, src, dst, sport, dport, d["x"] + 1, d["y"] + 1, PSH | ACK, payload)))
    if rng.random() < 0.5:
        ctl("c", PSH | ACK, b"QUIT\r\n")
        ctl("s", FIN | ACK)
    return out


def _tftp_conn(rng: random.Random, a: int, b: int, k: int) -> list[tuple[int, bytes]]:
    v6 = rng.random() < 0.35
    ca, sa = rng.sample(V6 if v6 else V4, 2)
    ip = (lambda s, d: {"ipv6_src": s, "ipv6_dst": d}) if v6 else (lambda s, d: {"ipv4_src": s, "ipv4_dst": d})
    cport = 30000 + k
    out: list[tuple[int, bytes]] = []
    for n in range(rng.choice((1, 1, 2))):
        out.append((a, build_frame(**ip(ca, sa), udp_src=cport, udp_dst=69, payload=b"\x00\x01file%d\x00octet\x00" % n)))
        tid = rng.randrange(1024, 65536)
        for block in range(1, rng.randint(2, 4)):
            out.append((b, build_frame(**ip(sa, ca), udp_src=tid, udp_dst=cport, payload=b"\x00\x03" + bytes([0, block]) + b"data")))
            out.append((a, build_frame(**ip(ca, sa), udp_src=cport, udp_dst=tid, payload=b"\x00\x04" + bytes([0, block]))))
        if rng.random() < 0.2:  # an answer from the well-known port itself (the control connection's reply)
            out.append((b, build_frame(**ip(sa, ca), udp_src=69, udp_dst=cport, payload=b"\x00\x05\x00\x01x\x00")))
    return out


def alg_conn(rng: random.Random, a: int, b: int, k: int, rename=None) -> list[tuple[int, bytes]]:
    """One FTP or TFTP conversation between ports ``a`` (client) and ``b`` (``rename``: ``_ftp_conn``'s)."""
    return _ftp_conn(rng, a, b, k, rename) if rng.random() < 0.65 else _tftp_conn(rng, a, b, k)


def alg_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int, tcp_odd: float = 0.0,
               share: float = 0.5) -> list[list[tuple[int, bytes]]]:
    """``n`` connections, about ``share`` of them FTP / TFTP conversations, as rounds."""
    conns = mixed_connections(rng, pairs, n, tcp_odd)
    return as_rounds([alg_conn(rng, *rng.choice(pairs), 100 + k) if rng.random() < share else c
                      for k, c in enumerate(conns)])
