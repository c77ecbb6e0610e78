"""A controller's NXT_TLV_TABLE_MOD and NXT_TLV_TABLE_REQUEST (``ovs-ofctl
add-tlv-map`` / ``del-tlv-map`` / ``dump-tlv-map``): the endpoint keeps the
virtual switch's one map (``ep.tlv_map``, index -> ``TlvMap``), answers a
request from it, refuses a table mod with Open vSwitch's errors
(``ofwire_tlv.apply_tlv_mod``) and relays an accepted one to every physical
switch (``Backend.tlv_table_mod``) before it takes it, so each switch maps
``tun_metadataN`` as the virtual switch does. A slave connection may not change
it (as Open vSwitch: ``BAD_REQUEST/IS_SLAVE``).
"""

from __future__ import annotations

import struct

from tandem.backends.base import BackendError
from tandem.rules import ofwire as W
from tandem.rules import ofwire_tlv as T
from tandem.rules.ofwire_packet_in2 import NX_VENDOR_ID

from .endpoint_common import ROLE_SLAVE


def is_tlv_message(body: bytes) -> bool:
    """Whether an OFPT_EXPERIMENTER body is a Nicira TLV table message."""
    return len(body) >= 8 and struct.unpack_from("!II", body, 0) in {(NX_VENDOR_ID, s) for s in T.TLV_SUBTYPES}


async def on_tlv_message(session, m) -> None:
    ep = session.ep
    (subtype,) = struct.unpack_from("!I", m.body, 4)
    if subtype == T.NXT_TLV_TABLE_REQUEST:
        session.send(T.encode_tlv_table_reply(m.xid, ep.tlv_map))
        return
    if session.role == ROLE_SLAVE:
        raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_IS_SLAVE, "this connection is a slave")
    command, maps = T.decode_tlv_table_mod(m.body)
    new = T.apply_tlv_mod(ep.tlv_map, command, maps)
    try:
        await ep.backend.tlv_table_mod(command, maps)
    except BackendError as e:
        etype, code = e.of_error or (W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM)
        raise W.OFError(etype, code, f"NXT_TLV_TABLE_MOD: a physical switch refused it: {e}") from None
    ep.tlv_map = new
    W._INSTRUCTIONS_SEEN.clear()  # (decoded under the old map: a tun_metadata value is cut by its length)


__all__ = ["is_tlv_message", "on_tlv_message"]
