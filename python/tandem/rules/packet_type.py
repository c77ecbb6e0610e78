"""OpenFlow 1.5's ``packet_type`` (namespace << 16 | type), which Open vSwitch 3.1 also
takes in an OpenFlow 1.3 match (OXM_OF_PACKET_TYPE; text ``packet_type=(NS,TYPE)``).

Every OneSwitch port is an Ethernet port, so every packet's type is Ethernet, (0,0):
OVS puts that type on every flow of a bridge that is not packet-type aware and drops it
from the match it prints and sends, so ``packet_type=(0,0)`` is the match without it.
Another type would meet only packets of packet-type-aware ports (L3 tunnels) and changes
what the other fields mean (``packet_type=(1,0x800)`` implies the IPv4 ethertype), so
it is refused (``UNSUPPORTED``). Pure."""

from __future__ import annotations

PACKET_TYPE_ETHERNET = 0
# The OXM basic field number of OXM_OF_PACKET_TYPE (4 bytes, not maskable).
OXM_PACKET_TYPE = 44


def unsupported(value: int) -> str:
    """Why a packet_type other than Ethernet is refused."""
    return (f"packet_type=({value >> 16},{value & 0xFFFF:#x}): OneSwitch ports are Ethernet ports, every packet's "
            "type is (0,0); another type meets only packets of packet-type-aware ports (L3 tunnels), which it has none of")


def parse_packet_type(text: str) -> int:
    """``(NS,TYPE)`` (decimal or 0x-hex each) -> NS << 16 | TYPE; ValueError with the reason."""
    from .fields import parse_int

    t = text.strip()
    if not (t.startswith("(") and t.endswith(")")) or t.count(",") != 1:
        raise ValueError(f"{text!r} is not a packet type (expected (NS,TYPE), e.g. (0,0))")
    ns, typ = (parse_int(p, 16) for p in t[1:-1].split(","))
    return ns << 16 | typ
