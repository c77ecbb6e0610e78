"""Scenarios select real NFs with `nf_types.*.type` + `config`: validated with
precise messages, built into the emulator, and reported per NF in metrics.json
(SD-WAN of UNO §5.1: ESP under a scenario SA, decrypted by the SECGW, then the
L7FW)."""

from __future__ import annotations

import random

import pytest

from tandem.emu.run import run_scenario
from tandem.model import parse_scenario_text
from tandem.model.load import ScenarioError
from tandem.nf.traffic import app_mix, esp_frames, write_pcap

KEY = bytes(range(16)) + bytes.fromhex("01020304")

SCN = """
name: sdwan-real
devices:
  host: {kind: host, cores: 4, clock: 2.7GHz}
  snic0:
    kind: snic
    cores: 8
    clock: 1.2GHz
    ports: {eth0: {rate: 10Gbps}, eth1: {rate: 10Gbps}}
links:
  pcie0: {snic: snic0, bandwidth: 32Gbps, round_trip: 26us}
nf_types:
  sgw:
    type: secgw
    config:
      sas:
        - {spi: 4660, dir: in, cipher: aes128gcm, key: "KEYHEX", local: 192.0.2.1, remote: 198.51.100.9}
    cost: {snic: {cycles_per_packet: 400, cycles_per_byte: 2}, host: {cycles_per_packet: 300, cycles_per_byte: 1}}
  fw:
    type: l7fw
    config:
      apps: [{name: shop, hosts: ["*.shop.example"], action: block}]
    cost: {snic: {cycles_per_packet: 800}, host: {cycles_per_packet: 200}}
instances:
  s1: {kind: nf, type: sgw, pin: snic0}
  f1: {kind: nf, type: fw, pin: snic0}
  vm1: {kind: vm}
chains:
  wan: {nfs: [s1, f1], ingress: snic0.eth0, egress: vm1}
traffic:
  t1: {target: wan, pattern: replay, pcap: PCAP}
"""


def scenario(tmp_path, **repl):
    frames, truth = app_mix(7, 30)
    esp = esp_frames(frames, 4660, KEY, "192.0.2.1", "198.51.100.9")
    pcap = tmp_path / "wan.pcap"
    write_pcap(pcap, esp, pps=200_000)
    text = SCN.replace("KEYHEX", KEY.hex()).replace("PCAP", str(pcap))
    for a, b in repl.items():
        text = text.replace(a, b)
    return parse_scenario_text(text), len(esp), truth


def test_real_chain_runs_and_reports_counters(tmp_path):
    sc, n, truth = scenario(tmp_path)
    m = run_scenario(sc, tmp_path / "out", duration=n / 200_000 * 0.999)
    c = m["nf_counters"]
    assert c["s1"]["decrypted"] >= n - 2 and c["s1"]["auth_failed"] == 0 and c["s1"]["replayed"] == 0
    detected = c["f1"]["detected_http"] + c["f1"]["detected_tls"] + c["f1"]["detected_dns"]
    assert detected == len(truth)
    assert (tmp_path / "out" / "metrics.json").read_text().count('"decrypted"') == 1


def test_unknown_type_lists_known_ones(tmp_path):
    sc_text = SCN.replace("type: l7fw", "type: l8fw")
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(sc_text.replace("KEYHEX", KEY.hex()).replace("PCAP", "x.pcap"))
    msg = str(e.value)
    assert "nf_types.fw" in msg and "unknown NF type 'l8fw'" in msg and "secgw" in msg and "maglev_lb" in msg


@pytest.mark.parametrize("old,new,want", [
    ("cipher: aes128gcm", "cipher: aes512gcm", "config.sas[0].cipher"),
    ("spi: 4660", "spi: 12", "config.sas[0].spi: 12 is reserved"),
    ("action: block", "action: maybe", "config.apps[0].action"),
])
def test_bad_config_names_the_field(tmp_path, old, new, want):
    text = SCN.replace("KEYHEX", KEY.hex()).replace("PCAP", "x.pcap").replace(old, new)
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(text)
    assert want in str(e.value)
    assert "nf_types." in str(e.value)
    random.seed(0)


def test_declared_fields_feed_the_model(tmp_path):
    sc, _, _ = scenario(tmp_path)
    sgw, fw = sc.nf_types["sgw"], sc.nf_types["fw"]
    assert "payload" in sgw.writes and {"encap", "decap", "drop"} <= set(sgw.effective_actions)
    assert fw.writes == [] and "drop" in fw.effective_actions and "payload" in fw.reads


@pytest.mark.parametrize("config,want", [
    ({"sas": [{"spi": 300, "dir": "in", "cipher": "aes128gcm", "key": "00" * 20, "local": "1.1.1.1", "remote": "2.2.2.2"},
              {"spi": 301, "dir": "in", "cipher": "aes128gcm", "local": "1.1.1.1", "remote": "2.2.2.2"}]},
     "config.sas[1]: missing field `key`"),
    ({"sas": [{"spi": "x", "dir": "in", "cipher": "aes128gcm", "key": "00" * 20, "local": "1.1.1.1", "remote": "2.2.2.2"}]},
     'config.sas[0].spi: invalid type: string "x", expected u32'),
    ({"sas": [{"spi": 300, "dir": "in", "cipher": "aes128gcm", "key": "00" * 20, "local": "1.1.1.1", "remote": "2.2.2.2",
               "colour": 1}]}, "config.sas[0]: unknown field `colour`"),
    ({"sas": [{"spi": 300, "dir": "in", "cipher": "aes128gcm", "key": "00" * 19, "local": "1.1.1.1", "remote": "2.2.2.2"}]},
     "config.sas[0].key: aes128gcm needs 20 bytes (key + 4-byte salt), got 19"),
])
def test_config_errors_carry_the_path(config, want):
    from tandem.nf.config import check_nf_config

    assert check_nf_config("secgw", config).startswith(want)
