"""The ``nat`` of Open vSwitch's ``ct`` (``ir.CtNat``) in ovs-ofctl text and on the
wire (NXAST_NAT, the first action nested in NXAST_CT), as Open vSwitch 3.1 writes
them (``lib/ofp-actions.c``):

    nat | nat(src|dst[=ADDR[-ADDR][:PORT[-PORT]]][,persistent][,hash|random])

with IPv6 addresses in brackets. ``struct nx_action_nat``: 16 bytes (flags:
src 1, dst 2, persistent 4, hash 8, random 16; range_present: IPv4 min 1, max 2,
IPv6 min 4, max 8, port min 16, max 32), then the present range parts in that
order, padded to 8 bytes. Run by dp-core's tracker (``crates/dp-core/src/ct_nat.rs``)
and, on the OVS backend, by the host's. Pure.
"""

from __future__ import annotations

import ipaddress
import struct

from .ir import ApplyActions, Ct, CtNat, Rule, RuleError, WriteActions

NXAST_NAT = 36
_SRC, _DST, _PERSISTENT, _HASH, _RANDOM = 1, 2, 4, 8, 16
_V4_MIN, _V4_MAX, _V6_MIN, _V6_MAX, _P_MIN, _P_MAX = 1, 2, 4, 8, 16, 32
_NX_VENDOR_ID, _OFPAT_EXPERIMENTER = 0x0000_2320, 0xFFFF


def parse_nat(text: str) -> CtNat:
    """``nat`` or ``nat(...)`` -> CtNat; RuleError (one line) on bad text."""
    if text == "nat":
        return CtNat()
    if not (text.startswith("nat(") and text.endswith(")")):
        raise RuleError(f"{text!r}: expected nat or nat(src|dst[=RANGE],...)")
    args = [a.strip() for a in text[4:-1].split(",")] if text[4:-1].strip() else []
    kw: dict = {}
    for i, a in enumerate(args):
        key, eq, val = a.partition("=")
        if key in ("src", "dst") and i == 0:
            kw["kind"] = key
            if eq:
                kw.update(_parse_range(val))
        elif a in ("persistent", "hash", "random") and not eq:
            kw[a] = True
        else:
            raise RuleError(f"nat: unknown argument {a!r} (src, dst, src=RANGE, persistent, hash, random)")
    return CtNat(**kw)


def _parse_range(text: str) -> dict:
    out: dict = {}
    if text.startswith("["):  # [v6][-[v6]][:port[-port]]
        end = text.index("]") if "]" in text else -1
        lo, rest = text[1:end], text[end + 1:]
        hi = None
        if rest.startswith("-["):
            end2 = rest.find("]")
            if end2 < 0:
                raise RuleError(f"nat: {text!r}: unclosed [")
            hi, rest = rest[2:end2], rest[end2 + 1:]
        ports = rest[1:] if rest.startswith(":") else None
        if rest and ports is None:
            raise RuleError(f"nat: {text!r}: expected :PORT after the addresses")
        out["v6"] = True
    elif text.count(":") > 1:  # a bare IPv6 range, no ports
        lo, _, hi = text.partition("-")
        hi, ports = hi or None, None
        out["v6"] = True
    else:
        addrs, _, ports = text.partition(":")
        lo, _, hi = addrs.partition("-")
        hi, ports = hi or None, ports or None
    try:
        cls = ipaddress.IPv6Address if out.get("v6") else ipaddress.IPv4Address
        out["addr_min"] = int(cls(lo))
        if hi is not None:
            out["addr_max"] = int(cls(hi))
    except ValueError as e:
        raise RuleError(f"nat: {text!r}: {e}") from None
    if ports is not None:
        p_lo, _, p_hi = ports.partition("-")
        try:
            out["port_min"] = int(p_lo)
            if p_hi:
                out["port_max"] = int(p_hi)
        except ValueError:
            raise RuleError(f"nat: {text!r}: bad port range {ports!r}") from None
    return out


