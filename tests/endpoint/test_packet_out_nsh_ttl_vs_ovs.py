"""``dec_nsh_ttl`` in a PACKET_OUT through OneSwitch (oneswitch/endpoint_nsh_ttl.py) against
one plain Open vSwitch 3.1 bridge side by side (the harness of test_packet_in_of_vs_ovs.py):
the same PACKET_OUTs, and each port must send the same frames and each controller receive
the same packet-ins (one controller's async config takes invalid_ttl), byte for byte, and
both give the same answers: at TTL 0 or 1 one invalid_ttl packet-in with the frame as sent
and nothing after it (outputs before it have sent), else each output after it carries the
TTL less 1; a frame that is not NSH is refused with BAD_ACTION/MATCH_INCONSISTENT by both."""

from __future__ import annotations

import struct
from collections import Counter

import pytest

from endpoint_helpers import errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import FRAME, _connect, _packet_ins
from test_packet_in_of_vs_ovs import _both, _controllers
from tandem.oneswitch.endpoint_nsh_ttl import bucket_as_action_set, check, expires, nsh_ttl, runs_as_action_set
from tandem.rules import nsh as N
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ir
from tandem.rules.ir import Clone, DecNshTtl, Group, Output
from tandem.rules.ofctl import parse_actions, parse_group

pytestmark = [pytest.mark.ovs]


def _nsh(ttl: int, vlan: bool = False) -> bytes:
    tag = bytes.fromhex("81000005") if vlan else b""
    return bytes.fromhex("0a00000000020a0000000001") + tag + struct.pack("!H", N.ETH_TYPE_NSH) + N.header(
        {"nsh_ttl": ttl, "nsh_spi": 0x10}) + FRAME


PACKET_OUTS = [  # (in_port, actions, frame)
    (1, "dec_nsh_ttl,output:2", _nsh(5)),
    (ir.OFPP_CONTROLLER, "output:3,dec_nsh_ttl,output:2,output:4", _nsh(63)),
    (2, "output:1,dec_nsh_ttl,output:3", _nsh(1)),  # (port 1 gets it, then the packet-in, port 3 nothing)
    (ir.OFPP_CONTROLLER, "dec_nsh_ttl,output:1", _nsh(0)),
    (4, "group:1,dec_nsh_ttl,set_field:9->nsh_ttl,output:1", _nsh(1)),  # (the group's two outputs only)
    (4, "dec_nsh_ttl,set_field:9->nsh_ttl,output:1,group:1", _nsh(2)),
    (3, "dec_nsh_ttl,push_vlan:0x8100,set_field:4100->vlan_vid,output:1", _nsh(2, vlan=True)),
    # (potail) after changes, in clones and in buckets: decided on the frame as changed so far
    (1, "set_field:1->nsh_ttl,output:3,dec_nsh_ttl,output:2", _nsh(5)),  # (the packet-in shows TTL 1)
    (2, "push_vlan:0x8100,set_field:4101->vlan_vid,dec_nsh_ttl,output:3", _nsh(3)),
    (1, "dec_nsh_ttl,dec_nsh_ttl,output:2", _nsh(2)),  # (the second runs out)
    (1, "clone(dec_nsh_ttl,output:2),output:3", _nsh(1)),  # (the clone ends, the list goes on)
    (4, "set_field:2->nsh_ttl,clone(set_field:9->nsh_si,dec_nsh_ttl,output:2),dec_nsh_ttl,output:3", _nsh(63)),
    (2, "set_field:3->pkt_mark,set_field:5->tunnel_id,set_field:9->metadata,set_field:7->reg2,dec_nsh_ttl,output:1",
     _nsh(1)),  # (the invalid_ttl packet-in shows the state written)
    (3, "group:2,output:4", _nsh(1)),  # (bucket 1 as an action set: dec_nsh_ttl first, runs out; bucket 2 sends)
    (3, "set_field:9->nsh_ttl,group:2", _nsh(1)),
    (3, "group:2", FRAME),  # (not NSH in a bucket: that bucket ends, nothing refused)
    (4, "group:3", FRAME),  # (buckets as action sets: port 2 only of the first, port 3 with eth_src ...:0a; pop_vlan
    #                         on an untagged frame pops nothing, port 1 gets it)
    # (nshload) the flow's 8-bit TTL decides, not the frame's 6 bits: 0xc1 decrements (the frame leaves with TTL 0)
    (1, "load:0xc1->NXOXM_NSH_TTL[],dec_nsh_ttl,output:2", _nsh(5)),
    (2, "set_field:0x81->reg0,move:NXM_NX_REG0[0..7]->NXOXM_NSH_TTL[],dec_nsh_ttl,output:3", _nsh(5)),
    (3, "load:0x1->NXOXM_NSH_TTL[6],load:0x1->NXOXM_NSH_TTL[0..5],dec_nsh_ttl,output:1", _nsh(9)),
    (4, "load:0x2->NXOXM_NSH_TTL[6..7],set_field:1->nsh_ttl,dec_nsh_ttl,output:1", _nsh(9)),  # (the set_field clears them)
    (1, "dec_nsh_ttl,output:2", FRAME),  # not NSH: MATCH_INCONSISTENT
]
GROUP = "group_id=1,type=all,bucket=output:2,bucket=set_field:02:00:00:00:00:09->eth_src,output:3"
GROUP3 = "group_id=3,type=all,bucket=output:1,output:2,bucket=set_field:02:00:00:00:00:09->eth_src,output:3," \
    "set_field:02:00:00:00:00:0a->eth_src,bucket=pop_vlan,output:1"
