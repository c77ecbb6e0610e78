"""UNO Fig. 13 analogue: the cost of moving an NF with its state while traffic flows.

UNO §5.2 moves PRADS from the x86 host to the sNIC and reports the state size
(1.4 MB at 750 flows, 1.6 MB at 1,000), the migration time growing with the
flows, and +40-50 ms average per-packet latency while packets are buffered.
Here the L7FW of the SD-WAN chain (SECGW on the sNIC -> L7FW) moves host ->
sNIC once per run with 250/500/750/1,000 flows of ESP traffic at ~1.2 Gb/s,
in the emulator (``Machine.migrate``). Per point: the move's modelled time
(start -> release), the state bytes, the packets buffered, the added latency
of the buffered packets (p50/p99/max, modelled), and the wall time of the
state export + import (the real Rust codec on this machine). UNO's numbers
are *predictions* to compare with, not inputs: no constant is fitted to them.

Also the traffic and scenario the migration test uses: ``sdwan_frames``
builds per-flow sessions (TCP handshake + HTTP request or TLS ClientHello, or
DNS queries, then data) whose inner IPv4 ID counts each flow's packets
(0, 1, 2, ...), encrypted into ESP by the Rust SECGW under the scenario SA,
so a receiver can check loss, duplication and order per flow.

``run(out_dir, quick=False) -> dict`` writes ``data.csv`` and returns the rows.
"""

from __future__ import annotations

import csv
import json
import random
import statistics
import struct
import time
from pathlib import Path

from tandem.nf.traffic import ETH_HDR, _csum, dns_query, http_request, tcp, tls_client_hello, udp, write_pcap

# One SA per branch gateway: the ESP flows of 8 tunnels spread over 8 sNIC cores
# (one tunnel is one outer flow, which RSS keeps on one core).
TUNNELS = 8
SAS = [{"spi": 4660 + k, "cipher": "aes128gcm", "key": "000102030405060708090a0b0c0d0e0f01020304",
        "local": "192.0.2.1", "remote": f"198.51.100.{9 + k}"} for k in range(TUNNELS)]

UNO = {"state_bytes_750": 1.4e6, "state_bytes_1000": 1.6e6, "added_latency_ms": (40, 50)}  # UNO §5.2, Fig. 13


def _with_id(frame: bytes, ident: int) -> bytes:
    """`frame` with its IPv4 identification set to `ident` (header checksum redone)."""
    ip = bytearray(frame[14:34])
    ip[4:6] = struct.pack("!H", ident & 0xFFFF)
    ip[10:12] = b"\0\0"
    ip[10:12] = struct.pack("!H", _csum(bytes(ip)))
    return frame[:14] + bytes(ip) + frame[34:]


