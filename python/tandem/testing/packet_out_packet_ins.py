"""Packet-ins in the PACKET_OUT oracle (``packet_out_oracle``, ``--packet-ins``): outputs to
CONTROLLER and ``controller(…)`` after changes to the packet and its pipeline state (field
sets of pkt_mark, metadata, tunnel_id, the other tunnel fields and a register, a move from
the frame or a tunnel field into a register, ct_clear), at the top and inside clones, and how the oracle compares the packet-ins.

OneSwitch's endpoint is compared byte for byte (OpenFlow 1.3 packet-ins, xid 0 on both
sides); dp-core by what a packet-in shows: the frame and the pipeline state in its match
(``in_port`` aside: dp-core's scratch switch runs from the frame's port). The plain
bridge's side is a controller connection (``controller_streams``), and both ask for
packet-ins with a SET_CONFIG.
"""

from __future__ import annotations

import random
import struct
from typing import Iterable

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_packet_in2 as P
from tandem.rules.generate import random_value
from tandem.rules.ir import OFPP_CONTROLLER, Action, Controller, CtClear, MoveField, Output, SetField, Subfield

MISS_SEND_LEN = 128
_STATE = ("pkt_mark", "metadata", "tunnel_id", "reg2")
# the tunnel fields beside tunnel_id (in the packet-in's match: tun_flags masked) and reads of them
TUNNEL_FIELDS = ("tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst", "tun_flags", "tun_gbp_id", "tun_gbp_flags")


def packet_in_segment(rng: random.Random, top: bool = True) -> list[Action]:
    """A change to the packet's state, or a packet-in (CONTROLLER, or ``controller(…)`` with
    reason action or no_match and now and then userdata, dropped from OpenFlow packet-ins).
    ``top``: not inside a clone (ct_clear only there: a PACKET_OUT's clone refuses it)."""
    x = rng.random()
    if x < 0.35:
        f = rng.choice(_STATE + TUNNEL_FIELDS)
        return [SetField(f, random_value(rng, f) or 1)]
    if x < 0.38:
        return [rng.choice((CtClear(),) * top + (MoveField(Subfield(rng.choice(("tun_src", "tun_gbp_id")), 0, 16),
                                                 Subfield("reg4", 0, 16)),))]
    if x < 0.45:
        return [MoveField(Subfield("eth_src", rng.choice((0, 8, 24)), 16), Subfield("reg3", 0, 16))]
    if x < 0.7:
        return [Output(OFPP_CONTROLLER)]
    return [Controller(reason=rng.choice((0, 1, 1)), userdata=bytes(rng.randrange(256) for _ in range(rng.choice((0, 3)))))]


async def controller_streams(sb, br: str):
    """The streams of a controller connection to bridge ``br`` that takes packet-ins: Open
    vSwitch sends none to its management socket, so a passive controller with
    asynchronous messages is set on the bridge and connected to."""
    import asyncio
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sb.vsctl("--", "--id=@c", "create", "Controller", f'target="ptcp:{port}:127.0.0.1"', "enable_async_messages=true",
             "--", "set", "Bridge", br, "controller=@c")
    for _ in range(200):
        try:
            return await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
    raise ConnectionError(f"bridge {br}'s controller port {port} does not answer")


def ask_for_packet_ins(conn) -> None:
    """A SET_CONFIG with a miss_send_len that is not 0 on an oracle connection."""
    conn.send(lambda x: M.encode_set_config(x, 0, MISS_SEND_LEN))


def is_packet_in(m) -> bool:
    """Whether message ``m`` (``ofwire_msgs.split_messages``) is a packet-in in any of the three
    formats: OpenFlow's, Nicira's old NXT_PACKET_IN or NXT_PACKET_IN2."""
    return m.type == W.OFPT_PACKET_IN or m.type == W.OFPT_EXPERIMENTER and m.body[:8] in _NX_PACKET_INS


def packet_in_format(conn, batch: int) -> None:
    """Set the packet-in format of an oracle connection for batch number ``batch``: the three in
    turn, so the translation check compares OneSwitch's packet-ins byte for byte in each."""
    conn.send(lambda x: P.encode_set_packet_in_format(x, batch % 3))


_NX_PACKET_INS = {struct.pack("!II", P.NX_VENDOR_ID, t) for t in (P.NXT_PACKET_IN, P.NXT_PACKET_IN2)}


def ovs_packet_in_keys(messages: Iterable[bytes]) -> list[tuple]:
    """What dp-core's packet-ins are compared by, from Open vSwitch's OpenFlow packet-ins."""
    out = []
    for m in messages:
        pi = M.decode_packet_in(m[8:])
        out.append(("packet-in", pi.data, tuple(sorted((k, fm.value) for k, fm in pi.match.fields if k != "in_port"))))
    return out


def dp_packet_in_keys(copies: Iterable) -> list[tuple]:
    """The same from dp-core's packet-in copies (``Fates.controller``)."""
    return [("packet-in", c.frame, tuple(sorted((k, v) for k, v in c.meta if v))) for c in copies]


__all__ = ["MISS_SEND_LEN", "TUNNEL_FIELDS", "ask_for_packet_ins", "controller_streams", "dp_packet_in_keys", "is_packet_in",
           "ovs_packet_in_keys", "packet_in_format", "packet_in_segment"]
