"""``clone(…)`` in a PACKET_OUT: the endpoint walks into the clone with a copy of the
changes so far (endpoint_clone.py), an ``exit`` inside ends the whole PACKET_OUT, and
what it does not carry out inside a clone is refused with one error each; ``bundle`` /
``bundle_load`` in a PACKET_OUT: the endpoint chooses the member from the liveness it
knows (endpoint_bundle.py). Against Open vSwitch 3.1, random PACKET_OUTs with clones,
and with bundles while ports are down, through dp-core and through OneSwitch over OVS
bridges (a bounded run of ``tandem bench packet_out_oracle [--bundles]``)."""

from __future__ import annotations

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test, start
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import Bundle, CheckPktLarger, Clone, Exit, GroupAction, Output, Resubmit, SetField, Subfield
from tandem.rules.ofctl import parse_group
from tandem.testing.packet_out_oracle import run_dp, run_translation

FRAME = bytes.fromhex("020000000002020000000001") + b"\x08\x00" + bytes(46)
MAC = 0x02_00_00_00_00_09


def _sent(backend) -> list[tuple[int, tuple]]:
    """(physical port, the changes before it) of each physical PACKET_OUT, in order."""
    return [(a[-1].port, tuple(a[:-1])) for _, _, a, f in backend.sent if f == FRAME]


async def _packet_out(c, actions, in_port=ir.OFPP_CONTROLLER) -> list:
    xid = c.next_xid()
    c.send(M.encode_packet_out(xid, M.WirePacketOut(W.OFP_NO_BUFFER, in_port, tuple(actions), FRAME)))
    return [(t, code) for x, t, code in errors_in(await c.barrier()) if x == xid]


@async_test
async def test_a_clone_runs_on_a_copy_and_an_exit_inside_ends_everything():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    acts = [Clone((SetField("eth_dst", MAC), Output(2), Clone((Output(3),)))), Output(1),
            Clone((Exit(),)), Output(4)]
    assert await _packet_out(c, acts) == []
    # the clone's set_field reaches its own outputs only; nothing after the exit leaves
    assert _sent(backend) == [(2, (SetField("eth_dst", MAC),)), (3, (SetField("eth_dst", MAC),)), (1, ())]
    await ep.close()


@async_test
async def test_an_output_to_the_packet_outs_own_in_port_sends_nothing():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    assert await _packet_out(c, [Output(2), Clone((Output(2), Output(ir.OFPP_IN_PORT))), Output(3)], in_port=2) == []
    assert [p for p, _ in _sent(backend)] == [2, 3]  # (IN_PORT sends it back, as Open vSwitch does)
    await ep.close()


@pytest.mark.parametrize("nested, err", [
    ((Resubmit(table=1),), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    ((Output(ir.OFPP_TABLE),), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)),
    # (a packet-in the endpoint sends itself after a change its packet-in is not measured for: endpoint_packet_in.py)
    # (pop_queue there goes whole to the host on an OVS-like backend: packet_out_whole.py; output_trunc does not)
    ((Clone((ir.OutputTrunc(2, 100), ir.Controller())),), (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)),
])
@async_test
async def test_what_a_packet_outs_clone_cannot_hold_is_refused_with_one_error(nested, err):
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    assert await _packet_out(c, [Clone(nested), Output(1)]) == [err]
    assert _sent(backend) == []
    await ep.close()


def test_a_packet_out_decodes_a_clone_a_bucket_and_write_actions_do_not():
    raw = W.encode_actions([Clone((Output(1),))])
    po = M.decode_packet_out(M.encode_packet_out(1, M.WirePacketOut(W.OFP_NO_BUFFER, 1, (Clone((Output(1),)),),
                                                                     FRAME))[8:])
    assert po.actions == (Clone((Output(1),)),)
    with pytest.raises(W.OFError):
        W.decode_actions(raw)


@pytest.mark.ovs
@pytest.mark.parametrize("run", [run_dp, run_translation], ids=["dp-core", "oneswitch over OVS"])
@pytest.mark.parametrize("mode", [{}, {"bundles": True}, {"packet_ins": True}, {"truncs": True},
                                  {"truncs": True, "bundles": True}],  # (potrunc3: groups, output_reg, bundles)
                         ids=["clones", "bundles, ports down", "packet-ins after changes", "output_trunc",
                              "output_trunc, bundles"])
