"""``bundle``, ``bundle_load``, fast-failover groups and ``check_pkt_larger`` in a
PACKET_OUT (docs/endpoint.md): choices the endpoint makes for the frame it holds.

A PACKET_OUT's frame leaves from its target ports' own switches, none of which sees
every member's liveness; the endpoint does (``OneSwitchState.port_live``). So the
endpoint makes the choice itself: dp-core, whose bundle is Open vSwitch 3.1's bit for
bit (``ovs_hash.rs``; ``tandem bench of13_oracle -- --items bundle``), runs the
changes made so far and the bundle on the frame in a scratch switch whose ports are
the virtual ones, each live as the endpoint knows it; the member it sends to is the
choice. ``bundle`` becomes an output to that member (none if no member is live),
``bundle_load`` a load of its number (0xffff if none), as Open vSwitch runs them (a
reserved member, always live, becomes the output to that reserved port, which the
PACKET_OUT then runs as one written in it).
A fast-failover group's bucket is chosen the same way, from the liveness the endpoint
knows (``failover_buckets``: the first bucket whose watched port is live or whose
watched group has a live bucket). ``check_pkt_larger`` becomes a load of the bit
for the frame as changed so far (``check_bit``).
"""

from __future__ import annotations

from typing import Sequence

from tandem.rules.ir import BUNDLE_RESERVED_MEMBERS, OFPG_ANY, OFPP_ANY, OFPP_IN_PORT, Action, ApplyActions, Bundle
from tandem.rules.ir import CheckPktLarger, Match, MoveField, Output, Rule, SetField, Subfield

from .rule_analysis import _load as load_bits

_SCRATCH_IN = 0xFEF0  # the scratch switch's in_port: a port no member is (no field a bundle hashes reads it)


def failover_buckets(g, groups: dict, live, depth: int = 0) -> tuple:
    """The bucket a fast-failover group ``g`` runs (none if no bucket is live)."""
    for b in g.buckets:
        if _bucket_live(b, groups, live, depth):
            return (b,)
    return ()


def _bucket_live(b, groups: dict, live, depth: int) -> bool:
    if b.watch_port not in (OFPP_ANY,) and b.watch_port < 0xFFFFFF00 and live(b.watch_port):
        return True
    w = groups.get(b.watch_group) if b.watch_group != OFPG_ANY else None
    return w is not None and depth < 8 and any(_bucket_live(x, groups, live, depth + 1) for x in w.buckets)


def bundle_choice(frame: bytes, mods: Sequence[Action], b: Bundle, vports: Sequence[int], live) -> int | None:
    """The member ``b`` picks for ``frame`` after ``mods``, given ``live(vport)`` (a
    reserved member is always live, as in dp-core and Open vSwitch; None: no member is
    live, or the choice is NONE, which outputs nothing). dp-core loads the choice into a
    register, as ``bundle_load``, and the frame brings it back in eth_dst."""
    from tandem.dataplane.switch import Switch

    ports = sorted({*vports, *(m for m in b.members if m not in BUNDLE_RESERVED_MEMBERS), _SCRATCH_IN})
    sw = Switch(ports, 1, drop_malformed=False)
    for p in ports:
        if p != _SCRATCH_IN and not (p in vports and live(p)):
            sw.pipeline.set_port_live(p, False)
    chosen = Subfield("reg0", 0, 16)
    probe = (Bundle(b.fields, b.basis, b.algorithm, b.members, chosen), MoveField(chosen, Subfield("eth_dst", 0, 16)),
             Output(OFPP_IN_PORT))
    sw.add_rule(Rule(Match(), (ApplyActions((*mods, *probe)),)))
    out = [f for p, f in sw.process(_SCRATCH_IN, bytes(frame)) if p == _SCRATCH_IN]
    number = int.from_bytes(out[0][4:6], "big") if out else 0xFFFF
    if number == 0xFFFF:
        return None
    return number | 0xFFFF0000 if number >= 0xFF00 else number  # (OpenFlow 1.0's reserved numbers)


def check_bit(frame: bytes, mods: Sequence[Action], a: CheckPktLarger) -> list[Action]:
    """``check_pkt_larger`` in a PACKET_OUT as a load of the bit it writes: Open vSwitch
    forks the rest of the list on the frame's length as changed so far, and a
    PACKET_OUT has no action set to run again after it, so the rest runs once, with the
    bit. dp-core, whose check is Open vSwitch's (the datapath's length), writes it into
    eth_dst's bit 0 of a scratch copy, which is read back."""
    from tandem.dataplane.switch import Switch

    sw = Switch([1, _SCRATCH_IN], 1, drop_malformed=False)
    probe = (SetField("eth_dst", 0), CheckPktLarger(a.pkt_len, Subfield("eth_dst", 0, 1)), Output(1))
    sw.add_rule(Rule(Match(), (ApplyActions((*mods, *probe)),)))
    out = [f for p, f in sw.process(_SCRATCH_IN, bytes(frame)) if p == 1]
    return load_bits(a.dst, out[0][5] & 1 if out else 0)


def bundle_as_chosen(frame: bytes, mods: Sequence[Action], b: Bundle, vports: Sequence[int], live) -> list[Action]:
    """The actions ``b`` is for this frame: an output to the chosen member (none: no member
    is live), or for ``bundle_load`` a load of its number (0xffff if none)."""
    chosen = bundle_choice(frame, mods, b, vports, live)
    if b.dst is None:
        return [] if chosen is None else [Output(chosen)]
    return load_bits(b.dst, 0xFFFF if chosen is None else chosen & 0xFFFF)  # (OpenFlow 1.0's numbers)
