"""A packet-in's match on the wire in Open vSwitch's order.

Open vSwitch writes a packet-in's pipeline state (``flow_get_metadata``) with
``nx_put_raw``, not in OXM field-number order (``ofwire.encode_oxms``): in_port, eth_type, then
tunnel_id and the other tunnel fields, the registers, pkt_mark, the connection-tracking
fields, and metadata last (measured: tunnel_id before metadata, tun_src before the
registers; ``tests/endpoint/test_packet_out_changed_packet_in_vs_ovs.py``). Used by the
OpenFlow 1.3 packet-in and NXT_PACKET_IN2 encoders. Pure.
"""

from __future__ import annotations

import struct

from .ir import Match
from .ofwire import encode_match

_OXM, _NXM1 = 0x8000, 0x0001
_RANK = {(_OXM, 0): 0, (_OXM, 38): 1, (_NXM1, 104): 2, (_NXM1, 31): 3, (_NXM1, 32): 4, (_NXM1, 109): 5,
         (_NXM1, 110): 6, (_NXM1, 38): 7, (_NXM1, 39): 8, **{(_NXM1, n): 9 for n in range(40, 104)},
         **{(_NXM1, i): 10 + i for i in range(16)}, (_NXM1, 33): 30, **{(_NXM1, n): 31 for n in range(105, 109)},
         (_OXM, 2): 40,
         # eth_type just after in_port; the original direction's tuple after ct_label: addresses,
         # protocol, ports (measured: tests/endpoint/test_packet_in_ct_vs_ovs.py)
         (_OXM, 5): 0.5, (_NXM1, 120): 32, (_NXM1, 121): 32.1, (_NXM1, 122): 32.2, (_NXM1, 123): 32.3,
         (_NXM1, 119): 32.4, (_NXM1, 124): 32.5, (_NXM1, 125): 32.6}
_OTHER = 35  # (a field not named above: after pkt_mark, before metadata)


def ovs_order(oxms: bytes) -> bytes:
    """The OXM/NXM TLVs ``oxms`` in Open vSwitch's packet-in order (stable otherwise)."""
    tlvs, off = [], 0
    while off + 4 <= len(oxms):
        (h,) = struct.unpack_from("!I", oxms, off)
        n = 4 + (h & 0xFF)
        tlvs.append(((h >> 16, (h >> 9) & 0x7F), oxms[off:off + n]))
        off += n
    ranked = sorted(range(len(tlvs)), key=lambda i: _RANK.get(tlvs[i][0], _OTHER))
    return b"".join(tlvs[i][1] for i in ranked) + oxms[off:]


def encode_packet_in_match(match: Match) -> bytes:
    """``ofwire.encode_match`` with the TLVs in Open vSwitch's packet-in order."""
    m = encode_match(match)
    (mlen,) = struct.unpack_from("!H", m, 2)
    return m[:4] + ovs_order(m[4:mlen]) + m[mlen:]


__all__ = ["encode_packet_in_match", "ovs_order"]
