"""Meters on the wire: METER_MOD, the meter instruction and the meter multipart
requests against golden bytes made by os-ken (make_golden.py); the switch's
replies (meter stats, config, features) against Open vSwitch's own parser."""

import subprocess
from pathlib import Path

import pytest

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import ApplyActions, FlowMod, Match, MeterInstruction, Output, Rule
from tandem.rules.meters import OFPM_ALL, Meter, MeterBand, MeterFeatures, MeterMod, MeterStats
from tandem.rules.ofwire_meter import (
    decode_meter_configs, decode_meter_features, decode_meter_mod, decode_meter_stats, encode_meter_config,
    encode_meter_features, encode_meter_mod, encode_meter_stats,
)

GOLDEN = Path(__file__).parent / "golden"

METER_MODS = {
    "meter_mod_add": (0x61, MeterMod("add", Meter(5, (MeterBand("drop", 1000, 10), MeterBand("dscp_remark", 500, 20, 1)),
                                                  burst=True, stats=True))),
    "meter_mod_modify_pktps": (0x62, MeterMod("modify", Meter(0xFFFF0000, (MeterBand("drop", 100),), pktps=True))),
    "meter_mod_delete_all": (0x63, MeterMod("delete", Meter(OFPM_ALL))),
}


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


@pytest.mark.parametrize("name", sorted(METER_MODS))
def test_meter_mod_matches_os_ken(name):
    xid, mod = METER_MODS[name]
    raw = golden(name)
    assert encode_meter_mod(xid, mod) == raw
    assert W.OFP_HEADER.unpack_from(raw) == (4, W.OFPT_METER_MOD, len(raw), xid)
    assert decode_meter_mod(raw[8:]) == mod


def test_flow_mod_with_meter_instruction_matches_os_ken():
    mod = FlowMod("add", Rule(Match.of(in_port=1), (MeterInstruction(5), ApplyActions((Output(2, 0),))), priority=9))
    raw = golden("flow_mod_meter")
    assert M.encode_flow_mod(0x64, mod) == raw
    back = M.decode_flow_mod(raw[8:]).mod
    assert back == mod and back.rule.meter == 5


@pytest.mark.parametrize("name, xid, req", [
    ("mp_meter_request", 0x65, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=OFPM_ALL)),
    ("mp_meter_config_request", 0x66, S.MultipartRequest(S.OFPMP_METER_CONFIG, 0, meter_id=5)),
    ("mp_meter_features_request", 0x67, S.MultipartRequest(S.OFPMP_METER_FEATURES, 0)),
])
def test_meter_multipart_requests_match_os_ken(name, xid, req):
    raw = golden(name)
    assert S.encode_multipart_request(xid, req) == raw
    assert S.decode_multipart_request(raw[8:]) == req


@pytest.mark.parametrize("body, code", [
    (bytes.fromhex("0003000000000001"), 4),  # command 3: BAD_COMMAND
    (bytes.fromhex("0000000100000000"), 2),  # meter id 0: INVALID_METER
    (bytes.fromhex("0000000300000001"), 5),  # kbps and pktps: BAD_FLAGS
    (bytes.fromhex("0000000100000001"), 8),  # no bands: BAD_BAND
    (bytes.fromhex("00000001000000010003001000000001000000000000000000"), 8),  # band type 3
    (bytes.fromhex("0000000100000001000100100000000000000000" "00000000"), 6),  # rate 0: BAD_RATE
])
def test_bad_meter_mods_get_the_meter_mod_failed_code(body, code):
    with pytest.raises(W.OFError) as e:
        decode_meter_mod(body)
    assert (e.value.etype, e.value.code) == (W.OFPET_METER_MOD_FAILED, code)


def test_meter_instruction_of_a_reserved_id_is_refused():
    ins = bytes.fromhex("00060008ffffffff")
    with pytest.raises(W.OFError):
        W.decode_instructions(ins)


def test_reply_bodies_round_trip():
    st = MeterStats(5, 2, 1000, 1_250_000, 3, 500, ((900, 1_125_000), (0, 0)))
    assert decode_meter_stats(encode_meter_stats(st) * 2) == [st, st]
    m = METER_MODS["meter_mod_add"][1].meter
    assert decode_meter_configs(encode_meter_config(m)) == [m]
    f = MeterFeatures()
    assert decode_meter_features(encode_meter_features(f)) == f


def ofp_print(data: bytes) -> str:
    p = subprocess.run(["ovs-ofctl", "ofp-print", data.hex()], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.ovs
def test_meter_replies_parse_in_ovs():
    st = MeterStats(5, 2, 1000, 1_250_000, 3, 500_000_000, ((900, 1_125_000),))
    out = ofp_print(S.encode_multipart_replies(7, S.OFPMP_METER, [encode_meter_stats(st)])[0])
    assert "meter:5 flow_count:2 packet_in_count:1000 byte_in_count:1250000 duration:3.500s" in out, out
    assert "0: packet_count:900 byte_count:1125000" in out, out
    m = METER_MODS["meter_mod_add"][1].meter
    out = ofp_print(S.encode_multipart_replies(8, S.OFPMP_METER_CONFIG, [encode_meter_config(m)])[0])
    assert "meter=5 kbps burst stats bands=" in out and "type=drop rate=1000 burst_size=10" in out, out
    assert "type=dscp_remark rate=500 burst_size=20 prec_level=1" in out, out
    out = ofp_print(S.encode_multipart_replies(9, S.OFPMP_METER_FEATURES, [encode_meter_features(MeterFeatures())])[0])
    assert "max_meter:65536 max_bands:8 max_color:0" in out and "band_types: drop dscp_remark" in out, out
    # and OVS reads our METER_MOD as the same meter
    out = ofp_print(encode_meter_mod(3, METER_MODS["meter_mod_add"][1]))
    assert "ADD meter=5 kbps burst stats bands=" in out and "type=dscp_remark rate=500 burst_size=20 prec_level=1" in out, out
