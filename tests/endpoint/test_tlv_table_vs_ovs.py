"""NXT_TLV_TABLE_MOD / NXT_TLV_TABLE_REQUEST (``ovs-ofctl add-tlv-map``, ``dump-tlv-map``)
against a plain Open vSwitch 3.1 bridge: the same messages go to the bridge and to
OneSwitch over the OVS backend; every answer (accepted, or the same NXTTMFC_* error)
and every TLV table reply are the same, a slave connection is refused alike, and each
physical bridge ends up with the virtual switch's map (the endpoint relays what it takes). A flow on a mapped
``tun_metadataN`` is taken by both, and its copies reach the physical bridges as the plain bridge holds it."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in, take_role
from test_endpoint_protocol import async_test
from tandem.backends.ovs import OvsBackend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_tlv as T
from tandem.rules.ofwire_tlv import TlvMap

pytestmark = [pytest.mark.ovs]
TOPO = Path(__file__).with_name("three_switches.yaml")


def _raw_mod(command: int, *maps: tuple[int, int, int, int]) -> bytes:
    body = struct.pack("!IIH6x", 0x2320, 24, command) + b"".join(struct.pack("!HBBH2x", *m) for m in maps)
    return body


# (name, builder); a TLV table request follows each
STEPS = [
    ("add two", lambda x: T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0xFFFF, 0, 4, 0), TlvMap(0x102, 0x80, 8, 1)])),
    ("add an index already mapped", lambda x: T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(1, 1, 4, 0)])),
    ("add an option mapped to another index", lambda x: T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0x102, 0x80, 4, 2)])),
    ("add past 256 bytes (none taken)", lambda x: T.encode_tlv_table_mod(
        x, T.NXTTMC_ADD, [TlvMap(5, 5, 4, 5), TlvMap(6, 6, 124, 6), TlvMap(7, 7, 124, 7)])),
    ("add length 6", lambda x: W.header(4, x, _raw_mod(0, (9, 9, 6, 9)))),
    ("add index 64", lambda x: W.header(4, x, _raw_mod(0, (9, 9, 4, 64)))),
    ("command 3", lambda x: W.header(4, x, _raw_mod(3))),
    ("cut short", lambda x: W.header(4, x, _raw_mod(0)[:10])),
    ("delete 0 and unmapped 30", lambda x: T.encode_tlv_table_mod(x, T.NXTTMC_DELETE, [TlvMap(0, 0, 0, 0), TlvMap(0, 0, 0, 30)])),
    ("add 124 at 3", lambda x: T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0x10, 3, 124, 3)])),
]
MAPPED_FLOW = "priority=5,tun_metadata1=0x1234/0xffff,actions=output:1"


async def _slave_clear(c: OFClient) -> list[tuple[int, int]]:
    """A slave's NXT_TLV_TABLE_MOD clear: the error it gets."""
    await take_role(c, M.OFPCR_ROLE_SLAVE)
    x = c.next_xid()
    c.send(T.encode_tlv_table_mod(x, T.NXTTMC_CLEAR))
    return [e[1:] for e in errors_in(await c.barrier()) if e[0] == x]


async def _run(c: OFClient) -> tuple[list, list[bytes]]:
    answers, replies = [], []
    for name, build in STEPS:
        x = c.next_xid()
        c.send(build(x))
        answers.append((name, [e[1:] for e in errors_in(await c.barrier()) if e[0] == x]))
        rep = await c.request(T.encode_tlv_table_request, W.OFPT_EXPERIMENTER)
        replies.append(rep.body)
    return answers, replies


def _flow_mod_tun_metadata1(x: int) -> bytes:
    # (8 bytes each, tun_metadata1's mapped length, as ovs-ofctl sends it)
    oxm = struct.pack("!I", 1 << 16 | 41 << 9 | 1 << 8 | 16) + struct.pack("!QQ", 0x1234, 0xFFFF)
    match = struct.pack("!HH", 1, 4 + len(oxm)) + oxm
    match += bytes(-len(match) % 8)
    out = struct.pack("!HHIH6x", 0, 16, 1, 0)
    ins = struct.pack("!HH4x", 4, 8 + len(out)) + out
    body = struct.pack("!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 5, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return W.header(W.OFPT_FLOW_MOD, x, body + match + ins)


@async_test
async def test_tlv_table_messages_answer_as_ovs_and_reach_every_physical_switch():
    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2])
        r, w = await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:"))
        ovs = OFClient(r, w)
        ovs.send(M.encode_hello())
        assert (await ovs.recv()).type == W.OFPT_HELLO
        want_answers, want_replies = await _run(ovs)
        x = ovs.next_xid()
        ovs.send(_flow_mod_tun_metadata1(x))
        assert errors_in(await ovs.barrier()) == []  # (OVS takes a flow on a mapped field)
        ovs.close()
        r, w = await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:"))
        slave = OFClient(r, w)
        slave.send(M.encode_hello())
        assert (await slave.recv()).type == W.OFPT_HELLO
        slave_ovs = await _slave_clear(slave)
        slave.close()
        plain_dump = sb.ofctl("dump-tlv-map", "plain")
        plain_flow = [f for f in sb.dump_flows("plain") if "tun_metadata1" in f]

        topo = load_topology(TOPO)
        backend = OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        port = await ep.listen("ptcp:0:127.0.0.1")
        c = await OFClient.connect(port)
        try:
            got_answers, got_replies = await _run(c)
            x = c.next_xid()
            c.send(_flow_mod_tun_metadata1(x))
            refused = errors_in(await c.barrier())
            flows = {sw: sb.dump_flows(backend.bridge_name(sw)) for sw in backend.switches()}
            slave_os = await _slave_clear(await OFClient.connect(port))
            dumps = {sw: sb.ofctl("dump-tlv-map", backend.bridge_name(sw)) for sw in backend.switches()}
        finally:
            await ep.close()
            await backend.close()
    assert got_answers == want_answers
    assert slave_os == slave_ovs == [(W.OFPET_BAD_REQUEST, W.OFPBRC_IS_SLAVE)]  # (and the map stays: the dumps)
    assert [a for _, a in want_answers] == [[], [(0xFFFF, 20)], [(0xFFFF, 21)], [(0xFFFF, 19)], [(0xFFFF, 17)],
                                            [(0xFFFF, 18)], [(0xFFFF, 16)], [(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)],
                                            [], []]
    assert got_replies == want_replies
    assert T.decode_tlv_table_reply(want_replies[-1])[2] == [TlvMap(0x102, 0x80, 8, 1), TlvMap(0x10, 3, 124, 3)]
    assert "tun_metadata3" in plain_dump and "tun_metadata0" not in plain_dump
    assert len(dumps) == 3 and all(d == plain_dump for d in dumps.values()), (plain_dump, dumps)
    assert refused == []  # (the flow on the mapped tun_metadata1: taken, as by OVS)
    copies = [f for fs in flows.values() for f in fs if "tun_metadata1" in f]
    token = lambda f: [t for t in f.replace(" ", ",").split(",") if t.startswith("tun_metadata1")]  # noqa: E731
    assert len(plain_flow) == 1 and copies and all(token(f) == token(plain_flow[0]) for f in copies), (plain_flow, flows)
