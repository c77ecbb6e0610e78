"""Application traffic for a scenario's real NFs, as a pcap for `pattern: replay`.

  python scripts/gen_nf_traffic.py SCENARIO.yaml NF_TYPE OUT.pcap [--flows 50] [--seed 1] [--pps 100000]

For a `secgw` NF type: HTTP/TLS/DNS sessions (TCP handshakes, requests,
ClientHellos, DNS queries) encrypted into ESP tunnel mode under the type's first
inbound SA (Scapy's ESP implementation does the encryption). For any other type:
the same sessions in the clear."""

import argparse
import sys

import yaml

from tandem.model.scenario import NfType
from tandem.nf.traffic import app_mix, esp_frames, write_pcap

ap = argparse.ArgumentParser()
ap.add_argument("scenario")
ap.add_argument("nf_type")
ap.add_argument("out")
ap.add_argument("--flows", type=int, default=50)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--pps", type=float, default=100_000.0)
a = ap.parse_args()
# Only the NF type is read (the scenario may name the very pcap this writes).
types = (yaml.safe_load(open(a.scenario)) or {}).get("nf_types") or {}
if a.nf_type not in types:
    sys.exit(f"{a.scenario}: no nf_types.{a.nf_type} (nf_types: {', '.join(types) or 'none'})")
t = NfType.model_validate(types[a.nf_type])
frames, _ = app_mix(a.seed, a.flows)
if t.type == "secgw":
    sa = next((s for s in t.config.get("sas", []) if s.get("dir") == "in"), None)
    if sa is None:
        sys.exit(f"{a.scenario}: nf_types.{a.nf_type}.config.sas: no inbound (dir: in) SA")
    frames = esp_frames(frames, int(sa["spi"]), bytes.fromhex(sa["key"]), sa["local"], sa["remote"],
                        esn=sa.get("esn", True))
write_pcap(a.out, frames, pps=a.pps)
n = len(frames)
print(f"wrote {n} frames to {a.out}")