def sdwan_frames(flows: int, data_packets: int, *, payload: int = 1000, seed: int = 1) -> list[tuple[int, bytes]]:
    """Clear-text frames of `flows` sessions, interleaved at random; each flow's
    packets carry IPv4 IDs 0, 1, 2, ... in order; returns (flow index, frame) pairs. TCP flows: handshake, an HTTP
    request or TLS ClientHello, `data_packets` segments of `payload` bytes; DNS
    flows: 1 + `data_packets` queries."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "cdn", "api", "mail", "video", "static", "img", "login", "shop"]
    tlds = ["example", "test", "example.org"]
    sessions = []
    for i in range(flows):
        host = f"{rng.choice(words)}{i}.{rng.choice(words)}.{rng.choice(tlds)}"
        client, server = f"10.{1 + i // 60000}.{(i // 250) % 250}.{1 + i % 250}", f"172.16.{i % 200}.{1 + i % 7}"
        kind = rng.choice(["http", "tls", "dns"])
        if kind == "dns":
            sport = 30000 + i % 30000
            s = [udp(client, "8.8.8.8", sport, 53, dns_query(host, (i + k) & 0xFFFF)) for k in range(1 + data_packets)]
        else:
            sport, dport = 20000 + i % 40000, 80 if kind == "http" else 443
            req = http_request(host, "GET", "/x") if kind == "http" else tls_client_hello(host, rng)
            c, sv = 1000, 5000
            s = [tcp(client, server, sport, dport, 0x02, c), tcp(server, client, dport, sport, 0x12, sv, c + 1),
                 tcp(client, server, sport, dport, 0x10, c + 1, sv + 1),
                 tcp(client, server, sport, dport, 0x18, c + 1, sv + 1, req)]
            seq = c + 1 + len(req)
            body = bytes(rng.randrange(256) for _ in range(64)) * (payload // 64 + 1)
            for _ in range(data_packets):
                s.append(tcp(client, server, sport, dport, 0x18, seq, sv + 1, body[:payload]))
                seq += payload
        sessions.append([_with_id(f, k) for k, f in enumerate(s)])
    out, cursors, live = [], [0] * flows, list(range(flows))
    while live:
        j = rng.randrange(len(live))
        f = live[j]
        out.append((f, sessions[f][cursors[f]]))
        cursors[f] += 1
        if cursors[f] == len(sessions[f]):
            live[j] = live[-1]
            live.pop()
    return out


def encrypt(frames: list[tuple[int, bytes]]) -> list[bytes]:
    """ESP tunnel mode, flow i through branch gateway i mod TUNNELS under its SA
    (the Rust SECGW encrypts, as that gateway would send it)."""
    from tandem import _dp

    gws = [_dp.Nf("secgw", json.dumps({"sas": [{**sa, "dir": "out", "local": sa["remote"], "remote": sa["local"]}]}))
           for sa in SAS]
    out = []
    for i, f in frames:
        verdict, _port, enc = gws[i % TUNNELS].process(f, 0)
        if verdict != "forward":
            raise RuntimeError(f"SECGW refused to encrypt a frame: {verdict}")
        out.append(bytes(enc))
    return out


def write_traffic(path: Path, flows: int, data_packets: int, gbps: float, *, seed: int = 1) -> tuple[int, float]:
    """Write the encrypted trace at about `gbps`; returns (frames, seconds it lasts)."""
    frames = encrypt(sdwan_frames(flows, data_packets, seed=seed))
    mean = sum(len(f) for f in frames) / len(frames)
    pps = gbps * 1e9 / ((mean + 20) * 8)
    write_pcap(path, frames, pps=pps)
    return len(frames), len(frames) / pps


def scenario_yaml(pcap: Path, duration: float, migrations: list[tuple[float, str, str]] = ()) -> str:
    """The SD-WAN chain (SECGW pinned on snic0, L7FW starting on the host) replaying `pcap`."""
    moves = "".join(f"  - {{at: {at!r}s, nf: {nf}, to: {to}}}\n" for at, nf, to in migrations)
    sas = "\n".join(f"        - {{spi: {sa['spi']}, dir: in, cipher: aes128gcm, key: \"{sa['key']}\", local: {sa['local']},"
                    f" remote: {sa['remote']}, replay_window: 128}}" for sa in SAS)
    return f"""name: sdwan-migration
devices:
  host: {{kind: host, cores: 24, clock: 2.7GHz}}
  snic0:
    kind: snic
    cores: 36
    clock: 1.2GHz
    accelerators:
      mica: {{kind: crypto, throughput: 40Gbps, setup: 1us}}
    ports: {{eth0: {{rate: 10Gbps}}, eth1: {{rate: 10Gbps}}}}
links:
  pcie0: {{snic: snic0, bandwidth: 32Gbps, round_trip: 26us}}
nf_types:
  sgw:
    preset: uno.secgw
    type: secgw
    config:
      sas:
{sas}
  fw:
    preset: uno.l7fw
    type: l7fw
    config:
      apps:
        - {{name: mail, hosts: ["*.mail.test", "*.mail.example", "*.mail.example.org"], action: block}}
        - {{name: shop, hosts: ["shop*.example"], action: block}}
instances:
  s1: {{kind: nf, type: sgw, pin: snic0}}
  f1: {{kind: nf, type: fw, pin: host}}
  vm1: {{kind: vm}}
chains:
  wan: {{nfs: [s1, f1], ingress: snic0.eth0, egress: vm1}}
traffic:
  branch: {{target: wan, pattern: replay, pcap: {str(pcap)!r}}}
