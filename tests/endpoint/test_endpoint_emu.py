"""The endpoint over the emulator backend (same Backend interface as OVS): a
controller's rules are translated onto the emulated host + 2 sNIC switches and
a frame entering virtual port 1 leaves virtual port 3; a table-miss reaches the
controller as a virtual PACKET_IN."""


from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule

FRAME = bytes.fromhex("020000000002020000000001080045000014000000004001000000000000000000000000")


@async_test
async def test_controller_rules_run_on_the_emulator():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", Rule(Match.of(in_port=1), (ApplyActions((Output(3),)),), priority=5))))
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", Rule(Match(), (ApplyActions((Output(ir.OFPP_CONTROLLER),)),), priority=0, cookie=4))))
    assert errors_in(await c.barrier()) == []
    backend.inject("host", 1, FRAME)
    backend.inject("snic0", 2, FRAME)  # virtual port 4: no rule but the table-miss
    backend.run_for(0.01)
    assert backend.take_output("snic1", 1) == [FRAME]
    pi = M.decode_packet_in((await c.until(W.OFPT_PACKET_IN))[-1].body)
    # (the emulator's packet-ins carry no table id or cookie yet, so only port and frame are checked)
    assert (pi.match.get("in_port").value, pi.data) == (4, FRAME)
    await ep.close()
    await backend.close()


ARP = bytes.fromhex("ffffffffffff020000000001080600010800060400010200000000010a0000010000000000000a000002")


@async_test
async def test_table_stats_count_misses_and_a_pcie_crossing_once():
    from tandem.rules import ofwire_stats as S

    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    for r in (Rule(Match.of(in_port=1, eth_type=0x800), (ir.GotoTable(1),), priority=10),
              Rule(Match.of(eth_type=0x800, ipv4_dst=0), (ApplyActions((Output(3),)),), table=1, priority=5)):
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r)))
    assert errors_in(await c.barrier()) == []

    async def tables():
        rep = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_TABLE, 0)),
                              W.OFPT_MULTIPART_REPLY)
        return {t: (a, lk, m) for t, a, lk, m in S.decode_table_stats(S.decode_multipart_reply(rep.body)[2])}

    assert (await tables())[0] == (1, 0, 0)
    for _ in range(5):
        backend.inject("host", 1, FRAME)  # hits tables 0 and 1, crosses host -> snic1
    for _ in range(4):
        backend.inject("snic0", 1, ARP)  # virtual 2: misses every rule
    backend.run_for(0.01)
    assert backend.take_output("snic1", 1) == [FRAME] * 5
    got = await tables()
    assert (got[0], got[1], got[2]) == ((1, 9, 5), (1, 5, 5), (0, 0, 0))
    for _ in range(3):
        backend.inject("host", 1, ARP)  # more misses: lookups rise, matched does not
    backend.run_for(0.01)
    assert (await tables())[0] == (1, 12, 5)
    await ep.close()
    await backend.close()


@async_test
async def test_packet_ins_carry_the_virtual_mark_and_registers():
    """A rule sets pkt_mark and a register, sends across PCIe and goes on to a table whose
    rule sends to the controller: the packet-in lists the rule's mark (not the flow id the
    PCIe output used) and the register, as Open vSwitch lists them."""
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    first = (ApplyActions((ir.SetField("pkt_mark", 7), ir.SetField("reg3", 0x42), Output(3))), ir.GotoTable(1))
    for r in (Rule(Match.of(in_port=1), first, priority=5),
              Rule(Match.of(pkt_mark=7, reg3=0x42), (ApplyActions((Output(ir.OFPP_CONTROLLER),)),), table=1, priority=5)):
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r)))
    assert errors_in(await c.barrier()) == []
    backend.inject("host", 1, FRAME)
    backend.run_for(0.01)
    assert backend.take_output("snic1", 1) == [FRAME]  # virtual port 3
    pi = M.decode_packet_in((await c.until(W.OFPT_PACKET_IN))[-1].body)
    assert pi.match == Match.of(in_port=1, pkt_mark=7, reg3=0x42)
    assert pi.data == FRAME
    await ep.close()
    await backend.close()


@async_test
async def test_a_conjunctive_match_runs_and_flow_stats_report_it_as_open_vswitch_does():
    """Two dimensions (ipv4_dst 0, in_port 1) and the conj_id flow: a frame from virtual
    port 1 completes the conjunction and leaves virtual port 3, one from port 2 does not.
    FLOW_STATS lists the conjunction actions as sent and, as Open vSwitch, counts nothing
    on the dimension flows and the packet on the conj_id flow."""
    from tandem.rules import ofwire_stats as S

    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    rules = [Rule(Match.of(eth_type=0x800, ipv4_dst=0), (ApplyActions((ir.Conjunction(5, 1, 2),)),), priority=20),
             Rule(Match.of(in_port=1, eth_type=0x800), (ApplyActions((ir.Conjunction(5, 2, 2),)),), priority=20),
             Rule(Match.of(conj_id=5), (ApplyActions((Output(3),)),), priority=4)]
    for r in rules:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", r)))
    assert errors_in(await c.barrier()) == []
    backend.inject("host", 1, FRAME)  # virtual 1: both dimensions
    backend.inject("snic0", 1, FRAME)  # virtual 2: ipv4_dst only
    backend.run_for(0.01)
    assert backend.take_output("snic1", 1) == [FRAME]
    rep = await c.request(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_FLOW, 0, flow=S.FlowStatsRequest())),
                          W.OFPT_MULTIPART_REPLY)
    stats = {e.rule.priority * 100 + len(e.rule.match): e for e in S.decode_flow_stats(S.decode_multipart_reply(rep.body)[2])}
    assert {k: (e.rule.instructions, e.packet_count) for k, e in stats.items()} == {
        r.priority * 100 + len(r.match): (r.instructions, 1 if r is rules[2] else 0) for r in rules}
    # a conjunction beside an output: Open vSwitch's NXBAC_BAD_CONJUNCTION (a Nicira experimenter error)
    bad = Rule(Match(), (ApplyActions((ir.Conjunction(5, 1, 2), Output(1))),), priority=3)
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", bad)))
    assert [e[1:] for e in errors_in(await c.barrier())] == [(0xFFFF, 15)]
    await ep.close()
    await backend.close()
