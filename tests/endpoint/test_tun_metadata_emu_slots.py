"""On the emulator backend a table folds its tun_metadata matches into dp-core's 3 POF key
slots (``pipeline/tunfold.rs``: per distinct (option, mask) pair a field numbering its masked
values): a 4th, 5th … distinct option in a table is taken, and so are matches on bits
120..127; the FLOW_MOD that would make a virtual table's fields overflow the slots (385
one-value pairs: 1 bit each) is refused with FLOW_MOD_FAILED/TABLE_FULL before anything is
installed; another table, and the same rule once a rule holding a pair is deleted, are taken."""

from __future__ import annotations

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_tlv as T
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.rules.ofwire_tlv import TlvMap
from tandem.rules.tun_metadata import encoding_lengths

MAP = {i: 16 for i in range(5)}


async def _mod(c: OFClient, command: str, text: str) -> list[tuple[int, int]]:
    x = c.next_xid()
    with encoding_lengths(MAP):
        c.send(M.encode_flow_mod(x, FlowMod(command, parse_rule(text))))
    return [e[1:] for e in errors_in(await c.barrier()) if e[0] == x]


async def _mapped(c: OFClient) -> None:
    x = c.next_xid()
    c.send(T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0xFFFF, i, n, i) for i, n in MAP.items()]))
    assert errors_in(await c.barrier()) == []


@async_test
async def test_a_table_takes_five_options_and_bits_120_to_127():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        await _mapped(c)
        got = [await _mod(c, "add", f"table=1,priority={10 + i},tun_metadata{i}=0x{i + 1:x},actions=output:1") for i in range(5)]
        got.append(await _mod(c, "add", f"table=1,priority=20,tun_metadata4=0xab{'0' * 30}/0xff{'0' * 30},actions=output:1"))
        held = {r.priority for r in ep.state.virtual_rules() if r.table == 1}
    finally:
        await ep.close()
        await backend.close()
    assert got == [[]] * 6
    assert held == {10, 11, 12, 13, 14, 20}


@async_test
async def test_fields_overflowing_the_slots_are_refused_before_install():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        await _mapped(c)
        for k in range(384):  # (one-value pairs: a 1-bit field each, 3 x 128 of them fit)
            assert await _mod(c, "add", f"table=1,priority={10 + k},tun_metadata{k // 128}=0/{1 << k % 128:#x},actions=output:1") == []
        full = await _mod(c, "add", "table=1,priority=500,tun_metadata3=0/0x1,actions=output:1")
        held = {r.priority for r in ep.state.virtual_rules() if r.table == 1}
        other_table = await _mod(c, "add", "table=2,priority=500,tun_metadata3=0/0x1,actions=output:1")
        assert await _mod(c, "delete_strict", "table=1,priority=10,tun_metadata0=0/0x1,actions=output:1") == []
        after_delete = await _mod(c, "add", "table=1,priority=500,tun_metadata3=0/0x1,actions=output:1")
    finally:
        await ep.close()
        await backend.close()
    assert full == [(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_TABLE_FULL)]
    assert held == set(range(10, 394))  # (the refused rule is not held)
    assert other_table == [] and after_delete == []