run: {{duration: {duration!r}s, placement: pinned}}
""" + (f"migrations:\n{moves}" if moves else "")


def load(text: str, where: Path):
    from tandem.model.load import parse_scenario_text

    return parse_scenario_text(text, str(where), scenario_dir=where.parent)


def inner_flows(frames: list[bytes]) -> dict[tuple, list[int]]:
    """Per inner session (5-tuple, both directions), the IPv4 IDs of the frames in the order received."""
    out: dict[tuple, list[int]] = {}
    for f in frames:
        ihl = (f[14] & 15) * 4
        proto = f[23]
        ports = struct.unpack("!HH", f[14 + ihl:18 + ihl]) if proto in (6, 17) else (0, 0)
        key = (proto, *sorted([(f[26:30], ports[0]), (f[30:34], ports[1])]))  # one key for both directions
        out.setdefault(key, []).append(struct.unpack("!H", f[18:20])[0])
    return out


def one_point(tmp: Path, flows: int, *, data_packets: int, gbps: float = 1.2, direction: str = "snic0",
              seed: int = 1, **cost) -> dict:
    """One migration of f1 host -> `direction` at 60% of the trace; returns the figures.
    `cost`: ``Machine.migrate`` cost overrides (e.g. ``lanes=1``)."""
    from tandem.emu.scenario import build_from_scenario

    pcap = tmp / f"sdwan-{flows}.pcap"
    n, secs = write_traffic(pcap, flows, data_packets, gbps, seed=seed)
    duration = secs + 0.002
    sc = load(scenario_yaml(pcap, duration), tmp / "s.yaml")
    m, _ = build_from_scenario(sc, migratable=True)
    at = secs * 0.6  # every flow has state by then
    m.migrate("f1", direction, at, **cost)
    met = m.run(duration)
    mig = met["migrations"][0]
    inst = m.nfs[m.current_instance("f1")]
    t0 = time.perf_counter()
    blob = m.emu.nf_export_state(inst)
    t1 = time.perf_counter()
    m.emu.nf_import_state(inst, blob)
    t2 = time.perf_counter()
    lat = mig["added_latency_ns"]
    return {
        "flows": flows, "lanes": cost.get("lanes", 8), "frames": n, "offered_gbps": gbps, "from": mig["from"], "to": mig["to"],
        "migration_ms": (mig["end_s"] - mig["start_s"]) * 1e3,
        "drain_ms": (mig["drained_s"] - mig["start_s"]) * 1e3,
        "transfer_us": mig["transfer_s"] * 1e6,
        "state_bytes": mig["state_bytes"], "state_flows": mig["state_flows"],
        "buffered": mig["buffered_packets"],
        "added_mean_us": lat["mean"] / 1e3, "added_p50_us": lat["p50"] / 1e3, "added_p99_us": lat["p99"] / 1e3, "added_max_us": lat["max"] / 1e3,
        "lost": mig["lost"], "duplicated": mig["duplicated"], "reordered": mig["reordered"],
        "export_import_wall_ms": (mig["export_wall_ns"] + mig["import_wall_ns"]) / 1e6,
        "export_import_wall_ms_again": ((t1 - t0) + (t2 - t1)) * 1e3,
    }


FLOWS = (250, 500, 750, 1000)


def run(out_dir: Path, quick: bool = False) -> dict:
    """Fig. 13 analogue: one row per flow count (medians of `reps` runs for the wall
    times), plus the 1,000-flow point with one serialising core (``lanes=1``)."""
    import tempfile

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    reps = 1 if quick else 3
    data_packets = 4 if quick else 12
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for flows, cost in [(f, {}) for f in FLOWS] + [(FLOWS[-1], {"lanes": 1})]:
            pts = [one_point(Path(d), flows, data_packets=data_packets, **cost) for _ in range(reps)]
            row = dict(pts[0])
            for k in ("export_import_wall_ms", "export_import_wall_ms_again"):
                row[k] = statistics.median(p[k] for p in pts)
            rows.append(row)
    with open(out_dir / "data.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return {"rows": rows, "uno": UNO, "csv": str(out_dir / "data.csv")}