GROUP2 = "group_id=2,type=all,bucket=output:1,dec_nsh_ttl,bucket=set_field:02:00:00:00:00:09->eth_src,dec_nsh_ttl,output:2"


@async_test
async def test_packet_out_dec_nsh_ttl_as_one_ovs_bridge():
    async def drive(port: int, inject) -> list:
        cs = await _controllers(port)
        cs[4].send(W.header(W.OFPT_SET_ASYNC, cs[4].next_xid(), struct.pack("!6I", 0x7, 0, 0x7, 0x7, 0xF, 0)))
        sender = await _connect(port)
        sender.send(M.encode_group_mod(sender.next_xid(), "add", parse_group(GROUP)))
        sender.send(M.encode_group_mod(sender.next_xid(), "add", parse_group(GROUP2)))
        sender.send(M.encode_group_mod(sender.next_xid(), "add", parse_group(GROUP3)))
        answers = []
        for in_port, text, frame in PACKET_OUTS:
            sender.send(M.encode_packet_out(sender.next_xid(), M.WirePacketOut(
                W.OFP_NO_BUFFER, in_port, parse_actions(text), frame)))
            answers.append([e[1:] for e in errors_in(await sender.barrier())])
        return [answers] + [await _packet_ins(c) for c in cs]

    (got_ovs, out_ovs), (got_one, out_one) = await _both(drive, sent=lambda out: {p: Counter(f) for p, f in out.items()})
    assert got_ovs[0] == [[]] * (len(PACKET_OUTS) - 1) + [[(W.OFPET_BAD_ACTION, 10)]]
    assert got_one[0] == got_ovs[0]
    assert [len(p) for p in got_ovs[1:]] == [0, 0, 0, 0, 10]  # (invalid_ttl: the last controller's only)
    assert got_one[1:] == got_ovs[1:]
    assert out_one == out_ovs
    assert sum(sum(c.values()) for c in out_ovs.values()) == 11 + 8 + 3 + 3  # (+3: nshload's)
    assert out_one == out_ovs


