"""controller(reason=…,id=…,userdata=…) over the emulator backend: dp-core runs the
physical action, and the endpoint sends the virtual packet-in as NXT_PACKET_IN2 to
the connection with that controller id (reason, userdata, virtual in_port, table,
cookie, the register the rule set), and nothing to the others."""

from pathlib import Path

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.ids import N_PHYSICAL_TABLES
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import FlowMod, Match
from tandem.rules.ofctl import parse_rule

FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")


@async_test
async def test_controller_action_reaches_the_connection_with_its_id_as_packet_in2():
    topo = load_topology(Path(__file__).with_name("three_switches.yaml"))
    backend = make_backend("emu", n_tables=N_PHYSICAL_TABLES)
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    port = await ep.listen("ptcp:0:127.0.0.1")
    c0, c5 = await OFClient.connect(port), await OFClient.connect(port)
    for c in (c0, c5):
        c.send(P.encode_set_packet_in_format(c.next_xid(), P.NXPIF_NXT_PACKET_IN2))
    c5.send(P.encode_set_controller_id(c5.next_xid(), 5))
    rule = parse_rule("table=0,priority=5,cookie=0x21,in_port=2,actions=load:9->NXM_NX_REG2[],"
                      "controller(id=5,reason=group,userdata=0a.0b.0c),output:3")
    c0.send(M.encode_flow_mod(c0.next_xid(), FlowMod("add", rule)))
    assert errors_in(await c0.barrier()) == [] and errors_in(await c5.barrier()) == []
    backend.inject("snic0", 1, FRAME)  # virtual port 2: the rule runs on snic0
    backend.run_for(0.01)
    assert backend.take_output("snic1", 1) == [FRAME]  # virtual port 3
    msgs = await c5.until(W.OFPT_EXPERIMENTER)
    pi = P.decode_packet_in2(msgs[-1].body)
    assert (pi.reason, pi.userdata, pi.table_id, pi.cookie, pi.data) == (1, b"\x0a\x0b\x0c", 0, 0x21, FRAME)
    assert pi.match == Match.of(in_port=2, reg2=9)
    x = c0.next_xid()
    c0.send(M.encode_echo_request(x, b""))
    assert all(m.type == W.OFPT_ECHO_REPLY for m in await c0.until(W.OFPT_ECHO_REPLY, x))  # id 0: no packet-in
    await ep.close()
    await backend.close()
