"""OpenFlow properties (Open vSwitch's ``ofpprop``): a 16-bit type, a 16-bit length
that counts the 4-byte header and the payload, and padding to 8 bytes. Pure."""

from __future__ import annotations

import struct
from typing import Iterator


def prop(ptype: int, payload: bytes) -> bytes:
    raw = struct.pack("!HH", ptype, 4 + len(payload)) + payload
    return raw + b"\0" * (-len(raw) % 8)


def props(body: bytes, off: int, what: str) -> Iterator[tuple[int, bytes]]:
    """(type, payload) of each property from ``body[off:]``; ValueError on a bad length."""
    while off < len(body):
        if len(body) - off < 4:
            raise ValueError(f"{what}: property header cut short")
        ptype, plen = struct.unpack_from("!HH", body, off)
        if plen < 4 or off + plen > len(body):
            raise ValueError(f"{what}: property {ptype} of length {plen}")
        yield ptype, bytes(body[off + 4:off + plen])
        off += plen + (-plen % 8)


__all__ = ["prop", "props"]
