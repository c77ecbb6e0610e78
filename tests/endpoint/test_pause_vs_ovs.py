"""``controller(pause)`` and NXT_RESUME through OneSwitch (OVS backend, three switches),
against one plain Open vSwitch 3.1 bridge side by side: the same flows, the same frames,
the same controllers (NXT_PACKET_IN2 and OpenFlow's PACKET_IN). Each paused packet-in is
the bridge's but for the continuation's bytes (the endpoint's own, opaque); a resume sent
back as it came, one that changes the packet and reg0, and the same continuation resumed
twice (Open vSwitch resumes it again: measured), and the NXT_RESUME os-ken builds from the
packet-in it parsed (osken_resume.py) send the same frames out as the bridge; a
resume with another bridge's continuation or none gets NXR_STALE from both, one cut short
OFPBPC_BAD_LEN. The pause on the host
goes on to an output on an sNIC (a PCIe crossing after the resume), the one on snic1 (port 3) to
port 4 on snic0; with a pause after ``ct(commit)`` from port 4 too, the ct rule homes the sNIC
ports' pipelines on the host (extension ports: the physical in_port is not the wire's), and every
pause runs there. A pause in a rule with write_actions: Open vSwitch 3.1 sends its packet-in and
refuses every resume of it, BAD_ACTION/BAD_LEN (its continuation holds the instruction, which it cannot
read back: measured), and so does OneSwitch."""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import WHERE, _connect, plain_bridge_listening
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import FieldMatch, FlowMod, Match
from tandem.rules.ofctl import parse_rule

pytestmark = [pytest.mark.ovs]
TOPO = Path(__file__).with_name("three_switches.yaml")
REPO = Path(__file__).resolve().parents[2]
FLOWS = [
    "table=0,priority=5,cookie=0x11,in_port=1,actions=load:5->NXM_NX_REG0[],controller(userdata=aa.bb,pause),"
    "load:6->NXM_NX_REG1[],push:NXM_NX_REG0[],goto_table:1",
    "table=1,priority=5,cookie=0x22,ip,actions=pop:NXM_NX_REG2[],move:NXM_NX_REG2[0..7]->NXM_OF_ETH_DST[0..7],"
    "move:NXM_NX_REG1[0..7]->NXM_OF_ETH_SRC[0..7],move:NXM_NX_REG0[0..7]->NXM_OF_ETH_SRC[8..15],"
    "move:NXM_OF_IN_PORT[0..7]->NXM_NX_IP_TTL[],output:2",
    "table=0,priority=5,cookie=0x33,in_port=3,actions=controller(max_len=20,pause),load:7->NXM_NX_REG3[],"
    "move:NXM_NX_REG3[0..7]->NXM_OF_ETH_DST[0..7],output:4",
    "table=0,priority=5,cookie=0x55,in_port=2,actions=controller(pause),output:3,write_actions(output:4)",
    "table=0,priority=5,cookie=0x44,in_port=4,ip,actions=ct(commit,zone=3),load:3->NXM_NX_REG4[],"
    "controller(pause,id=0),move:NXM_NX_REG4[0..7]->NXM_OF_ETH_DST[0..7],output:1",
]
FRAME = bytes.fromhex("020000000002020000000001080045000028000000004006000000000000000000000000") + bytes(range(30))


async def _controllers(port: int, flows: list[str]) -> list[OFClient]:
    """NXT_PACKET_IN2 (resumes) and OpenFlow's PACKET_IN (no continuation); ``flows`` added."""
    cs = [await _connect(port) for _ in range(2)]
    for c in cs:
        c.send(M.encode_set_config(c.next_xid(), 0, 0xFFFF))
    cs[0].send(P.encode_set_packet_in_format(cs[0].next_xid(), P.NXPIF_NXT_PACKET_IN2))
    for text in flows:
        cs[0].send(M.encode_flow_mod(cs[0].next_xid(), FlowMod("add", parse_rule(text))))
    for c in cs:
        assert errors_in(await c.barrier()) == []
    return cs


async def _one_packet_in(c: OFClient) -> M.RawMessage:
    while True:
        m = await c.recv(timeout=5)
        if m.type in (W.OFPT_PACKET_IN, W.OFPT_EXPERIMENTER):
            return m


def _with_reg0(pi: P.WirePacketIn2, value: int) -> P.WirePacketIn2:
    fields = [(k, fm) for k, fm in pi.match if k != "reg0"] + [("reg0", FieldMatch(value))]
    return replace(pi, match=Match(tuple(fields)))


async def _run(c: OFClient, msgs: list[bytes]) -> list[tuple[int, int]]:
    """The (type, code) of each error the messages get."""
    for m in msgs:
        c.send(m)
    return [e[1:] for e in errors_in(await c.barrier())]