def format_nat(n: CtNat) -> str:
    if n.kind is None:
        return "nat"
    s = n.kind
    if n.addr_min is not None:
        if n.v6:
            s += f"=[{ipaddress.IPv6Address(n.addr_min)}]"
            if n.addr_max is not None:
                s += f"-[{ipaddress.IPv6Address(n.addr_max)}]"
        else:
            s += f"={ipaddress.IPv4Address(n.addr_min)}"
            if n.addr_max is not None:
                s += f"-{ipaddress.IPv4Address(n.addr_max)}"
        if n.port_min is not None:
            s += f":{n.port_min}" + (f"-{n.port_max}" if n.port_max is not None else "")
    for flag in ("persistent", "hash", "random"):
        if getattr(n, flag):
            s += f",{flag}"
    return f"nat({s})"


def encode_nat(n: CtNat) -> bytes:
    flags = {None: 0, "src": _SRC, "dst": _DST}[n.kind] | (_PERSISTENT if n.persistent else 0) \
        | (_HASH if n.hash else 0) | (_RANDOM if n.random else 0)
    present, tail = 0, b""
    width = 16 if n.v6 else 4
    if n.addr_min is not None:
        present |= _V6_MIN if n.v6 else _V4_MIN
        tail += n.addr_min.to_bytes(width, "big")
    if n.addr_max is not None:
        present |= _V6_MAX if n.v6 else _V4_MAX
        tail += n.addr_max.to_bytes(width, "big")
    if n.port_min is not None:
        present |= _P_MIN
        tail += struct.pack("!H", n.port_min)
    if n.port_max is not None:
        present |= _P_MAX
        tail += struct.pack("!H", n.port_max)
    raw = struct.pack("!HHIH2xHH", _OFPAT_EXPERIMENTER, 0, _NX_VENDOR_ID, NXAST_NAT, flags, present) + tail
    raw += b"\0" * (-len(raw) % 8)
    return raw[:2] + struct.pack("!H", len(raw)) + raw[4:]


def decode_nat(a: bytes) -> CtNat:
    """One whole NXAST_NAT action -> CtNat; RuleError on a bad one."""
    if len(a) < 16:
        raise RuleError(f"nat of {len(a)} bytes, expected at least 16")
    flags, present = struct.unpack_from("!HH", a, 12)
    if flags & ~(_SRC | _DST | _PERSISTENT | _HASH | _RANDOM) or present & ~0x3F:
        raise RuleError(f"nat: unknown flags {flags:#x} or range bits {present:#x}")
    if (flags & _SRC) and (flags & _DST):
        raise RuleError("nat: both src and dst")
    if (present & (_V4_MIN | _V4_MAX)) and (present & (_V6_MIN | _V6_MAX)):
        raise RuleError("nat: both an IPv4 and an IPv6 range")
    off, kw = 16, {}
    for bit, name, width in ((_V4_MIN, "addr_min", 4), (_V4_MAX, "addr_max", 4), (_V6_MIN, "addr_min", 16),
                             (_V6_MAX, "addr_max", 16), (_P_MIN, "port_min", 2), (_P_MAX, "port_max", 2)):
        if present & bit:
            if off + width > len(a):
                raise RuleError("nat: range cut short")
            kw[name] = int.from_bytes(a[off:off + width], "big")
            off += width
    kind = "src" if flags & _SRC else "dst" if flags & _DST else None
    return CtNat(kind, v6=bool(present & (_V6_MIN | _V6_MAX)), persistent=bool(flags & _PERSISTENT),
                 hash=bool(flags & _HASH), random=bool(flags & _RANDOM), **kw)


def nat_match_problem(rule: Rule) -> str | None:
    """Why Open vSwitch would refuse a ``nat`` in ``rule`` (OFPBAC_MATCH_INCONSISTENT): the
    packet is not known to be IP there, or an IPv4 / IPv6 range meets the other version;
    likewise an ``alg`` where the packet is not known to be TCP (ftp) / UDP (tftp);
    None when there is no ``nat`` / ``alg`` or no problem."""
    if not any(type(a) is Ct and (a.nat is not None or a.alg is not None) for i in rule.instructions
               if type(i) in (ApplyActions, WriteActions) for a in i.actions):
        return None
    from .prereq import FlowState

    state = FlowState.of(rule.match)
    for ins in rule.instructions:
        if type(ins) in (ApplyActions, WriteActions):
            for a in ins.actions:
                if type(a) is Ct and (a.nat is not None or a.alg is not None):
                    why = state.problem(a, type(ins) is WriteActions)
                    if why:
                        return why
                state.apply(a)
    return None
