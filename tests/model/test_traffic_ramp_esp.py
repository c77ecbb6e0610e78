"""Traffic sources with a rate schedule (`pattern: ramp`) and live ESP (`esp:`): what a
good file gives, and a precise error (YAML path, line and column) for each bad one."""

from __future__ import annotations

import pytest

from tandem.model import ScenarioError, load_scenario, parse_scenario_text
from tandem.model.scenario import esp_frame_len

HEAD = """\
name: t
devices:
  host: {kind: host}
  snic0: {kind: snic}
links:
  pcie0: {snic: snic0}
nf_types:
  sgw:
    type: secgw
    config:
      sas:
        - {spi: 4660, dir: in, cipher: aes128gcm, key: "000102030405060708090a0b0c0d0e0f01020304", local: 192.0.2.1, remote: 198.51.100.9}
        - {spi: 4661, dir: in, cipher: aes128gcm, key: "000102030405060708090a0b0c0d0e0f01020305", local: 192.0.2.1, remote: 198.51.100.10}
        - {spi: 9000, dir: out, cipher: aes128gcm, key: "000102030405060708090a0b0c0d0e0f01020306", local: 192.0.2.1, remote: 198.51.100.10}
    cost: {host: {cycles_per_byte: 2}, snic: {cycles_per_byte: 2}}
  mon: {cost: {host: {cycles_per_packet: 100}, snic: {cycles_per_packet: 100}}}
instances:
  s1: {kind: nf, type: sgw}
  vm1: {kind: vm}
chains:
  c: {nfs: [s1], ingress: snic0.eth0, egress: vm1}
traffic:
"""

RAMP = "{target: c, pattern: ramp, packet_size: 1000B, schedule: [{at: 0ms, bandwidth: 1Gbps}, {at: 10ms, bandwidth: 5Gbps}]"


def parse(source: str):
    return parse_scenario_text(HEAD + "  g: " + source + "\n")


def problems(source: str) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as e:
        parse(source)
    return e.value.problems


def test_a_ramp_reports_its_peak_and_integrates_its_schedule():
    src = parse(RAMP + "}").traffic["g"]
    assert src.ramp_points() == [(0.0, 125_000.0), (0.01, 625_000.0)]
    assert src.offered_bps() == 5e9 and src.offered_pps() == 625_000.0
    # linear: (125k + 625k) / 2 pps over 10 ms, then 625k pps
    assert src.scheduled_packets(0.01) == pytest.approx(3750)
    assert src.scheduled_packets(0.02) == pytest.approx(3750 + 6250)
    step = parse(RAMP + ", interpolate: step}").traffic["g"]
    assert step.scheduled_packets(0.02) == pytest.approx(1250 + 6250)
    pps = parse("{target: c, pattern: ramp, schedule: [{at: 0s, packet_rate: 0pps}, {at: 1s, packet_rate: 2Mpps}]}")
    assert pps.traffic["g"].scheduled_packets(1.0) == pytest.approx(1e6)


def test_esp_defaults_and_frame_sizes():
    src = parse(RAMP + ", esp: {secgw: sgw}}").traffic["g"]
    assert src.esp.spis == [] and [a.proto for a in src.esp.apps] == ["tls", "tls", "http"]
    assert src.size_mix() == [(998, 1.0)]  # 66 + 4k bytes
    assert [esp_frame_len(n) for n in (1280, 1278, 1282, 110, 64)] == [1278, 1278, 1282, 110, 110]
    mix = parse("{target: c, bandwidth: 1Gbps, packet_size_mix: {1280B: 1, 1279B: 1, 200B: 2}, esp: {secgw: sgw}}")
    assert mix.traffic["g"].size_mix() == [(198, 0.5), (1278, 0.5)]


