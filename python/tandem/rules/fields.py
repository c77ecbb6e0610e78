"""Text <-> integer conversions for header field values (MAC, IPv4, IPv6, ints).

Pure helpers shared by the ovs-ofctl parser/printer, the packet builder and the
generator. The rule IR stores every value as a plain int; these functions are
the only place that knows the textual forms. Parsing raises ``ValueError`` with
a short reason; callers add the location.
"""

from __future__ import annotations

import ipaddress

MAC_BITS, IPV4_BITS, IPV6_BITS = 48, 32, 128


def mac_to_int(text: str) -> int:
    parts = text.split(":")
    if len(parts) != 6 or not all(1 <= len(p) <= 2 for p in parts):
        raise ValueError(f"{text!r} is not a MAC address (expected xx:xx:xx:xx:xx:xx)")
    if not all(c in "0123456789abcdefABCDEF" for p in parts for c in p):  # int() would take '-2', ' 2', '_'
        raise ValueError(f"{text!r} is not a MAC address (non-hex digit)")
    try:
        return int("".join(p.rjust(2, "0") for p in parts), 16)
    except ValueError:
        raise ValueError(f"{text!r} is not a MAC address (non-hex digit)") from None


def int_to_mac(value: int) -> str:
    if not 0 <= value < 1 << 48:
        raise ValueError(f"{value:#x} does not fit a MAC address")
    return ":".join(f"{(value >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def ipv4_to_int(text: str) -> int:
    try:
        return int(ipaddress.IPv4Address(text))
    except (ipaddress.AddressValueError, ValueError):
        raise ValueError(f"{text!r} is not an IPv4 address") from None


def int_to_ipv4(value: int) -> str:
    return str(ipaddress.IPv4Address(value))


def ipv6_to_int(text: str) -> int:
    try:
        return int(ipaddress.IPv6Address(text))
    except (ipaddress.AddressValueError, ValueError):
        raise ValueError(f"{text!r} is not an IPv6 address") from None


def int_to_ipv6(value: int) -> str:
    return str(ipaddress.IPv6Address(value))


def parse_int(text: str, bits: int | None = None) -> int:
    """Decimal or 0x-hex, non-negative, optionally checked against a width."""
    t = text.strip()
    if "_" in t or not t.isascii():  # int() reads 1_000 and full-width digits; ovs-ofctl does not
        raise ValueError(f"{text!r} is not an integer (decimal or 0x-hex)")
    try:
        v = int(t, 16) if t.lower().startswith("0x") else int(t, 10)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer (decimal or 0x-hex)") from None
    if v < 0:
        raise ValueError(f"{text!r} is negative")
    if bits is not None and v >> bits:
        raise ValueError(f"{text!r} does not fit in {bits} bits")
    return v


def prefix_mask(prefix: int, bits: int) -> int:
    if not 0 <= prefix <= bits:
        raise ValueError(f"prefix length /{prefix} outside 0..{bits}")
    return ((1 << bits) - 1) ^ ((1 << (bits - prefix)) - 1)


def mask_prefix_len(mask: int, bits: int) -> int | None:
    """The prefix length if ``mask`` is a contiguous high-bit mask, else None."""
    host = ~mask & full_mask(bits)
    if host & (host + 1):
        return None
    return bits - host.bit_length()


def full_mask(bits: int) -> int:
    return (1 << bits) - 1
