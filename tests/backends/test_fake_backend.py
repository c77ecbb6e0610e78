"""The in-memory fake backend keeps OpenFlow table semantics closely enough for unit tests."""

import asyncio

import pytest

from tandem.backends.base import BackendError, FlowOp, GroupOp, PhysicalLayout
from tandem.backends.factory import make_backend
from tandem.backends.fake import FakeBackend, covers
from tandem.rules.ir import ApplyActions, Bucket, Group, Match, Output, Rule


def test_covers_is_field_wise_generalisation():
    assert covers(Match(), Match.of(in_port=1))
    assert covers(Match.of(eth_dst=(0x020000000000, 0xFF0000000000)), Match.of(eth_dst=0x020000000001))
    assert not covers(Match.of(eth_dst=0x020000000001), Match.of(eth_dst=(0x020000000000, 0xFF0000000000)))
    assert not covers(Match.of(in_port=2), Match.of(in_port=1))


def test_add_replace_modify_delete_and_groups():
    async def go():
        b = FakeBackend()
        await b.start(PhysicalLayout({"h": (1, 2)}))
        r1 = Rule(Match.of(in_port=1), (ApplyActions((Output(2),)),), priority=5)
        r1b = Rule(Match.of(in_port=1), (ApplyActions((Output(1),)),), priority=5)
        r2 = Rule(Match.of(in_port=2, eth_dst=7), (), priority=6)
        await b.apply([FlowOp("h", "add", r1), FlowOp("h", "add", r2), FlowOp("h", "add", r1b)])
        assert b.rules("h") == [r2, r1b]  # same table/priority/match replaces
        await b.apply([FlowOp("h", "delete", Rule(Match.of(in_port=2)))])
        assert b.rules("h") == [r1b]
        await b.apply([GroupOp("h", "add", Group(3, "all", (Bucket((Output(1),)),)))])
        assert [g.group_id for g in await b.groups("h")] == [3]
        b.fail_next = (5, 1)
        with pytest.raises(BackendError) as e:
            await b.apply([FlowOp("h", "add", r2)])
        assert e.value.of_error == (5, 1) and e.value.op.rule == r2
        with pytest.raises(BackendError):
            await b.apply([FlowOp("x", "add", r2)])
        assert [p.port for p in b.ports("h")] == [1, 2]
    asyncio.run(go())


def test_make_backend_names():
    assert isinstance(make_backend("fake"), FakeBackend)
    with pytest.raises(BackendError, match="unknown backend 'p4'"):
        make_backend("p4")
