"""TCP connections that test the tracker's sequence-window checks, for the OVS
oracles (``ct_traces(..., tcp_odd=P)``, ``tandem bench ct_oracle -- --tcp-odd P``).

``odd_tcp_conn(rng, a, b, k)``: one connection's segments, (virtual in_port,
frame), client on ``a``: a handshake (window-scale options on none, one or both
SYNs, windows small or large) or none at all (the tracker picks the connection up
mid-stream, from either end), then segments drawn from in-window data both ways,
data past the window or more than a window behind, acknowledgements far ahead,
retransmitted SYNs, RSTs at the right or a wrong sequence number (or ack 0), and
FINs, with the sequence numbers a stack keeps (a segment the tracker finds invalid
still advances the sender's). Pure: all randomness from ``rng``."""

from __future__ import annotations

import random

from .generate_ct import TCP_PORTS, V4, V6, _conn, _tcp_frame, as_rounds

SYN, ACK, FIN, RST, PSH = 0x02, 0x10, 0x01, 0x04, 0x08


def odd_tcp_conn(rng: random.Random, a: int, b: int, k: int) -> list[tuple[int, bytes]]:
    """One connection between ports ``a`` (client) and ``b``; client port 40000 + k."""
    v6 = rng.random() < 0.3
    ca, sa = rng.sample(V6 if v6 else V4, 2)
    cport, sport = 40000 + k, rng.choice(TCP_PORTS)
    seq = {"c": rng.randrange(1 << 32), "s": rng.randrange(1 << 32)}
    win = {"c": rng.choice((65535, 65535, 2000, 100)), "s": rng.choice((65535, 65535, 2000, 100))}
    out: list[tuple[int, bytes]] = []

    def send(who: str, flags: int, n: int = 0, seq_off: int = 0, ack: int | None = None, opts: bytes = b"") -> None:
        other = "s" if who == "c" else "c"
        frame = _tcp_frame(v6, *((ca, sa, cport, sport) if who == "c" else (sa, ca, sport, cport)),
                           seq[who] + seq_off, seq[other] if ack is None else ack, flags, bytes(n), win[who], opts)
        out.append((a if who == "c" else b, frame))

    if rng.random() < 0.6:  # a handshake, window scaling on none, one or both SYNs
        scale = [rng.random() < 0.4, rng.random() < 0.4]
        send("c", SYN, opts=bytes([1, 3, 3, rng.randint(0, 14)]) if scale[0] else b"", ack=0)
        if rng.random() < 0.2:
            send("c", SYN, opts=bytes([1, 3, 3, 7]) if scale[0] else b"", ack=0)  # retransmitted
        seq["c"] += 1
        send("s", SYN | ACK, opts=bytes([1, 3, 3, rng.randint(0, 14)]) if scale[1] else b"")
        seq["s"] += 1
        send("c", ACK)
    for _ in range(rng.randint(2, 6)):
        who = rng.choice("cs")
        other = "s" if who == "c" else "c"
        kind = rng.random()
        n = rng.randint(1, 20)
        if kind < 0.4:
            send(who, PSH | ACK, n)
            seq[who] += n
        elif kind < 0.5:
            send(who, PSH | ACK, n, seq_off=rng.choice((1, 1, 50)) * win[other] + rng.randint(0, 70000))  # past the window
        elif kind < 0.6:
            send(who, PSH | ACK, n, seq_off=-rng.randint(1, 140000))  # behind
        elif kind < 0.7:
            send(who, ACK, ack=seq[other] + rng.choice((1, 1000, 70000, 200000)))  # acknowledging ahead
        elif kind < 0.78:
            send(who, SYN, ack=0, seq_off=-1)  # a SYN again
        elif kind < 0.86:
            send(who, RST | ACK, seq_off=rng.choice((0, 1, -1, 9, 3000)), ack=rng.choice((None, 0)))
        elif kind < 0.94:
            send(who, FIN | ACK)
            seq[who] += 1
        else:
            send(who, RST, seq_off=rng.choice((0, 5)))
    return out


def mixed_connections(rng: random.Random, pairs: list[tuple[int, int]], n: int,
                      tcp_odd: float = 0.0) -> list[list[tuple[int, bytes]]]:
    """``generate_ct.ct_connections``' ``n`` connections, about ``tcp_odd`` of them
    ``odd_tcp_conn``'s (drawn in the same order: with ``tcp_odd`` 0 the very same)."""
    return [odd_tcp_conn(rng, *rng.choice(pairs), k) if tcp_odd and rng.random() < tcp_odd else
            _conn(rng, *rng.choice(pairs), k) for k in range(n)]


def ct_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int,
              tcp_odd: float = 0.0) -> list[list[tuple[int, bytes]]]:
    """``mixed_connections`` as rounds (``generate_ct.ct_traces`` when ``tcp_odd`` is 0)."""
    return as_rounds(mixed_connections(rng, pairs, n, tcp_odd))
