"""``learn`` whose ``result_dst`` is an NSH field's bit (NXAST_LEARN2 with the field's 8-byte
experimenter OXM header): Open vSwitch 3.1 writes the result (1 learned, 0 refused by the
limit) into the flow, and the frame's NSH header carries it from the next output (measured
with frames, below). Text round trips Open vSwitch takes and prints back the same way,
golden wire bytes (what Open vSwitch 3.1 sent back in FLOW_STATS), and dp-core against the
frames Open vSwitch sent. The random rules: ``tandem bench of13_oracle -- --items
nsh_learn_result``; FLOW_STATS byte for byte: ``tests/endpoint/test_nx_flow_stats_vs_ovs.py``."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402

from tandem.dataplane.switch import Switch  # noqa: E402
from tandem.rules import nsh as N  # noqa: E402
from tandem.rules import ofwire_msgs as M  # noqa: E402
from tandem.rules.ir import ApplyActions, FlowMod, Learn, Match, Output, Rule, Subfield  # noqa: E402
from tandem.rules.ofctl import format_rule, parse_rule  # noqa: E402

NSH = "eth_type=0x894f"
MAC = "NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]"
# as Open vSwitch 3.1's ovs-ofctl dump-flows prints them (result_dst before the specs)
TEXTS = [
    f"{NSH},actions=learn(table=5,priority=3,result_dst=NXOXM_NSH_FLAGS[1],{MAC}),output:2",
    f"{NSH},actions=learn(table=6,limit=3,result_dst=NXOXM_NSH_C4[31],{MAC}),output:2",
    f"{NSH},actions=learn(table=6,result_dst=NXOXM_NSH_TTL[7]),learn(table=6,result_dst=NXOXM_NSH_SI[0],{MAC})",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)
    ours = format_rule(parse_rule(text)).split("actions=")[1]
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", text], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith(f"actions={ours}")  # (Open vSwitch prints the actions as Tandem does)


# the learn actions as Open vSwitch 3.1 sent them back in FLOW_STATS (priorities 60 and 61 of
# test_nx_flow_stats_vs_ovs.py): LEARN2 (subtype 45), flags 4 (write result), limit, result_dst's
# offset, 2 pad bytes, the 8-byte header (NXOXM_NSH_FLAGS: ffff0205 005ad650), the specs, padding
GOLDEN = {
    f"{NSH},actions=learn(table=5,priority=3,result_dst=NXOXM_NSH_FLAGS[1],{MAC})":
        "ffff004000002320002d000000000003000000000000000000040500000000000000000000010000ffff0205005ad650"
        "00300000040600000000020600000000",
    f"{NSH},actions=learn(table=6,limit=3,result_dst=NXOXM_NSH_C4[31],NXM_NX_REG1[0..15]=0x7,output:NXM_OF_IN_PORT[])":
        "ffff004800002320002d0000000080000000000000000000000406000000000000000003001f0000ffff1208005ad650"
        "201000070001020400001010800000040000000000000000",
    f"{NSH},actions=learn(table=6,result_dst=NXOXM_NSH_TTL[7])":
        "ffff003000002320002d000000008000000000000000000000040600000000000000000000070000ffff1405005ad650",
}


@pytest.mark.parametrize("text", GOLDEN)
def test_wire_matches_open_vswitchs_bytes(text):
    mod = FlowMod("add", parse_rule(text))
    raw = M.encode_flow_mod(9, mod)
    want = bytes.fromhex(GOLDEN[text])
    assert raw.endswith(struct.pack("!HH", 4, 8 + len(want)) + bytes(4) + want)  # (the apply-actions instruction)
    assert M.decode_flow_mod(raw[8:]).mod == mod


UDP = bytes.fromhex("02000000000202000000000108004500001c0000000040110000c0a80001c0a800020035003500080000")
HDR = dict(nsh_flags=1, nsh_ttl=0x2A, nsh_spi=0x123, nsh_si=5, nsh_np=3, nsh_c1=0x11, nsh_c2=0x22, nsh_c3=0x33,
           nsh_c4=0x44)


def _frame(src: int = 1) -> bytes:
    return (bytes.fromhex("0a0000000002") + (0x0A0000000000 | src).to_bytes(6, "big") + struct.pack("!H", N.ETH_TYPE_NSH)
            + N.header(HDR) + UDP)


def _learn(dst: str, limit: int = 0) -> str:
    return f"in_port=1,{NSH},actions=learn(table=5,priority=3,{f'limit={limit},' if limit else ''}result_dst={dst},{MAC}),output:4"


# result_dst -> the NSH field that changed in the frame Open vSwitch 3.1 sent, and its value (measured)
MEASURED = [
    ("NXOXM_NSH_FLAGS[1]", "nsh_flags", 3),
    ("NXOXM_NSH_SPI[2]", "nsh_spi", 0x127),
    ("NXOXM_NSH_C1[1]", "nsh_c1", 0x13),
    ("NXOXM_NSH_TTL[0]", "nsh_ttl", 0x2B),
]


@pytest.mark.parametrize("dst, field, value", MEASURED)
def test_dp_core_writes_the_result_into_the_header(dst, field, value):
    sw = Switch([1, 2, 3, 4], 6, drop_malformed=False)
    sw.add_rules([parse_rule(_learn(dst))])
    [(port, frame)] = list(sw.process(1, _frame()))
    assert port == 4 and N.fields(frame, 14) == {**dict.fromkeys(N.fields(frame, 14), 0), **HDR, "nsh_mdtype": 1,
                                                  field: value}


def test_dp_core_writes_0_when_the_limit_refuses():
    """Measured with ``limit=1`` into NXOXM_NSH_SPI[2] of SPI 0x123, one frame at a time: from
    source 1 the frame left with 0x127, from source 9 with 0x123, from 1 again 0x127, from 9 0x123."""
    sw = Switch([1, 2, 3, 4], 6, drop_malformed=False)
    sw.add_rules([parse_rule(_learn("NXOXM_NSH_SPI[2]", limit=1))])
    got = [N.fields(f, 14)["nsh_spi"] for src in (1, 9, 1, 9) for _, f in sw.process(1, _frame(src))]
    assert got == [0x127, 0x123, 0x127, 0x123]


def test_dp_core_leaves_a_frame_that_is_not_nsh_unchanged():
    """Open vSwitch takes the form without the NSH match (as any result_dst: no prerequisite is
    checked, measured on the wire) and an IPv4 frame through ``ip,actions=learn(table=5,
    result_dst=NXOXM_NSH_FLAGS[1]),learn(table=6,result_dst=NXOXM_NSH_C1[3]),output:2`` left unchanged."""
    sw = Switch([1, 2, 3, 4], 7, drop_malformed=False)
    sw.add_rules([Rule(Match.of(eth_type=0x0800), (ApplyActions((Learn(table=5, result_dst=Subfield("nsh_flags", 1, 1)),
                                                                   Learn(table=6, result_dst=Subfield("nsh_c1", 3, 1)),
                                                                   Output(2))),))])
    assert list(sw.process(1, UDP)) == [(2, UDP)]


# learn's result_dst and check_pkt_larger into NSH fields in one flow (the match fixes the SPI bit the check
# writes: rules/nsh_check_larger.py), and the apply-actions instruction Open vSwitch 3.1 sent back for it in
# FLOW_STATS (priority 61 of test_nx_flow_stats_vs_ovs.py): NXAST_CHECK_PKT_LARGER (subtype 49) holds
# pkt_len 100, offset 2 and NXOXM_NSH_SPI's 8-byte header (ffff0808 005ad650) in its 24 bytes
NSH_DST_MOD = (0x61, FlowMod("add", parse_rule(
    f"priority=61,{NSH},nsh_spi=0x123,actions=learn(table=6,limit=3,result_dst=NXOXM_NSH_C4[31],"
    "NXM_NX_REG1[0..15]=0x7,output:NXM_OF_IN_PORT[]),learn(table=6,result_dst=NXOXM_NSH_TTL[7]),"
    "check_pkt_larger(100)->NXOXM_NSH_SPI[2],output:1")))
NSH_DST_INSTRUCTION = (
    "000400a800000000ffff004800002320002d0000000080000000000000000000000406000000000000000003001f0000ffff1208005ad650"
    "201000070001020400001010800000040000000000000000ffff003000002320002d0000000080000000000000000000000406000000"
    "00000000000000070000ffff1405005ad650ffff001800002320003100640002ffff0808005ad65000000000001000000001ffff000000000000")


def test_flow_mod_carries_open_vswitchs_instruction_bytes():
    raw = M.encode_flow_mod(*NSH_DST_MOD)
    assert raw.endswith(bytes.fromhex(NSH_DST_INSTRUCTION))
    assert M.decode_flow_mod(raw[8:]).mod == NSH_DST_MOD[1]
