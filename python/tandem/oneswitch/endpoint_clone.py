"""``clone(actions)`` in a PACKET_OUT (docs/endpoint.md).

The endpoint carries a PACKET_OUT out by walking its actions (``OneSwitchEndpoint.
packet_out``): each output becomes a physical PACKET_OUT of the changes before it,
on the output's own switch. A clone's nested actions run on a copy, so the walk
goes into the clone with a copy of the changes made so far, and after it goes on
with the changes as they were; an ``exit`` (also inside a clone) ends the whole
walk, as Open vSwitch 3.1 ends the whole translation there.

``check_packet_out_clone`` refuses inside such a clone what the walk does not run
as Open vSwitch does, with one error each (``clone_translate.check_clone`` with
``packet_out``): what OneSwitch does not translate inside a flow's clone either
(NORMAL, conjunctions, pushes of in_port), what a flow's clone translates but the
walk does not run (lookups, ``ct``, ``ct_clear``, ``output_reg``, ``learn``), a move
reading in_port (a flow's copies pin it; the physical PACKET_OUT runs from CONTROLLER); the
rest is checked as the PACKET_OUT's own list is (``output(port=P,max_len=N)``: endpoint_trunc.py). Pure but for the endpoint's check.
"""

from __future__ import annotations

from tandem.rules import ofwire as W
from tandem.rules.ir import OFPP_CONTROLLER, Clone, Controller, Output

from .clone_translate import check_clone, clone_reads_in_port
from .ids import TranslationError


def check_packet_out_clone(ep, a: Clone) -> None:
    """Raise ``OFError`` for what a PACKET_OUT's clone holds that the walk does not run."""
    try:
        check_clone(a, "clone in a PACKET_OUT", packet_out=True)
    except TranslationError as e:
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT, str(e)) from None
    if clone_reads_in_port(a):  # (a flow's copies pin it; the physical PACKET_OUT's in_port is CONTROLLER)
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT, "a move reading in_port inside clone in a "
                        "PACKET_OUT is not carried out by OneSwitch: the physical PACKET_OUT's in_port is CONTROLLER")
    ep.check_actions(a.actions, packet_out=True)  # (nested clones come back here)


def sends_packet_in(actions) -> bool:
    """Whether a PACKET_OUT clone's list (nested clones included) sends a packet-in: the
    endpoint sends those itself with the frame as the controller sent it, so a change
    made before the clone would be missing from it."""
    return any(type(b) is Controller or isinstance(b, Output) and b.port == OFPP_CONTROLLER
               or type(b) is Clone and sends_packet_in(b.actions) for b in actions)
