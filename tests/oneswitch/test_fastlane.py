"""The FLOW_MOD fast lane (oneswitch/fastlane.py) against the general path.

Two endpoints over equal OneSwitch states, one with the lane and one without,
get the same generated FLOW_MOD stream (lane-shaped adds mixed with every kind
of near miss: other instruction shapes, replacements, deletes, bad ports,
tables, flags, buffers, masks, duplicate or unordered OXMs, prerequisites).
After every message they must agree on: the error replies, the queued update
plans (op by op), the compiler's whole state, the installed rules' flags, and
the physical FLOW_MOD bytes the OVS backend sends. Also checked: the lane
really takes the common shape (so the comparison is not vacuous), and it stays
exact across a port remap, which replaces the compiler it caches for.
"""

from __future__ import annotations

import asyncio
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.backends.ovs import OvsBackend
from tandem.oneswitch.endpoint import OneSwitchEndpoint
from tandem.oneswitch.endpoint_session import Session
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import PortRef, Topology
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import ApplyActions, GotoTable, GroupAction, MoveField, Output, SetField, Subfield, WriteActions

K3 = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                    {1: "host:1", 2: "snic0:1", 3: "snic1:1", 4: "snic0:2"})
TRANSIT = Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:1", "s0:9"), ("h:2", "s1:9")],
                         {1: "s0:1", 2: "s0:2", 3: "s1:1"})


class FakeConn:
    def __init__(self) -> None:
        self.xid, self.sent = 0, []

    def next_xid(self) -> int:
        self.xid += 1
        return self.xid

    def start_batch(self, xids: list[int], msgs: list[bytes]) -> tuple[None, int]:
        self.sent.append(b"".join(msgs))
        return None, self.next_xid()

    async def finish_batch(self, fut: None, barrier_xid: int, xids: list[int]) -> None:
        pass


class FakeWriter:
    def __init__(self) -> None:
        self.out: list[bytes] = []

    def is_closing(self) -> bool:
        return False

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def get_extra_info(self, key: str) -> None:
        return None

    def close(self) -> None:
        pass


def endpoint(topo: Topology, pinned: bool, lane: bool) -> tuple[OneSwitchEndpoint, Session, FakeWriter]:
    state = OneSwitchState(topo, pin_infrastructure=pinned)
    state.take_plan()
    backend = OvsBackend()
    backend.conns = {sw: FakeConn() for sw in topo.switch_names}  # type: ignore[assignment]
    ep = OneSwitchEndpoint(state, topo, backend)
    if not lane:
        ep.add_lane = None
    writer = FakeWriter()
    s = Session(ep, None, writer)  # type: ignore[arg-type]
    s.negotiated = True
    return ep, s, writer


def oxm(name: str, value: int, mask: int | None = None) -> bytes:
    head, width = W._OXM_HEADS[name, mask is not None]
    return head + value.to_bytes(width, "big") + (b"" if mask is None else mask.to_bytes(width, "big"))


def flow_mod_body(command: int, table: int, priority: int, oxms: list[bytes], instructions: bytes, cookie: int = 0,
                  idle: int = 0, hard: int = 0, flags: int = 0, buffer_id: int = W.OFP_NO_BUFFER,
                  pad: bytes | None = None) -> bytes:
    raw = b"".join(oxms)
    length = 4 + len(raw)
    padding = pad if pad is not None else bytes(-length & 7)
    match = struct.pack("!HH", W.OFPMT_OXM, length) + raw + padding
    return M.FLOW_MOD_FIXED.pack(cookie, 0, table, command, idle, hard, priority, buffer_id, ir.OFPP_ANY, ir.OFPG_ANY,
                                 flags) + match + instructions


def instructions(*ins: ir.Instruction) -> bytes:
    return b"".join(W.encode_instruction(i) for i in ins)


PORTS = [1, 2, 3, 4, 7, ir.OFPP_FLOOD, ir.OFPP_CONTROLLER, ir.OFPP_IN_PORT]
LANE_SHAPE = st.sampled_from(PORTS).map(lambda p: instructions(ApplyActions((Output(p),))))
INSTRUCTIONS = st.one_of(
    *[LANE_SHAPE] * 12,  # the lane's shape, about half of the time
    st.sampled_from(PORTS).map(lambda p: instructions(ApplyActions((SetField("eth_dst", 5), Output(p))))),
    st.sampled_from(PORTS).map(lambda p: instructions(ApplyActions((Output(p), SetField("eth_src", 6))))),
    st.just(instructions(ApplyActions((Output(1), Output(2))))),
    st.just(instructions(ApplyActions((Output(2),)), GotoTable(3))),
    st.just(instructions(GotoTable(2))),
    st.just(instructions(WriteActions((Output(3),)))),
    st.just(instructions(ApplyActions((GroupAction(9),)))),
    st.just(instructions(ApplyActions((SetField("pkt_mark", 5), Output(2))))),
    st.sampled_from(PORTS).map(lambda p: instructions(ApplyActions((Output(p), Output(ir.OFPP_CONTROLLER))))),
    st.sampled_from(PORTS).map(lambda p: instructions(ApplyActions((Output(p), SetField("reg0", 1))))),
    st.just(instructions(ApplyActions((MoveField(Subfield("in_port", 0, 16), Subfield("reg1", 0, 16)), Output(3))))),
    st.just(instructions(ApplyActions((Output(2, 0),)))),
    st.just(instructions(ApplyActions((Output(ir.OFPP_CONTROLLER, 64),)))),
    st.just(instructions(ApplyActions())),
    st.just(instructions(ApplyActions((Output(2),)))[:-3]),  # truncated
)


