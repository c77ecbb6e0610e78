"""controller(reason=…,id=…,userdata=…) over the emulator backend: dp-core runs the
physical action, and the endpoint sends the virtual packet-in as NXT_PACKET_IN2 to
the connection with that controller id (reason, userdata, virtual in_port, table,
cookie, the register the rule set), and nothing to the others."""


from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.ir import FlowMod, Match
from tandem.rules.ofctl import parse_rule

FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")


@async_test
async def test_controller_action_reaches_the_connection_with_its_id_as_packet_in2():
    ep, backend = await emu_endpoint()
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


@async_test
async def test_table_miss_flow_packet_ins_are_no_match_whole_and_unbuffered_on_the_emulator():
    # (the copies of a table-miss flow on dp-core's switches send controller(reason=no_match): table_miss.py)
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    for text in ("table=0,priority=0,cookie=0x31,actions=CONTROLLER:20,goto_table:1",
                 "table=1,priority=0,cookie=0x32,actions=controller(max_len=8,userdata=01)",
                 "table=1,priority=1,cookie=0x33,in_port=4,actions=CONTROLLER:0"):  # (no table-miss flow)
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
    assert errors_in(await c.barrier()) == []
    for port in (1, 2):  # virtual ports 2 and 4, both on snic0
        backend.inject("snic0", port, FRAME)
    backend.run_for(0.01)
    got = []
    while len(got) < 4:
        got += [M.decode_packet_in(m.body) for m in await c.until(W.OFPT_PACKET_IN)]
    assert sorted((pi.match.get("in_port").value, pi.table_id, pi.cookie, pi.reason) for pi in got) == [
        (2, 0, 0x31, M.OFPR_NO_MATCH), (2, 1, 0x32, M.OFPR_NO_MATCH), (4, 0, 0x31, M.OFPR_NO_MATCH),
        (4, 1, 0x33, M.OFPR_ACTION)]
    assert all(pi.buffer_id == W.OFP_NO_BUFFER and pi.data == FRAME for pi in got)
    await ep.close()
    await backend.close()
