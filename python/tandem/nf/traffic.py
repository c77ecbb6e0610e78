"""Application traffic for the real NFs, as Ethernet frames (bytes) or a pcap
that a scenario's ``pattern: replay`` source plays: TCP handshakes with HTTP
requests and TLS ClientHellos (the hello optionally split across segments),
DNS queries, and ESP tunnel traffic under a scenario SA (Scapy's ESP does the
encryption, so the SECGW is fed by an independent implementation).

Every function is deterministic for a given seed."""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from pathlib import Path

ETH_HDR = bytes.fromhex("020000000002" "020000000001" "0800")


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _ip(src: str, dst: str, proto: int, l4: bytes, ttl: int = 64) -> bytes:
    a = bytes(int(x) for x in src.split("."))
    b = bytes(int(x) for x in dst.split("."))
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0, ttl, proto, 0, a, b)
    h = h[:10] + struct.pack("!H", _csum(h)) + h[12:]
    if proto in (6, 17):
        pseudo = a + b + struct.pack("!BBH", 0, proto, len(l4))
        off = 16 if proto == 6 else 6
        c = _csum(pseudo + l4[:off] + b"\0\0" + l4[off + 2:])
        if proto == 17 and c == 0:
            c = 0xFFFF
        l4 = l4[:off] + struct.pack("!H", c) + l4[off + 2:]
    return h + l4


def tcp(src: str, dst: str, sport: int, dport: int, flags: int, seq: int, ack: int = 0, payload: bytes = b"") -> bytes:
    h = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 64240, 0, 0)
    return ETH_HDR + _ip(src, dst, 6, h + payload)


