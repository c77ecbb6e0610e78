"""Test support for the endpoint: a one-switch identity state and a raw OpenFlow client.

``IdentityState`` is the trivial OneSwitch of a single physical switch whose
virtual port v is physical port v: every virtual rule is its own physical
rule. It lets the protocol machinery be tested without the translator; the
translator-backed tests live in test_controllers.py.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

from tandem.backends.base import FlowOp, GroupOp
from tandem.oneswitch.topology import Topology
from tandem.oneswitch import endpoint_stats as V
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod, Group, Rule


THREE_SWITCHES = Path(__file__).with_name("three_switches.yaml")


async def emu_endpoint(topology: Path = THREE_SWITCHES, **endpoint_options):
    """A OneSwitch endpoint over a started emulator backend (``tandem serve --backend emu``):
    ``(endpoint, backend)``; the caller closes both."""
    from tandem.backends.factory import make_backend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.ids import N_PHYSICAL_TABLES
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import load_topology

    topo = load_topology(topology)
    backend = make_backend("emu", n_tables=N_PHYSICAL_TABLES)
    await backend.start(layout_for(topo))
    return OneSwitchEndpoint(OneSwitchState(topo), topo, backend, **endpoint_options), backend


def one_switch_topology(n_ports: int = 4) -> Topology:
    return Topology.build({"s": "host"}, [], {v: f"s:{v}" for v in range(1, n_ports + 1)})


class IdentityState:
    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.rules: dict[V.Key, Rule] = {}
        self.groups: dict[int, Group] = {}

    def apply(self, mod: FlowMod) -> list[list[FlowOp]]:
        r = mod.rule
        key = V.rule_key(r)
        if mod.command == "add":
            self.rules[key] = r
            return [[FlowOp("s", "add", r)]]
        if mod.command in ("modify", "modify_strict"):
            hits = [k for k, old in self.rules.items() if (k == key if mod.command == "modify_strict" else
                    k[0] == r.table and V.covers(r.match, old.match))]
            ops = []
            for k in hits:
                old = self.rules[k]
                self.rules[k] = Rule(old.match, r.instructions, old.table, old.priority, old.cookie, old.idle_timeout, old.hard_timeout)
                ops.append(FlowOp("s", "modify_strict", self.rules[k]))
            return [ops]
        strict = mod.command == "delete_strict"
        hits = [k for k, old in self.rules.items()
                if (mod.all_tables or k[0] == r.table) and (k == key if strict else V.covers(r.match, old.match))
                and V.outputs_to(old, mod.out_port)]
        return [[FlowOp("s", "delete_strict", self.rules.pop(k)) for k in hits]]

    def set_groups(self, groups) -> list[list[GroupOp]]:
        new = {g.group_id: g for g in groups}
        ops = [GroupOp("s", "add" if gid not in self.groups else "modify", g)
               for gid, g in new.items() if self.groups.get(gid) != g]
        ops += [GroupOp("s", "delete", g) for gid, g in self.groups.items() if gid not in new]
        self.groups = new
        return [ops] if ops else []

    def virtual_rules(self) -> list[Rule]:
        return list(self.rules.values())

    def ingress_rules(self, vr: Rule) -> list[tuple[str, Rule]]:
        return [("s", vr)]

    def to_virtual_packet_in(self, switch: str, port: int, frame: bytes):
        return (port, frame) if port in self.topo.port_map else None


class OFClient:
    """A bare OpenFlow 1.3 controller connection for tests."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.buf = bytearray()
        self.inbox: list[M.RawMessage] = []
        self.xid = 100

    @classmethod
    async def connect(cls, port: int, hello: bool = True) -> "OFClient":
        r, w = await asyncio.open_connection("127.0.0.1", port)
        c = cls(r, w)
        if hello:
            c.send(M.encode_hello())
            m = await c.recv()
            assert m.type == W.OFPT_HELLO
        return c

    def next_xid(self) -> int:
        self.xid += 1
        return self.xid

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def recv(self, timeout: float = 5.0) -> M.RawMessage:
        while not self.inbox:
            chunk = await asyncio.wait_for(self.reader.read(1 << 16), timeout)
            if not chunk:
                raise ConnectionError("closed by the switch")
            self.buf += chunk
            self.inbox += M.split_messages(self.buf)
        return self.inbox.pop(0)

    async def until(self, mtype: int, xid: int | None = None, timeout: float = 5.0) -> list[M.RawMessage]:
        """Every message up to and including the first of type ``mtype`` (and ``xid``)."""
        seen = []
        while True:
            m = await self.recv(timeout)
            seen.append(m)
            if m.type == mtype and (xid is None or m.xid == xid):
                return seen

    async def request(self, build, reply_type: int) -> M.RawMessage:
        xid = self.next_xid()
        self.send(build(xid))
        msgs = await self.until(reply_type, xid)
        return msgs[-1]

    async def barrier(self) -> list[M.RawMessage]:
        xid = self.next_xid()
        self.send(M.encode_barrier_request(xid))
        return await self.until(W.OFPT_BARRIER_REPLY, xid)

    async def echo_ok(self) -> bool:
        xid = self.next_xid()
        self.send(M.encode_echo_request(xid, b"ping"))
        msgs = await self.until(W.OFPT_ECHO_REPLY, xid)
        return msgs[-1].body == b"ping"

    def close(self) -> None:
        self.writer.close()


def errors_in(msgs: list[M.RawMessage]) -> list[tuple[int, int, int]]:
    return [(m.xid, *struct.unpack_from("!HH", m.body)) for m in msgs if m.type == W.OFPT_ERROR]


async def take_role(c: OFClient, role: int, generation: int = 1) -> None:
    """ROLE_REQUEST ``role`` (OFPCR_ROLE_*) on ``c`` and wait for the reply."""
    await c.request(lambda x: W.header(W.OFPT_ROLE_REQUEST, x, struct.pack("!I4xQ", role, generation)), W.OFPT_ROLE_REPLY)


async def ovs_bridge_client(sb, bridge: str) -> OFClient:
    """An OpenFlow 1.3 connection to ``bridge`` of an OvsSandbox, past the hello."""
    r, w = await asyncio.open_unix_connection(sb.mgmt(bridge).removeprefix("unix:"))
    c = OFClient(r, w)
    c.send(M.encode_hello())
    assert (await c.recv()).type == W.OFPT_HELLO
    return c


async def ovs_backend_endpoint(sb, topology: Path = THREE_SWITCHES):
    """A OneSwitch endpoint over a started OVS backend in ``sb``: ``(endpoint, backend)``;
    the caller closes both."""
    from tandem.backends.ovs import OvsBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import load_topology

    topo = load_topology(topology)
    backend = OvsBackend(sandbox=sb)
    await backend.start(layout_for(topo))
    return OneSwitchEndpoint(OneSwitchState(topo), topo, backend), backend