async def _side(sb: OvsSandbox, cs: list[OFClient], where: dict[int, tuple[str, int]], homed: bool) -> dict:
    """Everything one side shows: packet-ins, errors and frames out, per step."""
    out: dict = {}

    def frames(v: int) -> list[bytes]:
        sb.settle()
        return sb.take_output(*where[v])

    sb.inject(*where[1], [FRAME])
    pin2, pin = await _one_packet_in(cs[0]), await _one_packet_in(cs[1])
    out["std packet-in"] = W.header(pin.type, 0, pin.body)
    pi = P.decode_packet_in2(pin2.body)
    out["continuation"] = bool(pi.continuation)
    out["packet-in2"] = replace(pi, continuation=b"")
    x = cs[0].next_xid
    out["resume"] = await _run(cs[0], [P.encode_resume(x(), pi)]), frames(2)
    out["resume again"] = await _run(cs[0], [P.encode_resume(x(), pi)]), frames(2)
    read, resume = _osken_resume(W.header(pin2.type, pin2.xid, pin2.body))
    table, reason, cont_len = read.split()
    out["os-ken read"] = table, reason, int(cont_len) > 0  # (the continuation's bytes: each side's own)
    out["os-ken resume"] = await _run(cs[0], [resume]), frames(2)
    changed = replace(_with_reg0(pi, 9), data=FRAME[:6] + b"\x0a" + FRAME[7:] + b"\x99")
    out["full_len short"] = await _run(cs[0], [P.encode_resume(x(), changed)]), frames(2)  # (BAD_LEN)
    changed = replace(changed, total_len=len(changed.data))
    out["resume changed"] = await _run(cs[0], [P.encode_resume(x(), changed)]), frames(2)
    foreign = replace(pi, continuation=pi.continuation[:8] + bytes(16) + pi.continuation[24:])  # (another bridge's)
    out["stale"] = await _run(cs[0], [P.encode_resume(x(), foreign)]), frames(2)
    cut = replace(pi, continuation=pi.continuation[:-3])
    out["cut short"] = await _run(cs[0], [P.encode_resume(x(), cut)]), frames(2)
    out["none"] = await _run(cs[0], [P.encode_resume(x(), replace(pi, continuation=b""))]), frames(2)
    sb.inject(*where[3], [FRAME])
    pi3 = P.decode_packet_in2((await _one_packet_in(cs[0])).body)
    await _one_packet_in(cs[1])
    out["sNIC packet-in2"] = replace(pi3, continuation=b"")
    out["sNIC resume"] = await _run(cs[0], [P.encode_resume(x(), pi3)]), frames(4)
    sb.inject(*where[2], [FRAME])
    pi2 = P.decode_packet_in2((await _one_packet_in(cs[0])).body)
    await _one_packet_in(cs[1])
    out["write_actions packet-in2"] = replace(pi2, continuation=b"")
    out["write_actions resume"] = await _run(cs[0], [P.encode_resume(x(), pi2)]), frames(3), frames(4)
    if not homed:
        return out
    sb.inject(*where[4], [FRAME])
    pi4 = P.decode_packet_in2((await _one_packet_in(cs[0])).body)
    await _one_packet_in(cs[1])
    out["homed packet-in2"] = replace(pi4, continuation=b"")
    out["homed resume"] = await _run(cs[0], [P.encode_resume(x(), pi4)]), frames(1)
    return out


def _osken_resume(packet_in: bytes) -> tuple[str, bytes]:
    """What os-ken reads of ``packet_in`` (table, reason, continuation length) and the NXT_RESUME it builds
    (osken_resume.py, in the controllers' venv)."""
    venv = Path(os.environ.get("TANDEM_CONTROLLERS_VENV", str(REPO / ".venv" / "controllers")))
    if not os.access(venv / "bin" / "python", os.X_OK):
        pytest.fail(f"controllers venv {venv} lacks python: run `make controllers` (or set TANDEM_CONTROLLERS_VENV)",
                    pytrace=False)
    out = subprocess.run([str(venv / "bin" / "python"), str(Path(__file__).with_name("osken_resume.py")),
                          packet_in.hex()], capture_output=True, text=True, check=True).stdout.split("\n")
    return out[0], bytes.fromhex(out[1])


@pytest.mark.parametrize("homed", [False, True])
@async_test
async def test_pause_and_resume_as_one_ovs_bridge(homed):
    flows = FLOWS if homed else FLOWS[:-1]
    with OvsSandbox() as sb:
        ovs = await _controllers(plain_bridge_listening(sb), flows)
        topo = load_topology(TOPO)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        one = await _controllers(await ep.listen("ptcp:0:127.0.0.1"), flows)
        homes = {b: [f for f in sb.dump_flows(b) if "pause" in f] for b in ("tnd-host", "tnd-snic1")}
        want = await _side(sb, ovs, {v: ("plain", v) for v in (1, 2, 3, 4)}, homed)
        got = await _side(sb, one, WHERE, homed)
        await ep.close()
        await backend.close()
    assert len(homes["tnd-host"]) == (4 if homed else 1) and len(homes["tnd-snic1"]) == (0 if homed else 1)
    assert want["continuation"] and want["resume"][1] and want["sNIC resume"][1]
    assert want["os-ken read"] == ("0", "1", True)  # (table 0, reason action, a continuation)
    assert want["stale"][0] == want["none"][0] == [(0xFFFF, 35)]  # (NXR_STALE, measured)
    assert want["cut short"][0] == [(13, 3)]  # (OFPBPC_BAD_LEN)
    assert want["write_actions resume"] == ([(2, 1)], [], [])  # (BAD_ACTION/BAD_LEN: its own continuation, measured)
    assert want["full_len short"][0] == [(1, 6)]  # (a full length below the packet's: BAD_REQUEST/BAD_LEN)
    assert want["resume changed"][1] != want["resume"][1]
    for k in want:
        assert got[k] == want[k], f"{k}:\n  ovs {want[k]}\n  one {got[k]}"
