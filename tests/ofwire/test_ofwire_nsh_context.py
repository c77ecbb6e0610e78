"""NSH context matches (``nsh_c1`` … ``nsh_c4``) without ``nsh_mdtype=1`` (rules/nsh.py):
Open vSwitch 3.1 matches the flow's context, which an MD type 2 header leaves 0 and a
set_field of an earlier table writes. Its ovs-ofctl sends such a match (its text output
does not print it) and its FLOW_STATS carry it (measured). Text round trips, golden wire
bytes whose match is the one Open vSwitch returns for the ovs-ofctl text, and dp-core on
frames against the bytes Open vSwitch sent. Side by side with a bridge:
tests/endpoint/test_nsh_context_vs_ovs.py; the random rules: ``tandem bench of13_oracle --
--items match:nsh_context``."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402
from test_ofwire_nx_golden import golden  # noqa: E402
from test_ofwire_nsh_ttl_operand import _run  # noqa: E402  (dp-core's output per port)

from tandem.rules import ofwire as W  # noqa: E402
from tandem.rules import ofwire_msgs as M  # noqa: E402
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule, SetField  # noqa: E402
from tandem.rules.ofctl import format_rule  # noqa: E402
from tandem.rules.packets import build_frame  # noqa: E402

NSH = "eth_type=0x894f"
TEXTS = [
    f"{NSH},nsh_c1=0x11,actions=output:2",
    f"{NSH},nsh_mdtype=2,nsh_c3=0x0,nsh_c4=0x1100/0xff00,actions=output:2",
    f"{NSH},nsh_flags=1,nsh_ttl=5,nsh_si=3,nsh_c2=0x22000000/0xff000000,actions=set_field:0x5->nsh_c2,output:1",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


NSH_CONTEXT_MOD = (0x78, FlowMod("add", Rule(
    Match.of(eth_type=0x894F, nsh_flags=1, nsh_ttl=5, nsh_si=3, nsh_c1=0x11, nsh_c4=(0x1100, 0xFF00)),
    (ApplyActions((SetField("nsh_c2", 5), Output(2))),), priority=15)))
# what Open vSwitch 3.1 returns in FLOW_STATS for that match sent as ovs-ofctl text: eth_type, then
# NXOXM_NSH_FLAGS, _TTL (after the flags), _SI, _C1, _C4 (masked)
OVS_MATCH = bytes.fromhex("80000a02894f" "ffff0205005ad65001" "ffff1405005ad65005" "ffff0a05005ad65003"
                          "ffff0c08005ad65000000011" "ffff130c005ad650000011000000ff00")


def test_flow_mod_matches_its_golden_bytes():
    xid, mod = NSH_CONTEXT_MOD
    raw = golden("flow_mod_nsh_context")
    assert M.encode_flow_mod(xid, mod) == raw
    assert M.decode_flow_mod(raw[8:]).mod == mod
    assert OVS_MATCH in raw


@pytest.mark.ovs
def test_open_vswitch_sends_back_the_golden_match():
    from tandem.backends.ovs_sandbox import OvsSandbox

    text = format_rule(NSH_CONTEXT_MOD[1].rule)
    with OvsSandbox() as sb:
        sb.add_bridge("br", [1, 2])
        sb.ofctl("add-flow", "br", text)  # (ovs-ofctl text: it sends the contexts)
        import socket
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(sb.mgmt("br").removeprefix("unix:"))
            s.sendall(M.encode_hello())
            req = struct.pack("!HH4xB3xII4xQQ", 1, 0, 0xFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0) + struct.pack("!HH4x", 1, 4)
            s.sendall(W.header(W.OFPT_MULTIPART_REQUEST, 9, req))
            buf = b""
            while OVS_MATCH not in buf and len(buf) < 1 << 16:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
        shown = sb.ofctl("dump-flows", "br")
    assert OVS_MATCH in buf
    assert "nsh_c1" not in shown  # (its text leaves the context out without nsh_mdtype=1)


MD1 = build_frame(eth_type=0x894F, nsh_mdtype=1, nsh_c1=0)
MD2 = build_frame(eth_type=0x894F, nsh_mdtype=2)
# table 0 meets MD type 1 and 2 frames with context 0 and writes 0x11; table 1 meets the written value
# (also for MD type 2, whose header holds no context and leaves unchanged), not the MD type 2 rule below it
FLOWS = [f"table=0,{NSH},nsh_c1=0,actions=set_field:0x11->nsh_c1,output:2,goto_table:1",
         f"table=1,{NSH},nsh_c1=0x11,actions=output:3",
         f"table=1,priority=0,{NSH},nsh_mdtype=2,actions=output:4"]


def test_dp_core_as_open_vswitch_sent_the_frames():
    """The bytes Open vSwitch 3.1 sent for these flows (measured on a dummy bridge)."""
    md1_out = bytearray(MD1)
    md1_out[22:26] = struct.pack("!I", 0x11)  # (after Ethernet and the 8-byte base and path headers)
    assert _run(FLOWS, MD1) == {2: [bytes(md1_out)], 3: [bytes(md1_out)]}
    assert _run(FLOWS, MD2) == {2: [MD2], 3: [MD2]}


def test_dp_core_a_context_match_meets_no_other_packet():
    assert _run([f"{NSH},nsh_c2=0x0,actions=output:2"], build_frame(eth_type=0x0800)) == {}
    assert _run([f"{NSH},nsh_c2=0x1,actions=output:2"], MD2) == {}
    assert _run([f"{NSH},nsh_mdtype=2,nsh_c2=0x0,actions=output:2"], MD2) == {2: [MD2]}
