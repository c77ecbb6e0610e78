"""The endpoint's TLV map without Open vSwitch (fake backend, which keeps no map): a
master's NXT_TLV_TABLE_MOD is kept and dumped back; a slave may read the map but not
change it (``BAD_REQUEST/IS_SLAVE``, as Open vSwitch)."""

from __future__ import annotations

from endpoint_helpers import OFClient, errors_in, take_role
from test_endpoint_protocol import async_test, start
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_tlv as T
from tandem.rules.ofwire_tlv import TlvMap


@async_test
async def test_a_master_changes_the_map_a_slave_only_reads_it():
    ep, backend, port = await start()
    master, slave = await OFClient.connect(port), await OFClient.connect(port)
    await take_role(master, M.OFPCR_ROLE_MASTER)
    await take_role(slave, M.OFPCR_ROLE_SLAVE)
    master.send(T.encode_tlv_table_mod(master.next_xid(), T.NXTTMC_ADD, [TlvMap(0xFFFF, 1, 8, 2)]))
    assert errors_in(await master.barrier()) == []
    x = slave.next_xid()
    slave.send(T.encode_tlv_table_mod(x, T.NXTTMC_CLEAR))
    assert errors_in(await slave.barrier()) == [(x, W.OFPET_BAD_REQUEST, W.OFPBRC_IS_SLAVE)]
    rep = await slave.request(T.encode_tlv_table_request, W.OFPT_EXPERIMENTER)
    assert T.decode_tlv_table_reply(rep.body) == (256, 64, [TlvMap(0xFFFF, 1, 8, 2)])
    assert ep.tlv_map == {2: TlvMap(0xFFFF, 1, 8, 2)}
    await ep.close()