@st.composite
def matches(draw) -> list[bytes]:
    fields = []
    if draw(st.integers(0, 9)):
        fields.append(oxm("in_port", draw(st.sampled_from([1, 2, 3, 4, 4, 1, 9, 0]))))
    fields.append(oxm("eth_src", draw(st.sampled_from([1, 2, *range(3, 40)]))))
    if draw(st.booleans()):
        fields.append(oxm("eth_dst", draw(st.integers(1, 3))))
    extra = draw(st.integers(0, 15))
    if extra == 1:
        fields += [oxm("eth_type", 0x800), oxm("ipv4_dst", 0x0A000001)]
    elif extra == 2:
        fields.append(oxm("ipv4_dst", 0x0A000001))  # prerequisite eth_type missing
    elif extra == 3:
        fields.append(oxm("eth_dst", 0x020000000000, 0xFF0000000000))  # masked
    elif extra == 4:
        fields.append(oxm("vlan_vid", 0x1005))
    elif extra == 5:
        fields.append(fields[-1])  # twice
    elif extra == 6:
        fields.append(oxm("pkt_mark", 3))  # an Open vSwitch extension field (NXM header)
    elif extra == 7:
        fields.append(W._OXM_HEADS["eth_type", False][0] + b"\x08")  # runs past the match
    if draw(st.integers(0, 5)) == 0:
        fields.reverse()  # an order encode_match would not write
    return fields


@st.composite
def lane_messages(draw) -> bytes:
    """Adds of the lane's kind (some still declined: a replacement, a shared rule missing)."""
    fields = [oxm("in_port", draw(st.sampled_from([1, 2, 3, 4]))), oxm("eth_dst", draw(st.integers(1, 30)))]
    if draw(st.booleans()):
        fields += [oxm("eth_type", 0x800), oxm("ipv4_dst", draw(st.integers(0, 3)))]
    if draw(st.integers(0, 3)) == 0:
        fields.append(oxm("vlan_vid", 0x1000 | draw(st.integers(0, 5))))
    if draw(st.booleans()):
        fields = draw(st.permutations(fields))
    return flow_mod_body(0, draw(st.sampled_from([0, 0, 1, 250])), draw(st.sampled_from([10, 20])), fields,
                         draw(LANE_SHAPE), cookie=draw(st.sampled_from([0, 9])), idle=draw(st.sampled_from([0, 30])),
                         hard=draw(st.sampled_from([0, 60])), flags=draw(st.sampled_from([0, 1, 4, 8, 16])))


@st.composite
def messages(draw) -> bytes:
    if draw(st.booleans()):
        return draw(lane_messages())
    command = draw(st.sampled_from([0] * 24 + [1, 2, 3, 4, 5]))
    table = draw(st.sampled_from([0] * 16 + [1, 251, 252, 255]))
    pad = draw(st.sampled_from([None] * 9 + [b"\x01" * 8]))
    return flow_mod_body(command, table, draw(st.sampled_from([10, 10, 20])), draw(matches()), draw(INSTRUCTIONS),
                         cookie=draw(st.sampled_from([0, 0, 7])), idle=draw(st.sampled_from([0, 0, 0, 30])),
                         hard=draw(st.sampled_from([0, 0, 0, 60])),
                         flags=draw(st.sampled_from([0] * 12 + [1, 2, 4, 0x20])),
                         buffer_id=draw(st.sampled_from([W.OFP_NO_BUFFER] * 20 + [3])), pad=pad)


def compiler_state(state: OneSwitchState) -> tuple:
    c = state.comp
    return (c.vrules, c.copies, c.needs, c.refs, c.rules, c.groups, c.journal)


def plans(s: Session) -> list:
    return [(m.xid, [[(op.switch, op.op, op.rule, op.group) for op in step] for step in steps]) for m, steps in s.pending]


