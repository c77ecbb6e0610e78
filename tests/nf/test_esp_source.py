"""The live ESP traffic source (dp_emu esp_gen.rs) selected by a scenario: the real SECGW
decrypts every frame (no auth failure, no replay drop), the L7FW names every flow, an
independent IPsec implementation (Scapy's ESP over `cryptography`) decrypts the frames
and, re-encrypting the plaintext with the same sequence number and IV, produces the same
ciphertext and ICV byte for byte; the rate follows the ramp; the bytes follow the seed."""

from __future__ import annotations

import struct

import pytest

pytest.importorskip("cryptography")
from scapy.layers.inet import IP, TCP  # noqa: E402
from scapy.layers.ipsec import ESP, SecurityAssociation  # noqa: E402

from tandem.emu.run import run_scenario  # noqa: E402
from tandem.model import parse_scenario_text  # noqa: E402

KEY128 = "000102030405060708090a0b0c0d0e0f01020304"
KEY256 = "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2fcafebabe"
GW, FAR1, FAR2 = "192.0.2.1", "198.51.100.9", "198.51.100.10"

SCN = f"""
name: esp-live
devices:
  host: {{kind: host, cores: 4, clock: 2.7GHz}}
  snic0:
    kind: snic
    cores: 16
    clock: 1.2GHz
    ports: {{eth0: {{rate: 10Gbps}}, eth1: {{rate: 10Gbps}}}}
links:
  pcie0: {{snic: snic0, bandwidth: 32Gbps, round_trip: 26us}}
nf_types:
  sgw:
    type: secgw
    config:
      sas:
        - {{spi: 4660, dir: in, cipher: aes128gcm, key: "{KEY128}", local: {GW}, remote: {FAR1}}}
        - {{spi: 4661, dir: in, cipher: aes256gcm, key: "{KEY256}", local: {GW}, remote: {FAR2}, esn: false}}
    cost: {{snic: {{cycles_per_packet: 100, cycles_per_byte: 0.5}}, host: {{cycles_per_packet: 100}}}}
  fw:
    type: l7fw
    config:
      apps: [{{name: video, hosts: ["video.example.net"]}}, {{name: crm, hosts: ["crm.example.com"]}}]
    cost: {{snic: {{cycles_per_packet: 100}}, host: {{cycles_per_packet: 100}}}}
instances:
  s1: {{kind: nf, type: sgw, pin: snic0}}
  f1: {{kind: nf, type: fw, pin: snic0}}
  vm1: {{kind: vm}}
chains:
  wan: {{nfs: [s1, f1], ingress: snic0.eth0, egress: vm1}}
traffic:
  branch:
    target: wan
    pattern: ramp
    schedule: [{{at: 0ms, bandwidth: 1Gbps}}, {{at: 5ms, bandwidth: 6Gbps}}]
    packet_size_mix: {{300B: 1, 1280B: 2}}
    flows: 60
    flow_size: {{dist: exponential, mean_packets: 15}}
    esp:
      secgw: sgw
      apps: [{{proto: tls, host: video.example.net, weight: 2}}, {{proto: http, host: crm.example.com}}]
run: {{duration: 12ms, seed: SEED}}
"""


def read_pcap(path) -> list[tuple[int, bytes]]:
    """(ns, frame) records of a nanosecond little-endian pcap (what the emulator writes)."""
    data = path.read_bytes()
    assert struct.unpack("<I", data[:4])[0] == 0xA1B23C4D
    out, o = [], 24
    while o + 16 <= len(data):
        sec, ns, incl, _ = struct.unpack("<IIII", data[o:o + 16])
        out.append((sec * 1_000_000_000 + ns, data[o + 16:o + 16 + incl]))
        o += 16 + incl
    return out


def run(tmp_path, seed: int = 1):
    sc = parse_scenario_text(SCN.replace("SEED", str(seed)))
    res = run_scenario(sc, tmp_path, pcap=True)
    return sc, res, read_pcap(tmp_path / "pcap" / "snic0.eth0.in.pcap"), read_pcap(tmp_path / "pcap" / "vm1.eth0.pcap")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    return run(tmp_path_factory.mktemp("esp"))


def test_the_secgw_decrypts_every_frame_and_the_l7fw_names_every_flow(live):
    sc, res, ingress, delivered = live
    sent = res["flows"]["branch"]["tx_packets"]
    assert sent == len(ingress) > 5000
    c = res["nf_counters"]
    assert c["s1"]["decrypted"] == c["s1"]["packets"] == sent
    for reason in ("auth_failed", "replayed", "too_old", "unknown_spi", "tunnel_mismatch", "bad_padding", "bad_inner"):
        assert c["s1"][reason] == 0, reason
    assert sent - 40 <= len(delivered) <= sent and res["drops"] == {}  # the last few are still in flight
    fw = c["f1"]
    assert fw["detected_http"] > 20 and fw["detected_tls"] > fw["detected_http"] and fw["undetected"] == 0


def scapy_sa(spi: int) -> SecurityAssociation:
    key, far, esn = (KEY128, FAR1, True) if spi == 4660 else (KEY256, FAR2, False)
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=bytes.fromhex(key),
                               tunnel_header=IP(src=far, dst=GW), esn_en=esn)


def test_scapy_decrypts_the_frames_and_reencrypts_them_to_the_same_bytes(live):
    _, _, ingress, delivered = live
    sas = {spi: scapy_sa(spi) for spi in (4660, 4661)}
    inner_out = {fr[14:] for _, fr in delivered}  # what the SECGW decrypted (after the L7FW)
    seqs: dict[int, list[int]] = {4660: [], 4661: []}
    for _, fr in ingress:
        outer = IP(fr[14:])
        seqs[outer[ESP].spi].append(outer[ESP].seq)
    # per-tunnel sequence numbers: 1, 2, 3 ... in the order the frames were sent
    assert all(s == list(range(1, len(s) + 1)) and len(s) > 1000 for s in seqs.values())
    sample = ingress[::17]
    for _, fr in sample:
        outer = IP(fr[14:])
        assert (outer.proto, outer.dst, outer.ttl) == (50, GW, 64) and outer.src in (FAR1, FAR2)
        esp = outer[ESP]
        sa = sas[esp.spi]
        inner = sa.decrypt(outer)  # verifies the ICV
        assert TCP in inner and inner[TCP].dport in (80, 443)
        assert bytes(inner) in inner_out
        again = sa.encrypt(IP(bytes(inner)), seq_num=esp.seq, iv=bytes(esp)[8:16], esn=0)
        assert bytes(again[ESP]) == bytes(esp), f"SPI {esp.spi} seq {esp.seq}"
    assert len(sample) > 300


def test_the_rate_follows_the_ramp(live):
    sc, _, ingress, _ = live
    src = sc.traffic["branch"]
    for t_ms in (1.0, 2.5, 5.0, 8.0, 12.0):
        sent = sum(1 for ns, _ in ingress if ns < t_ms * 1e6)
        assert sent == pytest.approx(src.scheduled_packets(t_ms / 1e3), abs=2), t_ms
    assert src.offered_bps() == 6e9


def test_same_seed_same_frames(live, tmp_path):
    _, _, ingress, _ = live
    _, _, again, _ = run(tmp_path / "a", seed=1)
    assert again == ingress
    _, _, other, _ = run(tmp_path / "b", seed=2)
    assert [t for t, _ in other] == [t for t, _ in ingress]  # the schedule is the seed's no matter
    assert [f for _, f in other] != [f for _, f in ingress]