def udp(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    h = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    return ETH_HDR + _ip(src, dst, 17, h + payload)


def http_request(host: str, method: str = "GET", path: str = "/") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: tandem-gen\r\nAccept: */*\r\n\r\n".encode()


def tls_client_hello(sni: str, rng: random.Random) -> bytes:
    name = sni.encode()
    sni_ext = struct.pack("!HHHBH", 0, len(name) + 5, len(name) + 3, 0, len(name)) + name
    groups = struct.pack("!HHH", 10, 4, 2) + b"\x00\x1d"
    alpn = struct.pack("!HHH", 16, 5, 3) + b"\x02h2"
    pad = struct.pack("!HH", 21, 120) + bytes(120)
    ext = sni_ext + groups + alpn + pad
    body = b"\x03\x03" + bytes(rng.getrandbits(8) for _ in range(32)) + b"\x20" + bytes(rng.getrandbits(8) for _ in range(32))
    body += struct.pack("!H", 6) + b"\x13\x01\x13\x02\x13\x03" + b"\x01\x00" + struct.pack("!H", len(ext)) + ext
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def dns_query(name: str, qid: int) -> bytes:
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack("!HH", 1, 1)


@dataclass(frozen=True)
class AppFlow:
    """One generated flow and what an L7 detector should find on it."""

    client: str
    server: str
    sport: int
    dport: int
    proto: str  # "http", "tls", "dns"
    name: str
    method: str = ""


def tcp_session(f: AppFlow, payload: bytes, split_at: int | None, reply: bytes = b"") -> list[bytes]:
    """Handshake, the client's payload (in two segments when `split_at`), a server reply, FIN."""
    c, s = 1000, 5000
    out = [tcp(f.client, f.server, f.sport, f.dport, 0x02, c),
           tcp(f.server, f.client, f.dport, f.sport, 0x12, s, c + 1),
           tcp(f.client, f.server, f.sport, f.dport, 0x10, c + 1, s + 1)]
    parts = [payload] if split_at is None else [payload[:split_at], payload[split_at:]]
    seq = c + 1
    for p in parts:
        out.append(tcp(f.client, f.server, f.sport, f.dport, 0x18, seq, s + 1, p))
        seq += len(p)
    if reply:
        out.append(tcp(f.server, f.client, f.dport, f.sport, 0x18, s + 1, seq, reply))
    out.append(tcp(f.client, f.server, f.sport, f.dport, 0x11, seq, s + 1 + len(reply)))
    return out


def app_mix(seed: int, flows: int, split_tls: float = 0.5) -> tuple[list[bytes], list[AppFlow]]:
    """A mixed HTTP/TLS/DNS trace: frames (flows interleaved) and the truth."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "cdn", "api", "mail", "video", "static", "img", "login", "shop"]
    tlds = ["example", "example.org", "test", "example.net"]
    sessions: list[list[bytes]] = []
    truth: list[AppFlow] = []
    for i in range(flows):
        host = f"{rng.choice(words)}{i}.{rng.choice(words)}.{rng.choice(tlds)}"
        client = f"10.{1 + i // 60000}.{(i // 250) % 250}.{1 + i % 250}"
        server = f"172.16.{i % 200}.{1 + i % 7}"
        kind = rng.choice(["http", "tls", "dns"])
        if kind == "http":
            method = rng.choice(["GET", "POST", "HEAD", "PUT"])
            f = AppFlow(client, server, 20000 + i % 40000, 80, "http", host, method)
            req = http_request(host, method, f"/{rng.choice(words)}")
            split = rng.randrange(1, len(req)) if rng.random() < 0.3 else None
            sessions.append(tcp_session(f, req, split, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        elif kind == "tls":
            f = AppFlow(client, server, 20000 + i % 40000, 443, "tls", host)
            hello = tls_client_hello(host, rng)
            sni_at = hello.index(host.encode())
            # split inside the SNI itself for some flows, elsewhere for others
            split = (sni_at + rng.randrange(1, len(host))) if rng.random() < split_tls else None
            sessions.append(tcp_session(f, hello, split))
        else:
            f = AppFlow(client, "8.8.8.8", 30000 + i % 30000, 53, "dns", host)
            sessions.append([udp(client, "8.8.8.8", f.sport, 53, dns_query(host, i & 0xFFFF))])
        truth.append(f)
    frames: list[bytes] = []
    cursors = [0] * len(sessions)
    live = list(range(len(sessions)))
    while live:
        j = rng.choice(live)
        frames.append(sessions[j][cursors[j]])
        cursors[j] += 1
        if cursors[j] == len(sessions[j]):
            live.remove(j)
    return frames, truth


def esp_frames(inner: list[bytes], spi: int, key: bytes, local: str, remote: str, *, esn: bool = True,
               first_seq: int = 1) -> list[bytes]:
    """Encrypt Ethernet frames into ESP tunnel mode (AES-GCM, RFC 4106) with
    Scapy, as the far tunnel end `remote` → `local` would send them."""
    from scapy.layers.inet import IP
    from scapy.layers.ipsec import ESP, SecurityAssociation

    sa = SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=key,
                             tunnel_header=IP(src=remote, dst=local), esn_en=esn)
    out = []
    for i, fr in enumerate(inner):
        s = first_seq + i
        enc = sa.encrypt(IP(fr[14:]), seq_num=s & 0xFFFFFFFF, esn=s >> 32)
        out.append(fr[:14] + bytes(enc))
    return out


def write_pcap(path: str | Path, frames: list[bytes], pps: float = 100_000.0) -> None:
    """Classic pcap (microsecond stamps), frames `1/pps` apart."""
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            us = int(i * 1e6 / pps)
            fh.write(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, len(fr), len(fr)))
            fh.write(fr)


def read_pcap(path: str | Path) -> list[bytes]:
    data = Path(path).read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise ValueError(f"{path}: not a little-endian classic pcap")
    out, o = [], 24
    while o + 16 <= len(data):
        incl = struct.unpack("<I", data[o + 8:o + 12])[0]
        out.append(data[o + 16:o + 16 + incl])
        o += 16 + incl
    return out


def scenario_esp_pcap(sc, nf_type: str, out: str | Path, *, flows: int = 50, seed: int = 1,
                      pps: float = 100_000.0) -> int:
    """Write a pcap of HTTP/TLS/DNS sessions (`app_mix`) carried in ESP under the
    first inbound SA of the scenario's `nf_types.<nf_type>` (a `secgw`), as the
    far tunnel end sends them: the SD-WAN traffic of UNO §5.1. Returns the
    number of frames."""
    t = sc.nf_types.get(nf_type)
    if t is None or t.type != "secgw":
        raise ValueError(f"nf_types.{nf_type}: not a secgw NF type")
    sa = next((s for s in t.config.get("sas", []) if s.get("dir") == "in"), None)
    if sa is None:
        raise ValueError(f"nf_types.{nf_type}.config.sas: no inbound (dir: in) SA to encrypt for")
    frames, _ = app_mix(seed, flows)
    esp = esp_frames(frames, int(sa["spi"]), bytes.fromhex(sa["key"]), sa["local"], sa["remote"],
                     esn=sa.get("esn", True))
    write_pcap(out, esp, pps=pps)
    return len(esp)
