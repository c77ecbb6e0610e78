"""``packet_out_oracle --output-regs``: PACKET_OUTs whose ``output_reg`` reads a field other
than a register, or a register holding CONTROLLER's number (oneswitch/endpoint_output_reg.py).

Each PACKET_OUT gets one or two ``output_reg``s at the end of its top list: from
``in_port`` (NXM's 16 bits or OXM's 32), ``metadata``, ``tunnel_id``, ``pkt_mark``,
``xxreg0``, ``eth_src`` or ``eth_dst`` (most after a write of a port number into the bits
read: a port, one there is not, IN_PORT, FLOOD, ALL, CONTROLLER, LOCAL, or above 0xffff),
``vlan_vid``, ``eth_type`` and, where the frame has them, ``ip_proto``, the IPv4 addresses
and the TCP/UDP ports as they are. At the end, so no written packet-in follows one (the
endpoint refuses a packet-in after an ``output_reg``). State: none. Cost: generation only.
"""

from __future__ import annotations

import random
from typing import Sequence

from tandem.rules.ir import Action, OutputReg, SetField, Subfield
from tandem.rules.packets import extract_fields

# the numbers written: ports, none there is, IN_PORT, FLOOD, ALL, CONTROLLER, LOCAL, above 0xffff
_NUMBERS = (1, 2, 3, 4, 9, 0xFFF8, 0xFFFB, 0xFFFC, 0xFFFD, 0xFFFD, 0xFFFE, 0x1FFFD)
# (field, bit offset read, bits of the field): the written ones
_WRITTEN = (("metadata", 8, 64), ("tunnel_id", 0, 64), ("pkt_mark", 4, 32), ("xxreg0", 40, 128), ("eth_src", 0, 48),
            ("eth_dst", 16, 48))
_AS_THEY_ARE = ("vlan_vid", "eth_type", "ip_proto", "ipv4_src", "ipv4_dst", "tcp_src", "tcp_dst", "udp_src", "udp_dst")


def _one(rng: random.Random, frame: bytes) -> list[Action]:
    x = rng.random()
    if x < 0.15:  # (the PACKET_OUT's own in_port: CONTROLLER's and LOCAL's numbers too)
        return [OutputReg(Subfield("in_port", 0, rng.choice((16, 32))))]
    if x < 0.3:
        have = extract_fields(frame)
        field = rng.choice([f for f in _AS_THEY_ARE if f in have])
        bits = {"vlan_vid": 12, "eth_type": 16, "ip_proto": 8}.get(field, 16)
        return [OutputReg(Subfield(field, 0, min(bits, 16)))]
    field, ofs, width = rng.choice(_WRITTEN)
    value = rng.choice(_NUMBERS)
    n = 17 if value > 0xFFFF else rng.choice((16, 17))
    keep = rng.getrandbits(width) & ~(((1 << n) - 1) << ofs)  # (the bits not read: random)
    if field in ("eth_src", "eth_dst"):
        keep &= ~(1 << 40)  # (no multicast source)
    if field == "xxreg0":  # (bits 40.. of xxreg0 are reg2's 8..: xxreg0 is reg0..reg3, reg0 the top)
        return [SetField("reg2", (keep | value << ofs) >> 32 & 0xFFFF_FFFF), OutputReg(Subfield(field, ofs, n))]
    return [SetField(field, keep | value << ofs), OutputReg(Subfield(field, ofs, n))]


def with_field_output_regs(rng: random.Random, acts: Sequence[Action], frame: bytes) -> tuple[Action, ...]:
    """``acts`` with one or two ``output_reg``s (module doc) at the end."""
    out = list(acts)
    for _ in range(rng.randint(1, 2)):
        out += _one(rng, frame)
    return tuple(out)


def field_output_regs(acts: Sequence[Action]) -> int:
    """How many ``output_reg``s of ``acts`` (top list) read a field other than a register."""
    return sum(type(a) is OutputReg and not a.src.field.startswith("reg") for a in acts)


__all__ = ["field_output_regs", "with_field_output_regs"]
