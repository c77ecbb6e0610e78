"""The PACKET_OUT oracle's packet-in segments (``testing/packet_out_packet_ins.py``): random
PACKET_OUTs with ``--packet-ins`` send packet-ins after writes to every tunnel field beside
tunnel_id, after reads of them and after ct_clear (never inside a clone, which refuses it), and
the endpoint takes every one of them (docs/endpoint.md, PACKET_OUT)."""

import random

from tandem.oneswitch.endpoint_packet_in import unmodeled_before_packet_in
from tandem.rules import ir
from tandem.testing.packet_out_oracle import random_packet_out
from tandem.testing.packet_out_packet_ins import TUNNEL_FIELDS


def _forms_before_packet_ins(acts, seen: frozenset = frozenset(), depth: int = 0) -> set:
    """The tunnel fields written or read, and ct_clear, before a packet-in (``depth``: clone nesting)."""
    out = set()
    for a in acts:
        if type(a) is ir.Clone:
            out |= _forms_before_packet_ins(a.actions, seen, depth + 1)
            continue
        assert not (type(a) is ir.CtClear and depth), "ct_clear inside a PACKET_OUT's clone"
        assert not unmodeled_before_packet_in(a), a
        if type(a) is ir.CtClear:
            seen |= {"ct_clear"}
        elif type(a) is ir.SetField and a.field in TUNNEL_FIELDS:
            seen |= {a.field}
        elif type(a) is ir.MoveField and a.src.field in TUNNEL_FIELDS:
            seen |= {"read " + a.src.field}
        if type(a) is ir.Controller or type(a) is ir.Output and a.port == ir.OFPP_CONTROLLER:
            out |= seen
    return out


def test_random_packet_outs_send_packet_ins_after_every_tunnel_field_and_ct_clear():
    rng, forms, holding = random.Random(0), set(), 0
    for _ in range(1000):
        _, acts, _ = random_packet_out(rng, [], packet_ins=True)
        found = _forms_before_packet_ins(acts)
        forms |= found
        holding += bool(found)
    assert forms == {*TUNNEL_FIELDS, "ct_clear", "read tun_src", "read tun_gbp_id"}
    assert holding > 150
