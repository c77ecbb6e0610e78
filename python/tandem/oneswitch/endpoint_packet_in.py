"""Packet-ins of a PACKET_OUT after actions that change the packet or its metadata
(docs/endpoint.md, PACKET_OUT).

The endpoint sends a PACKET_OUT's packet-ins itself (no physical switch sends one it
could map back to the PACKET_OUT's virtual ``in_port``). Open vSwitch 3.1 sends, for an
output to CONTROLLER or a ``controller(…)`` after changes, the frame with every change
made so far committed to it, and in the packet-in's match the flow's pipeline state
(``flow_get_metadata``: tunnel_id and the tunnel fields, metadata, registers,
pkt_mark, each when not 0), with the PACKET_OUT's own ``in_port``, table 0 and no
cookie. dp-core's packet-in is Open vSwitch's (frame and state), so the endpoint runs
the changes made so far on the frame in a scratch switch, from the PACKET_OUT's
``in_port``, ending in an output to CONTROLLER, and takes that packet-in's frame and
state. Pure but for dp-core's scratch switch.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tandem.rules import ir
from tandem.rules.ir import OFPP_CONTROLLER, Action, ApplyActions, FieldMatch, Match, Output, Rule

_SCRATCH_OUT = 0xFEF1  # a port of the scratch switch that no action names
# the order of Open vSwitch's packet-in match (nx_put_raw: tunnel, registers, mark, metadata last)
_ORDER = {k: i for i, k in enumerate(["tunnel_id", "tun_flags", "tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst",
                                      "tun_gbp_id", "tun_gbp_flags", *(f"reg{i}" for i in range(16)), "pkt_mark",
                                      "metadata"])}


# the changes after which a PACKET_OUT's packet-in is measured to be dp-core's (and actions that
# change nothing the packet-in shows: outputs, groups and clones run on copies)
MODELED = (ir.PushVlan, ir.PopVlan, ir.SetField, ir.MoveField, ir.StackPush, ir.StackPop, ir.Note, ir.DecTtl,
           ir.SetNwTtl, ir.Multipath, ir.PushMpls, ir.PopMpls, ir.SetMplsTtl, ir.DecMplsTtl,
           ir.SetQueue, ir.Output, ir.Controller, ir.GroupAction, ir.Clone, ir.Exit,
           ir.CtClear)  # (measured: a PACKET_OUT's frame has no tracker state for ct_clear to clear)


def unmodeled_before_packet_in(a: Action) -> bool:
    """Whether ``a``, before a packet-in in a PACKET_OUT, makes a change the endpoint's
    packet-in is not measured for (``ct``, ``learn``, ``encap``, ``bundle``, …): refused. Also
    ``check_pkt_larger``: Open vSwitch runs a packet-in after it from datapath actions whose
    check_pkt_len branch is still open, and its packet-in and later outputs differ from one
    bridge run to the next model (measured: ``check_pkt_larger(42)->reg1[0]``, a move of reg1
    into eth_src, ``clone(controller)``: the frames out carry a bit no action set). And a
    write to ``tun_metadata``, not measured (the tunnel addresses, flags and GBP fields are,
    in all three packet-in formats)."""
    if not isinstance(a, MODELED):
        return True
    dst = a.field if type(a) is ir.SetField else getattr(getattr(a, "dst", None), "field", None)
    return not isinstance(dst, (str, type(None))) or isinstance(dst, str) and dst.startswith("tun_metadata")


def changed_packet_in(frame: bytes, mods: Sequence[Action], in_vport: int, vports: Iterable[int]) -> tuple[bytes, Match]:
    """The frame and match of the packet-in Open vSwitch sends after ``mods`` in a
    PACKET_OUT from ``in_vport``: the frame as changed, the state the changes wrote."""
    from tandem.dataplane.switch import Switch

    if not mods:
        return frame, Match.of(in_port=in_vport)
    sw = Switch(sorted({*vports, in_vport, _SCRATCH_OUT}), 1, drop_malformed=False)
    sw.add_rule(Rule(Match(), (ApplyActions((*mods, Output(OFPP_CONTROLLER))),)))
    copies = sw.process(in_vport, bytes(frame)).controller
    if not copies:  # (dp-core sends none only for a frame it cannot run: as it came)
        return frame, Match.of(in_port=in_vport)
    pin = copies[-1]
    state = sorted(((k, v) for k, v in pin.meta if v), key=lambda kv: _ORDER.get(kv[0], len(_ORDER)))
    return pin.frame, Match((("in_port", FieldMatch(in_vport)), *((k, state_match(k, v)) for k, v in state)))


def state_match(field: str, value: int) -> FieldMatch:
    """One state field of the packet-in's match: tun_flags with its one public flag's mask and
    ct_state with its 8 bits', as Open vSwitch's ``flow_get_metadata`` sets them (measured:
    NXM_NX_TUN_FLAGS_W 0x0001/0x0001, NXM_NX_CT_STATE_W 0x21/0xff)."""
    mask = _STATE_MASKS.get(field)
    return FieldMatch(value) if mask is None else FieldMatch(value, mask)


_STATE_MASKS = {"tun_flags": 0x1, "ct_state": 0xFF}  # (FLOW_TNL_PUB_F_MASK: the oam flag; ct_state's uint8 mask)


__all__ = ["MODELED", "changed_packet_in", "state_match", "unmodeled_before_packet_in"]
