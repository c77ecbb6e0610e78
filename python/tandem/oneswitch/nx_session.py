"""A controller connection's Nicira experimenter messages: NXT_SET_PACKET_IN_FORMAT
(OpenFlow's PACKET_IN, Nicira's old NXT_PACKET_IN or NXT_PACKET_IN2) and
NXT_SET_CONTROLLER_ID, answered as Open vSwitch 3.1 answers them (NXT_RESUME:
endpoint_pause.py). Also which packet-in reasons a connection takes.
"""

from __future__ import annotations

import struct

from tandem.rules import ofwire as W
from tandem.rules import ofwire_packet_in2 as P

ROLE_SLAVE = 3


def on_nicira_message(session, m) -> None:
    """One OFPT_EXPERIMENTER message from a controller (``m.body`` after the header)."""
    if len(m.body) < 8:
        raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN, f"experimenter message of {len(m.body)} bytes")
    vendor, subtype = struct.unpack_from("!II", m.body, 0)
    if vendor != P.NX_VENDOR_ID:
        raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_EXPERIMENTER, f"experimenter {vendor:#x} is not supported")
    if subtype == P.NXT_SET_PACKET_IN_FORMAT:
        fmt = P.decode_set_packet_in_format(m.body)
        if fmt not in (P.NXPIF_STANDARD, P.NXPIF_NXT_PACKET_IN, P.NXPIF_NXT_PACKET_IN2):  # (as Open vSwitch answers)
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM, f"packet-in format {fmt} does not exist")
        session.packet_in_format = fmt
        return
    if subtype == P.NXT_SET_CONTROLLER_ID:
        session.controller_id = P.decode_set_controller_id(m.body)
        return
    raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_EXPERIMENTER, f"Nicira message {subtype} is not supported")


def packet_in_wanted(session, reason: int) -> bool:
    """Open vSwitch's reasons 3..5 (action_set, group, packet_out) are OpenFlow 1.4's:
    an OpenFlow 1.3 connection's async config holds bits 0..2 only, and Open vSwitch
    takes them as ``action`` (bit 1)."""
    return session.wants(0, 1 if reason >= 3 else reason)


__all__ = ["on_nicira_message", "packet_in_wanted"]
