"""Property tests over the bindings: for every NF kind and any seed/split,
export -> import gives an NF that behaves identically on the following
packets (full export), and a per-flow export moves exactly the chosen flows;
corrupt or wrong-version blobs are refused and leave the NF unchanged. The
configs and traces are dp-nf's samples (the same as the Rust tests), driven
through tandem._dp.Nf."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings, strategies as st

from tandem._dp import Nf, nf_kinds
from tandem.nf.traffic import app_mix

CONFIGS = {
    "l7fw": {"apps": [{"name": "v", "hosts": ["*.example"], "action": "rate_limit", "rate_pps": 5000, "burst": 3}]},
    "asset_monitor": {},
    "nat": {"external_ip": "203.0.113.1", "port_min": 2000, "port_max": 2100, "timeout_s": 0.001},
    "maglev_lb": {"vip": "172.16.3.4", "backends": ["10.8.0.1", "10.8.0.2", "10.8.0.3"], "table_size": 251},
    "monitor": {"depth": 3, "width": 64, "heavy_bytes": 300, "max_candidates": 1000},
    "logger": {"interval_ms": 0.01},
    "header_classifier": {"rules": [{"dst": "172.16.0.0/16", "dport": 443, "port": 1}, {"proto": 17, "port": "drop"}], "default": 0},
    "payload_analyzer": {"patterns": [{"name": "h", "string": "Host:"}, {"name": "get", "regex": "^GET /"}]},
    "alert": {"rules": [{"name": "syn", "syn_only": True}], "rate_per_s": 100000, "burst": 2, "flow_holdoff_ms": 0.002},
}


def test_every_real_kind_is_covered():
    assert set(nf_kinds()) - {"fixed_cost", "pass_through", "secgw"} == set(CONFIGS)


def run(nf, frames, t0):
    return [nf.process(fr, i % 2 if nf.kind == "nat" else 0, t0 + i * 1_000_000) for i, fr in enumerate(frames)]


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(sorted(CONFIGS)), seed=st.integers(0, 10_000), split=st.integers(10, 150))
def test_full_export_import_identical_behaviour(kind, seed, split):
    frames, _ = app_mix(seed, 25)
    cfg = json.dumps(CONFIGS[kind])
    a = Nf(kind, cfg)
    run(a, frames[:split], 0)
    b = Nf(kind, cfg)
    b.import_state(a.export_state())
    assert run(a, frames[split:], split * 1_000_000) == run(b, frames[split:], split * 1_000_000)
    assert a.export_state() == b.export_state()


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(sorted(CONFIGS)), seed=st.integers(0, 10_000), octet=st.integers(1, 25))
def test_per_flow_move(kind, seed, octet):
    frames, truth = app_mix(seed, 25)
    cfg = json.dumps(CONFIGS[kind])
    a = Nf(kind, cfg)
    run(a, frames, 0)
    flt = f"src=10.1.0.{octet},bidir"
    blob = a.export_flows(flt, True)
    c = Nf(kind, cfg)
    n = c.import_flows(blob)
    assert n == c.flow_count()
    assert c.export_flows(flt, False) == a.export_flows(flt, False)
    # nothing else came along
    assert c.export_flows("", False) == c.export_flows(flt, False)


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(CONFIGS)), pos=st.integers(0, 10**9), bit=st.integers(0, 7))
def test_corrupt_blob_refused_nf_unchanged(kind, pos, bit):
    frames, _ = app_mix(3, 10)
    a = Nf(kind, json.dumps(CONFIGS[kind]))
    run(a, frames, 0)
    blob = bytearray(a.export_state())
    before = a.export_state()
    blob[pos % len(blob)] ^= 1 << bit
    try:
        a.import_state(bytes(blob))
        raise AssertionError("corrupt blob accepted")
    except ValueError as e:
        assert "corrupt" in str(e) or "magic" in str(e)
    assert a.export_state() == before


def test_wrong_version_refused_with_precise_error():
    from tandem._dp import nf_blob_reseal

    a = Nf("nat", json.dumps(CONFIGS["nat"]))
    blob = bytearray(a.export_state())
    at = 4 + 1 + len("nat")
    blob[at:at + 2] = (7).to_bytes(2, "little")
    try:
        a.import_state(nf_blob_reseal(bytes(blob)))
        raise AssertionError("accepted")
    except ValueError as e:
        assert str(e) == "nat state: blob has format version 7, this NF reads version 1"


def test_declared_fields():
    for kind, cfg in CONFIGS.items():
        f = Nf(kind, json.dumps(cfg)).fields()
        assert f["reads"], kind
    s = Nf("secgw", json.dumps({"sas": [{"spi": 300, "dir": "in", "cipher": "aes128gcm", "key": "00" * 20,
                                         "local": "1.1.1.1", "remote": "2.2.2.2"}]})).fields()
    assert s["reencapsulates"] and s["drops"] and "payload" in s["writes"]
    assert Nf("monitor", json.dumps(CONFIGS["monitor"])).fields()["drops"] is False
    random.seed(0)