def test_check_refuses_what_the_walk_does_not_carry_out():
    groups = {2: Group(2, "all", (ir.Bucket((DecNshTtl(), Output(1))),)),
              3: Group(3, "all", (ir.Bucket(parse_actions("pop_mpls:0x894f,dec_nsh_ttl,output:1")),)),
              4: Group(4, "all", (ir.Bucket(parse_actions("output:1")), ir.Bucket((ir.GroupAction(2),))))}
    for acts, frame in [
        ((Output(1), DecNshTtl(), Output(2)), _nsh(5)),
        ((DecNshTtl(), Output(2)), _nsh(5, vlan=True)),
        ((*parse_actions("set_field:9->nsh_ttl,push_vlan:0x8100"), DecNshTtl(), DecNshTtl(), Output(2)), _nsh(5)),
        ((Clone((DecNshTtl(), Output(1))), ir.GroupAction(2), ir.GroupAction(4)), _nsh(5)),
        ((ir.GroupAction(2),), FRAME),  # (a bucket is not checked against the frame, as in Open vSwitch)
        ((*parse_actions("ct_clear"), Clone((DecNshTtl(), Output(1)))), _nsh(5)),
    ]:
        check(acts, frame, groups)
    for acts, frame, code in [
        ((DecNshTtl(), Output(2)), FRAME, 10),  # not NSH: as Open vSwitch
        ((*parse_actions("push_mpls:0x8847"), DecNshTtl(), Output(2)), _nsh(5), 10),
        ((Clone((*parse_actions("push_mpls:0x8847"), DecNshTtl(), Output(1))),), _nsh(5), 10),
        ((*parse_actions("check_pkt_larger(100)->NXM_NX_REG1[0]"), DecNshTtl(), Output(2)), _nsh(5), W.OFPBAC_BAD_TYPE),
        # (ct_clear is measured since poins2: it changes nothing a PACKET_OUT's packet-in shows, so it is taken)
        ((*parse_actions("learn(table=1,NXM_OF_ETH_DST[])"), Clone((DecNshTtl(), Output(1)))), _nsh(5), W.OFPBAC_BAD_TYPE),
        ((*parse_actions("ct(commit)"), ir.GroupAction(4)), _nsh(5), W.OFPBAC_BAD_TYPE),
        ((ir.GroupAction(3),), _nsh(5), W.OFPBAC_BAD_TYPE),  # (pop_mpls beside it in a bucket)
        # after a packet-in (measured: Open vSwitch then sends the TTL undecremented and a VLAN TCI no action wrote)
        ((Clone(parse_actions("push_vlan:0x8100,set_field:5014->vlan_vid,controller")), DecNshTtl(), Output(2)), _nsh(5),
         W.OFPBAC_BAD_TYPE),
        ((Output(ir.OFPP_CONTROLLER), ir.GroupAction(2)), _nsh(5), W.OFPBAC_BAD_TYPE),
    ]:
        with pytest.raises(W.OFError) as e:
            check(acts, frame, groups)
        assert (e.value.etype, e.value.code) == (W.OFPET_BAD_ACTION, code), acts
    assert (nsh_ttl(_nsh(7)), nsh_ttl(_nsh(7, vlan=True)), nsh_ttl(FRAME)) == (7, 7, None)
    assert [expires(_nsh(t)) for t in (0, 1, 2)] == [True, True, False]


@pytest.mark.parametrize("run", ["run_dp", "run_translation"])
def test_random_packet_outs_with_dec_nsh_ttl_run_as_in_open_vswitch(run):
    """A bounded run of ``tandem bench packet_out_oracle -- --nsh-ttl``."""
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.testing import packet_out_oracle as PO

    with OvsSandbox() as sb:
        r = getattr(PO, run)(sb, 200, seed=5, nsh_ttl=True)
    assert r.packet_outs >= 200 and r.frames > 200
    assert not r.mismatches, r.mismatches[0]


def _decs(acts) -> int:
    return sum(_decs(a.actions) if type(a) is Clone else type(a) is DecNshTtl for a in acts)


def test_the_oracle_draws_the_accepted_form_and_expiring_ttls():
    import random

    from tandem.testing.packet_out_oracle import random_packet_out

    rng = random.Random(2)
    pos = [random_packet_out(rng, [], nsh_ttl=True) for _ in range(200)]
    for _, acts, frame in pos:
        check(acts, frame, {})  # (every draw is a form the endpoint carries out)
        assert _decs(acts) >= 1
    assert 40 < sum(expires(f) for _, _, f in pos) < 120
    assert any(type(a) is Clone and DecNshTtl() in a.actions for _, acts, _ in pos for a in acts)
    assert any(type(a) is DecNshTtl and i > 0 and type(acts[i - 1]) is not Output for _, acts, _ in pos
               for i, a in enumerate(acts))


def test_a_bucket_holding_dec_nsh_ttl_runs_as_its_action_set():
    acts = parse_actions("output:1,set_field:1->reg0,dec_nsh_ttl,push_vlan:0x8100,note:01,output:2")
    assert bucket_as_action_set(acts) == (*parse_actions("push_vlan:0x8100,dec_nsh_ttl,set_field:1->reg0"), Output(2))
    assert bucket_as_action_set(parse_actions("dec_nsh_ttl,set_field:1->reg0")) == ()  # (no output: nothing)
    assert bucket_as_action_set(parse_actions("output:3,group:2,dec_nsh_ttl")) == (DecNshTtl(), ir.GroupAction(2))
    assert runs_as_action_set(parse_actions("output:1,set_field:1->reg0,output:2"))
    assert not runs_as_action_set(parse_actions("output:1,resubmit(,1)"))
    assert not runs_as_action_set(parse_actions("pop_mpls:0x0800,output:1"))
