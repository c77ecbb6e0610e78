"""Two rules of equal priority whose copies are one physical entry, through the endpoint
on the emulator (overlap_share.py): both are accepted, a packet meets one of them
(either is correct: OpenFlow leaves it undefined), FLOW_STATS count it on that one, and
when that rule is deleted the other rule's copy takes its place."""


from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule

LLDP_FRAME = bytes.fromhex("0180c200000e020000000002" "88cc") + bytes(46)
WILD = "priority=65535,dl_type=0x88cc,actions=output:1"  # its sNIC copies are one per in_port
AT2 = "priority=65535,in_port=2,dl_type=0x88cc,actions=output:3"  # virtual port 2 is snic0:1
OUT = {1: ("host", 1), 3: ("snic1", 1)}


async def _counts(c) -> dict:
    rep = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_FLOW, 0, flow=S.FlowStatsRequest())),
                          W.OFPT_MULTIPART_REPLY)
    return {len(e.rule.match): e.packet_count for e in S.decode_flow_stats(S.decode_multipart_reply(rep.body)[2])}


@async_test
async def test_one_entry_for_two_rules_then_the_other_takes_its_place():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    for text in (WILD, AT2):
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
    assert errors_in(await c.barrier()) == []

    def send() -> int:  # the virtual output port the frame from virtual port 2 took
        backend.inject("snic0", 1, LLDP_FRAME)
        backend.run_for(0.01)
        (port,) = [v for v, where in OUT.items() if backend.take_output(*where) == [LLDP_FRAME]]
        return port

    first = send()
    winner, loser = (WILD, AT2) if first == 1 else (AT2, WILD)
    # FLOW_STATS: the packet is the winner's (1 field in WILD's match, 2 in AT2's)
    assert await _counts(c) == {len(parse_rule(winner).match): 1, len(parse_rule(loser).match): 0}
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("delete_strict", parse_rule(winner))))
    assert errors_in(await c.barrier()) == []
    assert send() == (3 if first == 1 else 1)  # the other rule's copy took the entry
    assert await _counts(c) == {len(parse_rule(loser).match): 1}
    await ep.close()
    await backend.close()
