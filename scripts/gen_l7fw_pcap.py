"""Write the checked-in L7FW test capture and its expected detections.

  python scripts/gen_l7fw_pcap.py   # writes tests/nf/data/l7fw_mixed.pcap + .expected

The capture is 40 HTTP/TLS/DNS flows from tandem.nf.traffic.app_mix (seed 11),
with several TLS ClientHellos split across two TCP segments inside the SNI.
The expected file lists each flow's protocol and name as generated (the truth,
not the detector's output)."""

from pathlib import Path

from tandem.nf.traffic import app_mix, write_pcap

out = Path(__file__).resolve().parent.parent / "tests" / "nf" / "data"
out.mkdir(parents=True, exist_ok=True)
frames, truth = app_mix(11, 40, split_tls=0.6)
write_pcap(out / "l7fw_mixed.pcap", frames)
with open(out / "l7fw_mixed.expected", "w") as fh:
    for f in truth:
        fh.write(f"{f.client} {f.sport} {f.server} {f.dport} {f.proto} {f.name} {f.method or '-'}\n")
print(f"{len(frames)} frames, {len(truth)} flows -> {out}")