def wire(ep: OneSwitchEndpoint, s: Session) -> dict[str, list[bytes]]:
    asyncio.run(s._apply_batches(s.pending))  # encodes every queued op as the OVS backend sends it
    return {sw: c.sent for sw, c in ep.backend.conns.items()}  # type: ignore[attr-defined]


def run_both(topo: Topology, pinned: bool, bodies: list[bytes], remap_at: int | None = None) -> int:
    """Feed both endpoints; assert they agree after every message. Returns how many the lane took."""
    (ep1, s1, w1), (ep0, s0, w0) = endpoint(topo, pinned, True), endpoint(topo, pinned, False)
    taken = 0
    for i, body in enumerate(bodies):
        if i == remap_at:
            moves = {max(topo.port_map): PortRef(topo.port_map[min(topo.port_map)].switch, 77)}
            for ep in (ep1, ep0):
                ep.state.remap_ports(moves)  # type: ignore[attr-defined]
        m = M.RawMessage(W.OFP_VERSION, W.OFPT_FLOW_MOD, 1000 + i, body)
        before = len(s1.pending)
        took = ep1.add_lane.take(s1, m) if ep1.add_lane is not None else False  # type: ignore[union-attr]
        if took:
            taken += 1
            assert len(s1.pending) == before + 1
        else:
            s1.handle_flow_mod(m)  # what the session does when the lane declines
        s0.handle_flow_mod(m)
        assert w1.out == w0.out, f"message {i}: error replies differ"
        assert plans(s1) == plans(s0), f"message {i}: plans differ"
        assert compiler_state(ep1.state) == compiler_state(ep0.state), f"message {i}: states differ"  # type: ignore[arg-type]
        assert {k: v[1] for k, v in ep1.rule_meta.items()} == {k: v[1] for k, v in ep0.rule_meta.items()}
    assert wire(ep1, s1) == wire(ep0, s0)
    return taken


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(messages(), min_size=1, max_size=40), topo=st.sampled_from([K3, TRANSIT]),
       pinned=st.booleans(), remap=st.integers(0, 60))
def test_fast_lane_equals_general_path(bodies, topo, pinned, remap):
    run_both(topo, pinned, bodies, remap if remap < len(bodies) else None)


def learning_rules(n: int, ports: list[int]) -> list[bytes]:
    """Half with OXMs in encode_match's order (in_port, eth_dst, eth_src), half not."""
    out = []
    for i in range(n):
        a, b = ports[i % len(ports)], ports[(i + 1 + i // len(ports)) % len(ports)]
        fields = [oxm("in_port", a), oxm("eth_dst", 0x020000100000 + i), oxm("eth_src", 0x020000000000 + i)]
        out.append(flow_mod_body(0, 0, 1, fields if i % 2 else fields[::-1],
                                 instructions(ApplyActions((Output(b if b != a else ir.OFPP_FLOOD),)))))
    return out


def test_fast_lane_takes_learning_switch_rules_and_declines_replacements():
    bodies = learning_rules(200, [1, 2, 3, 4])
    assert run_both(K3, True, bodies) == 200  # pinned shared rules: every such add is the lane's
    assert run_both(K3, True, bodies + bodies[:50]) == 200  # the repeats replace rules: general path
    # unpinned: the first rule toward a destination installs shared rules (general path), later ones are the lane's
    taken = run_both(K3, False, bodies)
    assert 150 < taken < 200
    assert run_both(TRANSIT, True, learning_rules(60, [1, 2, 3]), remap_at=30) == 60


def test_fast_lane_physical_bytes_are_the_encoders():
    """The lane's spliced physical FLOW_MOD is what encode_rule_flow_mod writes for that
    rule (OXMs in another order than encode_match's: no bytes noted, the encoder writes them)."""
    ep, s, _ = endpoint(K3, True, True)
    bodies = learning_rules(20, [1, 2, 3, 4])
    bodies.append(flow_mod_body(0, 3, 9, [oxm("in_port", 3), oxm("eth_type", 0x800), oxm("ipv4_dst", 7)],
                                instructions(ApplyActions((Output(4),))), cookie=5, idle=9, hard=11, flags=1))
    for i, body in enumerate(bodies):
        assert ep.add_lane.take(s, M.RawMessage(4, W.OFPT_FLOW_MOD, i, body))  # type: ignore[union-attr]
    for m, steps in s.pending:
        rule = steps[0][0].rule
        if m.xid < 20 and not m.xid % 2:  # learning_rules' reversed OXMs
            assert id(rule) not in M._ADD_WIRE_BY_ID
            continue
        flags = M.OFPFF_SEND_FLOW_REM if rule.idle_timeout or rule.hard_timeout else 0
        noted = M._ADD_WIRE_BY_ID.pop(id(rule))[2]  # taken out: the encoder below writes the bytes itself
        assert M.encode_rule_flow_mod(77, 0, rule, flags)[8:] == noted
