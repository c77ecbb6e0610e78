"""SECGW against an independent IPsec implementation (Scapy's ESP, AES-GCM via
`cryptography`): 10,000 packets each way, tunnel mode, 64-bit ESN (the
Scapy→Tandem direction crosses the 2^32 sequence boundary), plus anti-replay
and tampered-tag drops with counted reasons."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("cryptography")
from scapy.layers.inet import IP, TCP, UDP  # noqa: E402
from scapy.layers.ipsec import ESP, SecurityAssociation  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

from tandem._dp import Nf  # noqa: E402

N = 10_000
KEY128 = bytes(range(16)) + bytes.fromhex("deadbeef")
KEY256 = bytes(range(32)) + bytes.fromhex("cafebabe")
LOCAL, REMOTE = "192.0.2.1", "198.51.100.7"


def gw(cipher: str, key: bytes, spi_out: int, spi_in: int, window: int = 128, esn: bool = True) -> Nf:
    sas = [
        {"spi": spi_out, "dir": "out", "cipher": cipher, "key": key.hex(), "local": LOCAL, "remote": REMOTE, "ttl": 61,
         "esn": esn},
        {"spi": spi_in, "dir": "in", "cipher": cipher, "key": key.hex(), "local": LOCAL, "remote": REMOTE,
         "replay_window": window, "esn": esn},
    ]
    return Nf("secgw", json.dumps({"sas": sas}))


def inner(i: int, rng: random.Random) -> IP:
    payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 1300)))
    l4 = TCP(sport=1024 + i % 5000, dport=443, flags="PA", seq=i) if i % 2 else UDP(sport=5000 + i % 100, dport=53)
    return IP(src=f"10.0.{i % 250}.{1 + i % 200}", dst="10.9.0.1", ttl=64, tos=(i % 64) << 2) / l4 / payload


def scapy_sa(spi: int, key: bytes, src: str, dst: str, esn: bool = True) -> SecurityAssociation:
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=key,
                               tunnel_header=IP(src=src, dst=dst), esn_en=esn)


@pytest.mark.parametrize("cipher,key", [("aes128gcm", KEY128), ("aes256gcm", KEY256)])
def test_tandem_encrypts_scapy_decrypts(cipher, key):
    n = N if cipher == "aes128gcm" else 1000
    nf = gw(cipher, key, 0x2001, 0x2002)
    sa = scapy_sa(0x2001, key, LOCAL, REMOTE)
    rng = random.Random(1)
    fails = 0
    for i in range(n):
        pkt = inner(i, rng)
        fate, port, out = nf.process(bytes(Ether() / pkt), 0)
        assert (fate, port) == ("forward", 1)
        outer = Ether(out)[IP]
        assert outer.proto == 50 and outer.src == LOCAL and outer.dst == REMOTE and outer.ttl == 61
        assert outer.tos == pkt.tos
        assert outer[ESP].seq == i + 1
        got = sa.decrypt(outer)
        if bytes(got) != bytes(pkt):
            fails += 1
    assert fails == 0
    assert nf.counters()["encrypted"] == n


@pytest.mark.parametrize("cipher,key", [("aes128gcm", KEY128), ("aes256gcm", KEY256)])
def test_scapy_encrypts_tandem_decrypts_across_esn_boundary(cipher, key):
    n = N if cipher == "aes128gcm" else 1000
    nf = gw(cipher, key, 0x3001, 0x3002)
    sa = scapy_sa(0x3002, key, REMOTE, LOCAL)
    rng = random.Random(2)
    base = (1 << 32) - n // 2
    fails = 0
    for i in range(n):
        pkt = inner(i, rng)
        s = base + i
        if s & 0xFFFFFFFF == 0:
            # Scapy reads seq_num=0 as "not given" and sends its default 1, so
            # it cannot emit low half 0: that one sequence number is skipped.
            continue
        enc = sa.encrypt(pkt, seq_num=s & 0xFFFFFFFF, esn=s >> 32)
        fate, port, out = nf.process(bytes(Ether() / enc), 1)
        if (fate, port) != ("forward", 0) or out[14:] != bytes(pkt):
            fails += 1
    assert fails == 0
    c = nf.counters()
    assert c["decrypted"] == n - 1 and c["auth_failed"] == 0


def test_anti_replay_and_tampered_tag():
    nf = gw("aes128gcm", KEY128, 0x4001, 0x4002, window=64, esn=False)
    sa = scapy_sa(0x4002, KEY128, REMOTE, LOCAL, esn=False)
    rng = random.Random(3)
    frames = {s: bytes(Ether() / sa.encrypt(inner(s, rng), seq_num=s)) for s in range(1, 201)}
    assert nf.process(frames[200], 1)[0] == "forward"
    assert nf.process(frames[150], 1)[0] == "forward"  # inside the window, not seen yet
    assert nf.process(frames[150], 1)[:2] == ("drop", "replayed")
    assert nf.process(frames[200], 1)[:2] == ("drop", "replayed")
    assert nf.process(frames[100], 1)[:2] == ("drop", "too_old")  # 200 - 100 >= 64
    tampered = bytearray(frames[199])
    tampered[-3] ^= 0x10
    assert nf.process(bytes(tampered), 1)[:2] == ("drop", "auth_failed")
    # the tampered packet did not consume its sequence number
    assert nf.process(frames[199], 1)[0] == "forward"
    bad_spi = bytes(Ether() / scapy_sa(0x9999, KEY128, REMOTE, LOCAL, esn=False).encrypt(inner(1, rng), seq_num=1))
    assert nf.process(bad_spi, 1)[:2] == ("drop", "unknown_spi")
    c = nf.counters()
    assert (c["replayed"], c["too_old"], c["auth_failed"], c["unknown_spi"]) == (2, 1, 1, 1)


def test_esn_below_the_window_is_read_as_the_next_epoch():
    # RFC 4303 A2.2: with ESN, a low half below the window means the high half
    # moved on, so such a packet fails the ICV (counted) instead of replaying.
    nf = gw("aes128gcm", KEY128, 0x5001, 0x5002, window=64)
    sa = scapy_sa(0x5002, KEY128, REMOTE, LOCAL)
    rng = random.Random(4)
    old = bytes(Ether() / sa.encrypt(inner(1, rng), seq_num=100))
    assert nf.process(bytes(Ether() / sa.encrypt(inner(2, rng), seq_num=200)), 1)[0] == "forward"
    assert nf.process(old, 1)[:2] == ("drop", "auth_failed")
    nxt = bytes(Ether() / sa.encrypt(inner(3, rng), seq_num=100, esn=1))
    assert nf.process(nxt, 1)[0] == "forward"
