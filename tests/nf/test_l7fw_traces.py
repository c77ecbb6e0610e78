"""L7FW detects the application of every flow: a generated mixed HTTP/TLS/DNS
trace (TLS ClientHellos split inside the SNI on half the flows) and the
checked-in capture tests/nf/data/l7fw_mixed.pcap (made by
scripts/gen_l7fw_pcap.py; its .expected file is the generator's truth)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from tandem._dp import Nf
from tandem.nf.traffic import app_mix, read_pcap

DATA = Path(__file__).parent / "data"
CFG = json.dumps({"apps": [{"name": "blocked-video", "hosts": ["*.video.example"], "action": "block"}]})


def detections(nf: Nf) -> dict[tuple, tuple]:
    out = {}
    for line in nf.command("detections").splitlines():
        flow, l7, name, method, app, verdict = line.split()
        a, b = flow.rsplit("/", 1)[0].split("-")
        (ha, pa), (hb, pb) = a.rsplit(":", 1), b.rsplit(":", 1)
        ends = sorted([(int(ipaddress.ip_address(ha)), int(pa)), (int(ipaddress.ip_address(hb)), int(pb))])
        out[tuple(ends)] = (l7, name, method)
    return out


def key(client: str, sport: int, server: str, dport: int) -> tuple:
    return tuple(sorted([(int(ipaddress.ip_address(client)), sport), (int(ipaddress.ip_address(server)), dport)]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_generated_flow_is_detected(seed):
    frames, truth = app_mix(seed, 400)
    nf = Nf("l7fw", CFG)
    for i, fr in enumerate(frames):
        nf.process(fr, 0, i * 1000)
    got = detections(nf)
    misses = [f for f in truth if got.get(key(f.client, f.sport, f.server, f.dport))
              != (f.proto, f.name, f.method or "-")]
    assert misses == [], misses[:5]
    c = nf.counters()
    assert c["detected_http"] + c["detected_tls"] + c["detected_dns"] == len(truth)
    assert c["undetected"] == 0


def test_sni_split_across_two_segments():
    frames, truth = app_mix(5, 60, split_tls=1.0)
    tls = [f for f in truth if f.proto == "tls"]
    assert tls
    nf = Nf("l7fw", CFG)
    for fr in frames:
        nf.process(fr, 0, 0)
    got = detections(nf)
    for f in tls:
        assert got[key(f.client, f.sport, f.server, f.dport)][:2] == ("tls", f.name)


def test_checked_in_pcap():
    frames = read_pcap(DATA / "l7fw_mixed.pcap")
    truth = [line.split() for line in (DATA / "l7fw_mixed.expected").read_text().splitlines()]
    assert len(truth) == 40
    nf = Nf("l7fw", CFG)
    for fr in frames:
        nf.process(fr, 0, 0)
    got = detections(nf)
    for client, sport, server, dport, proto, name, method in truth:
        assert got[key(client, int(sport), server, int(dport))] == (proto, name, method), (client, sport)


def test_block_verdict_is_cached_per_flow():
    from tandem.nf.traffic import AppFlow, tcp_session, tls_client_hello
    import random

    f = AppFlow("10.0.0.1", "10.0.0.2", 40000, 443, "tls", "x.video.example")
    frames = tcp_session(f, tls_client_hello(f.name, random.Random(1)), 40, b"server data")
    nf = Nf("l7fw", CFG)
    fates = [nf.process(fr, 0, 0)[:2] for fr in frames]
    # handshake and the first ClientHello segment pass; from the SNI on, every packet of the flow is blocked
    assert fates[:4] == [("forward", 1)] * 4
    assert all(x == ("drop", "blocked") for x in fates[4:])