@pytest.mark.parametrize("source,path,message", [
    ("{target: c, pattern: ramp}", "traffic.g.schedule",
     "pattern ramp needs schedule: a list of {at: TIME, bandwidth: RATE} points, the first at 0s"),
    ("{target: c, pattern: ramp, bandwidth: 1Gbps, schedule: [{at: 0s, bandwidth: 1Gbps}]}", "traffic.g.bandwidth",
     "not allowed with pattern ramp: the schedule gives the rates"),
    ("{target: c, pattern: ramp, schedule: [{at: 1ms, bandwidth: 1Gbps}]}", "traffic.g.schedule[0].at",
     "the first point must be at 0s (the source's start), not 0.001s"),
    ("{target: c, pattern: ramp, schedule: [{at: 0s, bandwidth: 1Gbps}, {at: 5ms, bandwidth: 2Gbps}, {at: 4ms, bandwidth: 1Gbps}]}",
     "traffic.g.schedule[2].at", "0.004s is earlier than point 1 (0.005s); times must not decrease"),
    ("{target: c, pattern: ramp, schedule: [{at: 0s, bandwidth: 0Gbps}]}", "traffic.g.schedule[0].bandwidth",
     "every rate of the schedule is 0: the source would send nothing"),
    ("{target: c, pattern: ramp, schedule: [{at: 0s, bandwidth: 1Gbps, packet_rate: 1Mpps}]}", "traffic.g.schedule[0]",
     "give exactly one of bandwidth (e.g. 4Gbps) or packet_rate (e.g. 1.5Mpps)"),
    ("{target: c, pattern: ramp, schedule: [{at: -1s, bandwidth: 1Gbps}]}", "traffic.g.schedule[0].at", None),
    ("{target: c, pattern: ramp, schedule: []}", "traffic.g.schedule", None),
    ("{target: c, bandwidth: 1Gbps, schedule: [{at: 0s, bandwidth: 1Gbps}]}", "traffic.g.schedule",
     "applies only to pattern ramp"),
    ("{target: c, bandwidth: 1Gbps, interpolate: step}", "traffic.g.interpolate", "applies only to pattern ramp"),
    ("{target: c, pattern: ramp, interpolate: cubic, schedule: [{at: 0s, bandwidth: 1Gbps}]}", "traffic.g.interpolate", None),
    ("{target: c, bandwidth: 1Gbps, packet_size: 100B, esp: {secgw: sgw}}", "traffic.g.packet_size",
     "100B is too small for an ESP tunnel frame with an inner TCP segment (at least 110B)"),
    ("{target: c, bandwidth: 1Gbps, esp: {secgw: sgw}}", "traffic.g.packet_size",
     "64B is too small for an ESP tunnel frame with an inner TCP segment (at least 110B)"),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: nope}}", "traffic.g.esp.secgw",
     "unknown NF type 'nope'; the SAs come from a type: secgw NF type (those: sgw)"),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: mon}}", "traffic.g.esp.secgw",
     "NF type 'mon' is not a secgw (type: None); the SAs come from a type: secgw NF type (those: sgw)"),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: sgw, spis: [4661, 9000]}}", "traffic.g.esp.spis[1]",
     "SPI 9000 is not an inbound SA of nf_types.sgw (inbound SPIs: 4660, 4661)"),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: sgw, spis: [12]}}", "traffic.g.esp.spis",
     "SPI 12 must be 256..4294967295 (1..255 are reserved, RFC 4303 §2.1)"),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: sgw, spis: [4660, 4660]}}", "traffic.g.esp.spis",
     "each SPI may be listed once"),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: sgw, apps: []}}", "traffic.g.esp.apps", None),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: sgw, apps: [{proto: quic, host: a.example}]}}",
     "traffic.g.esp.apps[0].proto", None),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: sgw, apps: [{proto: tls, host: a.example, weight: 0}]}}",
     "traffic.g.esp.apps[0].weight", None),
    ("{target: c, bandwidth: 1Gbps, packet_size: 1280B, esp: {secgw: sgw, apps: [{proto: tls, host: 'a b'}]}}",
     "traffic.g.esp.apps[0].host", None),
    ("{target: c, pattern: replay, pcap: x.pcap, esp: {secgw: sgw}}", "traffic.g.esp",
     "not allowed with pattern replay: the recording sets rates, sizes, flows and timing"),
])
def test_bad_ramps_and_esp_name_the_field(source, path, message):
    got = problems(source)
    assert [p for p, _ in got] == [path], got
    if message is not None:  # after the offending value, where the message shows it
        assert got[0][1].endswith(message), got


def test_errors_point_at_the_line(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(HEAD + "  g:\n    target: c\n    bandwidth: 1Gbps\n    packet_size: 1280B\n    esp:\n      secgw: sgw\n"
                 "      spis: [4660, 77777]\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(f)
    line = HEAD.count("\n") + 7
    assert str(e.value) == (f"{f}:{line}:20: traffic.g.esp.spis[1]: SPI 77777 is not an inbound SA of nf_types.sgw "
                            "(inbound SPIs: 4660, 4661)")