def test_random_packet_outs_run_as_in_open_vswitch(run, mode):
    """Bounded runs of ``tandem bench packet_out_oracle`` (``--bundles``, ``--packet-ins``: the
    packet-ins byte for byte, endpoint_packet_in.py; ``--truncs``: endpoint_trunc.py)."""
    with OvsSandbox() as sb:
        r = run(sb, 200, seed=3, **mode)
    assert r.packet_outs >= 200 and r.frames > 200 and (mode.get("bundles") or mode.get("truncs") or r.clones >= 200)
    assert r.packet_ins > 200 if mode.get("packet_ins") else r.packet_ins == 0
    assert r.nx_packet_ins > 100 if mode.get("packet_ins") and run is run_translation else r.nx_packet_ins == 0
    assert r.truncs >= 200 if mode.get("truncs") else r.truncs == 0
    assert r.groups >= 100 and r.output_regs >= 50 if mode.get("truncs") else r.output_regs == 0
    assert not r.mismatches, r.mismatches[0]


@async_test
async def test_a_bundle_in_a_packet_out_outputs_to_the_member_the_endpoint_sees_live():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    live = {1: False, 2: True, 3: True}
    ep.state.port_live = lambda v: live.get(v, True)  # (IdentityState keeps no liveness)
    b = Bundle("eth_src", 0, "active_backup", (1, 2, 3))
    load = Bundle("eth_src", 0, "active_backup", (1, 3), Subfield("reg0", 0, 16))
    assert await _packet_out(c, [b, load, Output(4)]) == []
    # the first live member; the load of 3 (1 is down) goes with the frame
    assert _sent(backend) == [(2, ()), (4, (SetField("reg0", 3, 0xFFFF),))]
    live[3] = False
    backend.sent.clear()
    assert await _packet_out(c, [Bundle("eth_src", 0, "hrw", (1, 3)), Output(4)]) == []
    assert _sent(backend) == [(4, ())]  # (no member live: the bundle sends nothing)
    await ep.close()


@async_test
async def test_check_pkt_larger_in_a_packet_out_loads_the_bit_of_the_frames_length_so_far():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    reg = Subfield("reg0", 3, 1)
    assert await _packet_out(c, [CheckPktLarger(60, reg), Output(1), ir.PushVlan(), CheckPktLarger(60, reg),
                                 Output(2)]) == []
    # 60 bytes are not larger than 60; with the tag pushed, 64 are
    assert _sent(backend) == [(1, (SetField("reg0", 0, 8),)),
                              (2, (SetField("reg0", 0, 8), ir.PushVlan(), SetField("reg0", 8, 8)))]
    # into a header field (Open vSwitch writes the bit into the flow, not the frame): the whole PACKET_OUT goes
    # to the host's Open vSwitch, every port homed there first (packet_out_whole.py; refused on the emulator, whose
    # dp-core writes the bit into the frame: test_packet_out_whole_vs_ovs.py)
    backend.sent.clear()
    assert await _packet_out(c, [CheckPktLarger(60, Subfield("eth_dst", 0, 1)), Output(1)]) == []
    host = ep.state.topo.host
    assert [(sw, tuple(a)) for sw, _, a, f in backend.sent if f == FRAME] == [
        (host, (CheckPktLarger(60, Subfield("eth_dst", 0, 1)), Output(ep.state.topo.port_map[1].port)))]
    await ep.close()


@async_test
async def test_a_fast_failover_group_in_a_packet_out_runs_its_first_live_bucket():
    ep, backend, port = await start()
    c = await OFClient.connect(port)
    c.send(M.encode_group_mod(c.next_xid(), "add", parse_group(
        "group_id=3,type=fast_failover,bucket=watch_port:1,output:1,bucket=watch_port:2,output:2")))
    ep.state.port_live = lambda v: v != 1  # (IdentityState keeps no liveness)
    assert await _packet_out(c, [GroupAction(3)]) == []
    assert _sent(backend) == [(2, ())]
    await ep.close()
