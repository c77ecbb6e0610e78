"""Calibrated NF type presets from the papers.

An ``nf_types`` entry may say ``preset: uno.dpi``; the preset's fields are the
defaults and anything written next to it overrides them, key by key (mappings
are merged recursively, so ``cost: {snic: {latency: 1us}}`` changes only that
latency). Values are written exactly as a scenario file would write them.

- ``uno.*`` (all calibrated): UNO §5.3 ratios n_i/h_i (DPI 2, L7FW 4, SECGW
  0.75); DPI needs 5 host / 10 sNIC cores for 9 Gbps; L7FW and SECGW absolute
  figures solved from Fig. 10 (4 Gbps of SECGW → L7FW = 6 x86 cores or 8 TILE-Gx
  cores), see examples/uno-sdwan.yaml. Those paper numbers set the constants, so
  Tandem does not report them back as reproduced. Cycle costs assume a 2.7 GHz host and a 1.2 GHz sNIC
  (cycles/byte = cores_per_gbps × clock / 1.25e8).
- ``smartchain.*``: Table I capacities θ and latencies t (">10Gbps" as 10Gbps).

Pure data plus one merge function.
"""

from __future__ import annotations

from typing import Any

_TUPLE5 = ["ipv4_src", "ipv4_dst", "ip_proto", "tcp_src", "tcp_dst"]

PRESETS: dict[str, dict[str, Any]] = {
    "uno.dpi": {
        "description": "deep packet inspection (UNO §5.3: 5 host / 10 sNIC cores at 9 Gbps)",
        "cost": {
            "host": {"cores_per_gbps": 0.5556, "cycles_per_byte": 12.0},
            "snic": {"cores_per_gbps": 1.1111, "cycles_per_byte": 10.67},
        },
        "reads": [*_TUPLE5, "payload"],
        "actions": ["read"],
        "state": "per_flow",
    },
    "uno.l7fw": {
        "description": "layer-7 firewall (UNO §5.1, ratio 4)",
        "cost": {
            "host": {"cores_per_gbps": 0.269, "cycles_per_byte": 5.8},
            "snic": {"cores_per_gbps": 1.077, "cycles_per_byte": 10.3},
        },
        "reads": [*_TUPLE5, "udp_src", "udp_dst", "payload"],
        "actions": ["read", "drop"],
        "state": "per_flow",
    },
    "uno.secgw": {
        "description": "IPsec security gateway (UNO §5.1, ratio 0.75, crypto on the sNIC engine)",
        "cost": {
            "host": {"cores_per_gbps": 1.231, "cycles_per_byte": 26.6},
            "snic": {"cores_per_gbps": 0.923, "cycles_per_packet": 11342, "accelerator": {"kind": "crypto", "bytes_fraction": 1.0}},
        },
        "reads": ["ipv4_src", "ipv4_dst", "ip_proto", "payload"],
        "writes": ["payload", "tunnel", "ipv4_src", "ipv4_dst"],
        "actions": ["read", "write", "decap"],
        "state": "per_flow",
    },
}

# SmartChain Table I: element -> (θ_C, θ_S, t_C, t_S, reads, writes, actions, state)
_TABLE_I = {
    "header_classifier": ("4Gbps", "10Gbps", "14.8us", "0.8us", _TUPLE5, ["flow_id"], ["read", "write"], "none"),
    "logger": ("4Gbps", "2Gbps", "15us", "245us", ["flow_id", "ipv4_src", "ipv4_dst"], [], ["read"], "per_flow"),
    "monitor": ("10Gbps", "3.2Gbps", "4us", "24us", [*_TUPLE5, "ip_len"], [], ["read"], "multi_flow"),
    "payload_analyzer": ("200Mbps", "5Gbps", "800us", "65us", ["payload"], [], ["read"], "none"),
    "alert": ("4Gbps", "10Gbps", "15.1us", "2.1us", ["ipv4_src", "ipv4_dst", "flow_id"], [], ["read", "drop"], "none"),
    "load_balancer": ("4Gbps", "10Gbps", "14.5us", "0.5us", _TUPLE5, ["eth_dst"], ["read", "write"], "per_flow"),
}
for _name, (_tc, _ts, _lc, _ls, _r, _w, _a, _s) in _TABLE_I.items():
    PRESETS[f"smartchain.{_name}"] = {
        "description": f"SmartChain Table I element {_name.replace('_', ' ')}",
        "cost": {"host": {"capacity": _tc, "latency": _lc}, "snic": {"capacity": _ts, "latency": _ls}},
        "reads": list(_r),
        "writes": list(_w),
        "actions": list(_a),
        "state": _s,
    }


def deep_merge(base: Any, override: Any) -> Any:
    """``override`` on top of ``base``; mappings merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = deep_merge(base[k], v) if k in base else v
        return out
    return override
