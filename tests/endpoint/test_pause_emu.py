"""``controller(pause)`` on the emulator backend: refused (dp-core keeps no continuation:
docs/endpoint.md), in a flow, nested in a clone and in a group bucket, with OFPBAC_BAD_EXP_TYPE
naming the backend; a flow with ``controller(...)`` and no pause is taken."""

from __future__ import annotations

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.oneswitch.endpoint_pause import pause_problem
from tandem.rules.ir import Controller, FlowMod
from tandem.rules.ofctl import parse_group, parse_rule


@async_test
async def test_pause_is_refused_on_the_emulator_backend():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        sent = {
            "flow": M.encode_flow_mod(101, FlowMod("add", parse_rule("priority=5,actions=controller(pause),output:2"))),
            "clone": M.encode_flow_mod(102, FlowMod("add", parse_rule(
                "priority=6,actions=clone(controller(userdata=01,pause)),output:2"))),
            "bucket": M.encode_group_mod(103, "add", parse_group("group_id=1,type=all,bucket=controller(pause)")),
            "no pause": M.encode_flow_mod(104, FlowMod("add", parse_rule(
                "priority=7,actions=controller(userdata=01),output:2"))),
        }
        for raw in sent.values():
            c.send(raw)
        msgs = await c.barrier()
        assert errors_in(msgs) == [(x, W.OFPET_BAD_ACTION, 3) for x in (101, 102, 103)]
        assert "on the emu backend" in pause_problem(ep, [Controller(pause=True)], packet_out=False)
    finally:
        await ep.close()
        await backend.close()
