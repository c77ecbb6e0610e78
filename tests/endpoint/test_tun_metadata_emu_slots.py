"""On the emulator backend a table matches at most 3 distinct tun_metadata options (dp-core's
POF slots): the endpoint refuses the FLOW_MOD that would make a virtual table match a
4th with FLOW_MOD_FAILED/TABLE_FULL before anything is installed; another table, a
rule on options the table already matches, and a 4th option once a rule holding one
of the 3 is deleted are taken."""

from __future__ import annotations

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_tlv as T
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.rules.ofwire_tlv import TlvMap


async def _mod(c: OFClient, command: str, text: str) -> list[tuple[int, int]]:
    x = c.next_xid()
    c.send(M.encode_flow_mod(x, FlowMod(command, parse_rule(text))))
    return [e[1:] for e in errors_in(await c.barrier()) if e[0] == x]


@async_test
async def test_a_fourth_option_in_a_table_is_refused_before_install():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        x = c.next_xid()
        c.send(T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0xFFFF, i, 4, i) for i in range(4)]))
        assert errors_in(await c.barrier()) == []
        for i in range(3):
            assert await _mod(c, "add", f"table=1,priority={10 + i},tun_metadata{i}=0x{i + 1:x},actions=output:1") == []
        assert await _mod(c, "add", "table=1,priority=13,tun_metadata1=0x7,tun_metadata2=0x8,actions=output:1") == []
        full = await _mod(c, "add", "table=1,priority=14,tun_metadata3=0x4,actions=output:1")
        held = {r.priority for r in ep.state.virtual_rules() if r.table == 1}
        other_table = await _mod(c, "add", "table=2,priority=14,tun_metadata3=0x4,actions=output:1")
        assert await _mod(c, "delete_strict", "table=1,priority=10,tun_metadata0=0x1,actions=output:1") == []
        after_delete = await _mod(c, "add", "table=1,priority=14,tun_metadata3=0x4,actions=output:1")
    finally:
        await ep.close()
        await backend.close()
    assert full == [(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_TABLE_FULL)]
    assert held == {10, 11, 12, 13}  # (the refused rule is not held)
    assert other_table == [] and after_delete == []
