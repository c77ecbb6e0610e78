"""Build real Ethernet frames from IR-style field values, and random frames
biased to hit given matches. Pure Python (struct only), deterministic.

``build_frame(**fields)`` -> bytes: Ethernet II, 0-2 VLAN tags, then IPv4 /
IPv6 / ARP / MPLS(+IPv4) and TCP / UDP / SCTP / ICMP / ICMPv6 (IPv6 neighbour
solicitations/advertisements with target and link-layer option) with correct checksums,
padded to 60 bytes (no FCS). Field names are the IR's OXM names plus a few
header fields the IR does not match on (``ip_ttl``, ``arp_sha`` ...).

``extract_fields(frame)`` parses a frame back into IR field values and
``frame_matches(match, frame, in_port, metadata)`` evaluates an IR match on it
(POF fields included), so tests can check which rule a packet should hit.

``random_frame(rng, hints)`` / ``random_packet(rng, hints, ports)`` draw
frames: with probability ``hit`` the frame satisfies one hinted match (masked
bits random), otherwise fields come from the generator's value pools so that
near misses are common too.
"""

from __future__ import annotations

import random
import struct
from typing import Sequence

from .actset_output import OFPP_UNSET as ACTSET_UNSET
from .ir import (
    ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC, ETH_TYPE_QINQ, ETH_TYPE_VLAN,
    FIELDS, IP_PROTO_ICMP, IP_PROTO_ICMPV6, IP_PROTO_TCP, IP_PROTO_UDP, OFPVID_PRESENT, Match, PofField, Rule,
    IP_PROTO_SCTP, IP_FRAG_ANY, IP_FRAG_LATER,
)
from .ir import tci_match
from .nsh import ETH_TYPE_NSH, fields as nsh_fields, header as nsh_header

MIN_FRAME = 60
_VLAN_TPIDS = (ETH_TYPE_VLAN, ETH_TYPE_QINQ)


def checksum16(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def crc32c(data: bytes) -> bytes:
    """SCTP's CRC32c (Castagnoli), as the 4 bytes the checksum field holds."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return (~crc & 0xFFFFFFFF).to_bytes(4, "little")


def _l4(proto: int, f: dict, payload: bytes, pseudo: bytes) -> bytes:
    """Transport header + payload with its checksum (pseudo-header prefix given)."""
    if proto == IP_PROTO_TCP:
        hdr = struct.pack("!HHIIHHHH", f.get("tcp_src", 1234), f.get("tcp_dst", 80), f.get("tcp_seq", 1), 0,
                          (5 << 12) | f.get("tcp_flags", 0x02), 8192, 0, 0)
        seg = hdr + payload
        csum = checksum16(pseudo + struct.pack("!BBH", 0, proto, len(seg)) + seg)
        return seg[:16] + struct.pack("!H", csum) + seg[18:]
    if proto == IP_PROTO_UDP:
        seg = struct.pack("!HHHH", f.get("udp_src", 1234), f.get("udp_dst", 53), 8 + len(payload), 0) + payload
        csum = checksum16(pseudo + struct.pack("!BBH", 0, proto, len(seg)) + seg) or 0xFFFF
        return seg[:6] + struct.pack("!H", csum) + seg[8:]
    if proto == IP_PROTO_ICMP:
        msg = struct.pack("!BBHI", f.get("icmpv4_type", 8), f.get("icmpv4_code", 0), 0, 0x00010001) + payload
        return msg[:2] + struct.pack("!H", checksum16(msg)) + msg[4:]
    if proto == IP_PROTO_SCTP:
        seg = struct.pack("!HHI", f.get("sctp_src", 1234), f.get("sctp_dst", 80), f.get("sctp_vtag", 1)) + b"\0" * 4
        seg += payload
        return seg[:8] + crc32c(seg) + seg[12:]
    if proto == IP_PROTO_ICMPV6:
        itype, icode = f.get("icmpv6_type", 128), f.get("icmpv6_code", 0)
        if itype in (135, 136) and icode == 0:  # neighbour discovery: flags, target, link-layer option
            flags = 0x60000000 if itype == 136 else 0
            body = struct.pack("!I", flags) + f.get("ipv6_nd_target", (0x20010DB8 << 96) | 1).to_bytes(16, "big")
            for opt, key in ((1, "ipv6_nd_sll"), (2, "ipv6_nd_tll")):
                if key in f:
                    body += bytes((opt, 1)) + f[key].to_bytes(6, "big")
            payload = body[4:] + payload
            msg = struct.pack("!BBH", itype, icode, 0) + body[:4] + payload
        else:
            msg = struct.pack("!BBHI", itype, icode, 0, 0x00010001) + payload
        csum = checksum16(pseudo + struct.pack("!IxxxB", len(msg), proto) + msg)
        return msg[:2] + struct.pack("!H", csum) + msg[4:]
    return payload


def _ipv4(f: dict, payload: bytes) -> bytes:
    proto = f.get("ip_proto", IP_PROTO_UDP)
    src, dst = f.get("ipv4_src", 0x0A000001), f.get("ipv4_dst", 0x0A000002)
    body = _l4(proto, f, payload, struct.pack("!II", src, dst))
    tos = (f.get("ip_dscp", 0) << 2) | f.get("ip_ecn", 0)
    frag = f.get("ip_frag", 0)
    frag_field = 0x2000 if frag == IP_FRAG_ANY else (0x2000 | 0x00B9 if frag else 0)  # first: MF; later: MF + offset
    hdr = struct.pack("!BBHHHBBHII", 0x45, tos, 20 + len(body), f.get("ip_id", 0), frag_field, f.get("ip_ttl", 64),
                      proto, 0, src, dst)
    return hdr[:10] + struct.pack("!H", checksum16(hdr)) + hdr[12:] + body


def _ipv6(f: dict, payload: bytes) -> bytes:
    proto = f.get("ip_proto", IP_PROTO_UDP)
    src, dst = f.get("ipv6_src", (0x20010DB8 << 96) | 1), f.get("ipv6_dst", (0x20010DB8 << 96) | 2)
    s, d = src.to_bytes(16, "big"), dst.to_bytes(16, "big")
    # The pseudo-header's length/next-header part is added by _l4 (TCP/UDP use the v4 layout
    # of the same fields; for those the sum is identical since the checksum is over 16-bit words).
    body = _l4(proto, f, payload, s + d)
    tc = (f.get("ip_dscp", 0) << 2) | f.get("ip_ecn", 0)
    flabel = f.get("ipv6_flabel", 0)
    frag = f.get("ip_frag", 0)
    if frag:  # a fragment header (first: offset 0, more to come; later: offset 185)
        body = struct.pack("!BBHI", proto, 0, 1 if frag == IP_FRAG_ANY else (185 << 3) | 1, 0x1234) + body
        proto = 44
    return struct.pack("!IHBB", (6 << 28) | (tc << 20) | flabel, len(body), proto, f.get("ip_ttl", 64)) + s + d + body


def _arp(f: dict) -> bytes:
    return struct.pack("!HHBBH", 1, ETH_TYPE_IPV4, 6, 4, f.get("arp_op", 1)) + \
        f.get("arp_sha", f.get("eth_src", 0x020000000001)).to_bytes(6, "big") + \
        struct.pack("!I", f.get("arp_spa", 0x0A000001)) + f.get("arp_tha", 0).to_bytes(6, "big") + \
        struct.pack("!I", f.get("arp_tpa", 0x0A000002))


_TRANSPORTS = (IP_PROTO_TCP, IP_PROTO_UDP, IP_PROTO_SCTP, IP_PROTO_ICMP, IP_PROTO_ICMPV6)
# Pipeline state a packet arrives with as 0: never in its bytes.
_STATE = frozenset({"tunnel_id", "pkt_mark", "conj_id"} | {f for f in FIELDS if f.startswith("reg")})
_STATE = _STATE | {f for f in FIELDS if f.startswith("tun_")} | {"recirc_id"}  # (pipeline state too)
_STATE = _STATE | {"actset_output"}  # (OFPP_UNSET on arrival, not 0: frame_fields)
_ABSENT = frozenset(f for f in FIELDS if f.startswith("tun_metadata"))  # (absent on arrival, not 0: no match meets them)
_STATE = _STATE - _ABSENT
_KNOWN = set(FIELDS) | {"vlans", "ip_ttl", "ip_id", "tcp_seq", "tcp_flags", "icmpv6_type", "icmpv6_code", "arp_sha",
                        "arp_tha", "mpls_tc", "mpls_ttl", "payload", "min_size", "sctp_vtag"}


def _infer_eth_type(f: dict) -> int:
    if any(k.startswith("nsh_") for k in f):
        return ETH_TYPE_NSH
    if any(k.startswith(("ipv6", "icmpv6")) for k in f):
        return ETH_TYPE_IPV6
    if any(k.startswith("arp") for k in f):
        return ETH_TYPE_ARP
    if any(k.startswith("mpls_") for k in f):
        return ETH_TYPE_MPLS
    return ETH_TYPE_IPV4


def _infer_proto(f: dict) -> int:
    for prefix, proto in (("tcp", IP_PROTO_TCP), ("udp", IP_PROTO_UDP), ("icmpv4", IP_PROTO_ICMP),
                          ("icmpv6", IP_PROTO_ICMPV6), ("ipv6_nd", IP_PROTO_ICMPV6), ("sctp", IP_PROTO_SCTP)):
        if any(k.startswith(prefix) for k in f):
            return proto
    return IP_PROTO_UDP


def build_frame(**fields: object) -> bytes:
    """A valid Ethernet frame from IR-style values (ints; MACs/IPs as ints).

    VLAN tags: ``vlans=[(tpid, pcp, vid), ...]`` outermost first, or IR-style
    ``vlan_vid=0x1000|vid`` (+ ``vlan_pcp``) for one 0x8100 tag. ``eth_type``
    and ``ip_proto`` are inferred from the other fields when omitted (default
    IPv4/UDP). MPLS frames carry one label (bottom of stack) over IPv4."""
    unknown = set(fields) - _KNOWN
    if unknown:
        raise TypeError(f"build_frame: unknown field(s) {', '.join(sorted(unknown))}")
    f: dict = dict(fields)
    for k in _STATE:
        f.pop(k, None)  # pipeline state, not frame bytes
    for k in _ABSENT.intersection(f):
        f.pop(k)
    if "nw_ttl" in f:
        f["ip_ttl"] = f.pop("nw_ttl")
    if f.get("ip_frag"):
        f["ip_frag"] = IP_FRAG_ANY | (f["ip_frag"] & IP_FRAG_LATER)
    payload = bytes(f.pop("payload", b""))  # type: ignore[arg-type]
    min_size = int(f.pop("min_size", MIN_FRAME))  # type: ignore[arg-type]
    vlans = list(f.pop("vlans", []))  # type: ignore[call-overload]
    vid = f.pop("vlan_vid", None)
    pcp = f.pop("vlan_pcp", 0)
    if vid is not None and not vlans and vid & OFPVID_PRESENT:
        vlans = [(ETH_TYPE_VLAN, pcp, vid & 0xFFF)]
    eth_type = f.get("eth_type") or _infer_eth_type(f)
    if eth_type in (ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC) and "ip_proto" not in f:
        f["ip_proto"] = _infer_proto(f)
    if eth_type == ETH_TYPE_IPV4:
        l3 = _ipv4(f, payload)
    elif eth_type == ETH_TYPE_IPV6:
        l3 = _ipv6(f, payload)
    elif eth_type == ETH_TYPE_ARP:
        l3 = _arp(f) + payload
    elif eth_type == ETH_TYPE_NSH:
        l3 = nsh_header(f) + payload
    elif eth_type in (ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC):
        lse = (f.get("mpls_label", 16) << 12) | (f.get("mpls_tc", 0) << 9) | (f.get("mpls_bos", 1) << 8) | \
            f.get("mpls_ttl", 64)
        l3 = struct.pack("!I", lse) + _ipv4(f, payload)
    else:
        l3 = payload
    frame = f.get("eth_dst", 0x020000000002).to_bytes(6, "big") + f.get("eth_src", 0x020000000001).to_bytes(6, "big")
    for tpid, tag_pcp, tag_vid in vlans:
        frame += struct.pack("!HH", tpid, (tag_pcp << 13) | tag_vid)
    frame += struct.pack("!H", eth_type) + l3
    return frame + b"\0" * max(0, min_size - len(frame))


# ---------------------------------------------------------------- reading frames back


def extract_fields(frame: bytes) -> dict[str, int]:
    """IR field values present in ``frame`` (outer VLAN tag only, as OpenFlow sees it)."""
    out: dict[str, int] = {"eth_dst": int.from_bytes(frame[0:6], "big"), "eth_src": int.from_bytes(frame[6:12], "big")}
    off = 12
    (etype,) = struct.unpack_from("!H", frame, off)
    out["vlan_vid"] = 0
    first = True
    while etype in _VLAN_TPIDS and len(frame) >= off + 6:
        (tci,) = struct.unpack_from("!H", frame, off + 2)
        if first:
            out["vlan_vid"], out["vlan_pcp"], first = OFPVID_PRESENT | (tci & 0xFFF), tci >> 13, False
        off += 4
        (etype,) = struct.unpack_from("!H", frame, off)
    out["eth_type"] = etype
    off += 2
    if etype == ETH_TYPE_IPV4 and len(frame) >= off + 20:
        tos, proto = frame[off + 1], frame[off + 9]
        (frag,) = struct.unpack_from("!H", frame, off + 6)
        out.update(ip_dscp=tos >> 2, ip_ecn=tos & 3, ip_proto=proto, nw_ttl=frame[off + 8],
                   ip_frag=(IP_FRAG_ANY if frag & 0x3FFF else 0) | (IP_FRAG_LATER if frag & 0x1FFF else 0),
                   ipv4_src=int.from_bytes(frame[off + 12:off + 16], "big"),
                   ipv4_dst=int.from_bytes(frame[off + 16:off + 20], "big"))
        if not frag & 0x1FFF:
            _l4_fields(out, proto, frame, off + (frame[off] & 0xF) * 4, v6=False)
    elif etype == ETH_TYPE_IPV6 and len(frame) >= off + 40:
        (vtc,) = struct.unpack_from("!I", frame, off)
        tc, proto = (vtc >> 20) & 0xFF, frame[off + 6]
        l4, frag = off + 40, 0
        if proto == 44 and len(frame) >= l4 + 8:  # a fragment header (the only extension header drawn here)
            (offset,) = struct.unpack_from("!H", frame, l4 + 2)
            proto, frag, l4 = frame[l4], (IP_FRAG_ANY if offset else 0) | (IP_FRAG_LATER if offset >> 3 else 0), l4 + 8
            if frag & IP_FRAG_LATER:
                proto = 44  # (as Open vSwitch: a later fragment's protocol is its fragment header's)
        out.update(ip_dscp=tc >> 2, ip_ecn=tc & 3, ip_proto=proto, ipv6_flabel=vtc & 0xFFFFF, nw_ttl=frame[off + 7],
                   ip_frag=frag, ipv6_src=int.from_bytes(frame[off + 8:off + 24], "big"),
                   ipv6_dst=int.from_bytes(frame[off + 24:off + 40], "big"))
        if not frag & IP_FRAG_LATER:
            _l4_fields(out, proto, frame, l4, v6=True)
    elif etype == ETH_TYPE_ARP and len(frame) >= off + 28:
        out.update(arp_op=struct.unpack_from("!H", frame, off + 6)[0],
                   arp_spa=int.from_bytes(frame[off + 14:off + 18], "big"),
                   arp_sha=int.from_bytes(frame[off + 8:off + 14], "big"),
                   arp_tha=int.from_bytes(frame[off + 18:off + 24], "big"),
                   arp_tpa=int.from_bytes(frame[off + 24:off + 28], "big"))
    elif etype == ETH_TYPE_NSH:
        out.update(nsh_fields(frame, off))
    elif etype in (ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC) and len(frame) >= off + 4:
        (lse,) = struct.unpack_from("!I", frame, off)
        out.update(mpls_label=lse >> 12, mpls_tc=(lse >> 9) & 7, mpls_bos=(lse >> 8) & 1, mpls_ttl=lse & 0xFF)
    for k in _STATE:
        out.setdefault(k, 0)  # frames arrive with no tunnel, mark or register set
    out["actset_output"] = ACTSET_UNSET  # (and an empty action set)
    if out.get("ip_frag"):  # (as Open vSwitch by default: a fragment's ports, ICMP type and code read 0)
        for k in ("tcp_src", "tcp_dst", "udp_src", "udp_dst", "sctp_src", "sctp_dst", "icmpv4_type", "icmpv4_code",
                  "icmpv6_type", "icmpv6_code"):
            if k in out:
                out[k] = 0
    return out


def _l4_fields(out: dict[str, int], proto: int, frame: bytes, off: int, v6: bool) -> None:
    if proto in (IP_PROTO_TCP, IP_PROTO_UDP) and len(frame) >= off + 4:
        name = "tcp" if proto == IP_PROTO_TCP else "udp"
        out[f"{name}_src"], out[f"{name}_dst"] = struct.unpack_from("!HH", frame, off)
        if proto == IP_PROTO_TCP and len(frame) >= off + 20:
            out["tcp_flags"] = struct.unpack_from("!H", frame, off + 12)[0] & 0xFFF
    elif proto == IP_PROTO_SCTP and len(frame) >= off + 12:
        out["sctp_src"], out["sctp_dst"] = struct.unpack_from("!HH", frame, off)
    elif proto == IP_PROTO_ICMP and not v6 and len(frame) >= off + 2:
        out["icmpv4_type"], out["icmpv4_code"] = frame[off], frame[off + 1]
    elif proto == IP_PROTO_ICMPV6 and v6 and len(frame) >= off + 2:
        out["icmpv6_type"], out["icmpv6_code"] = frame[off], frame[off + 1]
        if out["icmpv6_code"] == 0 and out["icmpv6_type"] in (135, 136) and len(frame) >= off + 24:
            out["ipv6_nd_target"] = int.from_bytes(frame[off + 8:off + 24], "big")
            at = off + 24
            while len(frame) >= at + 8 and frame[at + 1]:  # link-layer address options
                if frame[at] in (1, 2) and frame[at + 1] == 1:
                    out.setdefault("ipv6_nd_sll" if frame[at] == 1 else "ipv6_nd_tll",
                                   int.from_bytes(frame[at + 2:at + 8], "big"))
                at += frame[at + 1] * 8
            out.setdefault("ipv6_nd_sll", 0)
            out.setdefault("ipv6_nd_tll", 0)


def pof_bits(frame: bytes, field: PofField) -> int | None:
    """The ``field.length`` bits at bit ``field.offset`` of ``frame`` (None if past the end)."""
    end = field.offset + field.length
    if end > len(frame) * 8:
        return None
    whole = int.from_bytes(frame, "big")
    return (whole >> (len(frame) * 8 - end)) & ((1 << field.length) - 1)


def frame_matches(match: Match, frame: bytes, in_port: int | None = None, metadata: int = 0) -> bool:
    """Does ``match`` (OpenFlow semantics, prerequisites included) accept this packet?"""
    have = extract_fields(frame)
    have["metadata"] = metadata
    if "vlan_pcp" not in have and tci_match(match) is not None:  # (a whole-TCI match: an untagged frame's TCI is 0)
        have["vlan_pcp"] = 0
    if in_port is not None:
        have["in_port"] = in_port
    for key, fm in match:
        v = pof_bits(frame, key) if isinstance(key, PofField) else have.get(key)
        if v is None or not fm.matches(v):
            return False
    return True


# ---------------------------------------------------------------- random frames


def _satisfy(rng: random.Random, match: Match) -> dict[str, int]:
    """Field values accepted by ``match``: exact bits copied, masked-out bits random."""
    vals: dict[str, int] = {}
    for key, fm in match:
        if isinstance(key, PofField) or key in ("in_port", "metadata") or key in _STATE or key in _ABSENT:
            continue
        bits = FIELDS[key].bits
        vals[key] = fm.value if fm.mask is None else fm.value | (rng.getrandbits(bits) & ~fm.mask)
    if vals.get("ip_frag"):
        vals["ip_frag"] |= IP_FRAG_ANY  # (a non-first fragment is a fragment)
    if "vlan_vid" in vals and vals["vlan_vid"] & OFPVID_PRESENT == 0:
        vals["vlan_vid"] = 0
    return vals


def _random_fields(rng: random.Random, of13: bool = False) -> dict[str, int]:
    f = _random_common_fields(rng)
    if of13:
        _of13_fields(rng, f)
    return f


def _of13_fields(rng: random.Random, f: dict[str, int]) -> None:
    """Rework a drawn frame to use the rest of OpenFlow 1.3: SCTP, ICMPv6/ND, flow
    label, ARP SHA/THA, MPLS TC/BOS (drawn after the common fields, so frames
    drawn without ``of13`` stay as they were)."""
    from .generate import random_value

    eth = f.get("eth_type")
    _nx_fields(rng, f)
    if eth == ETH_TYPE_ARP or any(k.startswith("arp_") for k in f):
        f["arp_sha"], f["arp_tha"] = random_value(rng, "arp_sha"), rng.choice((0, random_value(rng, "arp_tha")))
    elif eth == ETH_TYPE_MPLS:
        f["mpls_tc"], f["mpls_bos"] = rng.randrange(8), rng.choice((1, 1, 1, 0))
    elif eth in (ETH_TYPE_IPV4, ETH_TYPE_IPV6):
        v6 = eth == ETH_TYPE_IPV6
        if v6:
            f["ipv6_flabel"] = rng.choice((0, 0, rng.randrange(1 << 20), 0x12345))
        r = rng.random()
        if r < 0.3:
            for k in [k for k in f if k.startswith(("tcp_", "udp_", "icmp"))]:
                del f[k]
            f["ip_proto"] = IP_PROTO_SCTP
            f["sctp_src"], f["sctp_dst"] = random_value(rng, "sctp_src"), random_value(rng, "sctp_dst")
        elif v6 and r < 0.7:
            for k in [k for k in f if k.startswith(("tcp_", "udp_", "icmp"))]:
                del f[k]
            f["ip_proto"] = IP_PROTO_ICMPV6
            f["icmpv6_type"] = rng.choice((135, 135, 136, 136, 128, 1))
            f["icmpv6_code"] = rng.choice((0, 0, 0, 0, 1))
            f["ipv6_nd_target"] = random_value(rng, "ipv6_nd_target")
            if rng.random() < 0.7:
                key = rng.choice(("ipv6_nd_sll", "ipv6_nd_tll")) if rng.random() < 0.2 else \
                    ("ipv6_nd_sll" if f["icmpv6_type"] == 135 else "ipv6_nd_tll")
                f[key] = random_value(rng, key)


def _nx_fields(rng: random.Random, f: dict[str, int]) -> None:
    """TTLs, TCP flags and fragments worth matching (Open vSwitch's nw_ttl, mpls_ttl,
    tcp_flags, ip_frag), drawn with the OpenFlow 1.3 rest."""
    from .generate_nx import TCP_FLAGS, TTLS

    if f.get("eth_type") in (ETH_TYPE_IPV4, ETH_TYPE_IPV6):
        if rng.random() < 0.3:
            f["ip_ttl"] = rng.choice(TTLS)
        if rng.random() < 0.08:
            # A fragment of a protocol with no transport header Open vSwitch parses (GRE, ESP):
            # OVS's rewrites of transport fields in fragments are partly quirks dp-core does not
            # copy (docs/rule-syntax.md)
            for k in [k for k in f if k.startswith(("tcp_", "udp_", "icmp"))]:
                del f[k]
            f["ip_proto"] = rng.choice((47, 50))
            f["ip_frag"] = IP_FRAG_ANY | (IP_FRAG_LATER if rng.random() < 0.5 else 0)
        if f.get("ip_proto") == IP_PROTO_TCP:
            f["tcp_flags"] = rng.choice(TCP_FLAGS)
    elif f.get("eth_type") == ETH_TYPE_MPLS and rng.random() < 0.3:
        f["mpls_ttl"] = rng.choice(TTLS)


def _random_common_fields(rng: random.Random) -> dict[str, int]:
    from .generate import random_value  # the generator's pools make near misses likely

    f: dict[str, int] = {"eth_src": random_value(rng, "eth_src"), "eth_dst": random_value(rng, "eth_dst")}
    if rng.random() < 0.3:
        f["vlan_vid"] = random_value(rng, "vlan_vid")
        f["vlan_pcp"] = rng.randrange(8)
    kind = rng.choices(("ipv4", "ipv6", "arp", "mpls", "other"), (6, 2, 1, 1, 0.5))[0]
    if kind == "other":
        f["eth_type"] = rng.choice((0x88CC, 0x9000, 0x0842))
        return f
    if kind == "arp":
        return f | {k: random_value(rng, k) for k in ("arp_op", "arp_spa", "arp_tpa")}
    if kind == "mpls":
        f["mpls_label"] = random_value(rng, "mpls_label")
    fam = "ipv6" if kind == "ipv6" else "ipv4"
    f.update({f"{fam}_src": random_value(rng, f"{fam}_src"), f"{fam}_dst": random_value(rng, f"{fam}_dst")})
    f["eth_type"] = {"ipv4": ETH_TYPE_IPV4, "ipv6": ETH_TYPE_IPV6, "mpls": ETH_TYPE_MPLS}[kind]
    f["ip_dscp"] = rng.choice((0, 0, 8, 46))
    proto = rng.choice((IP_PROTO_TCP, IP_PROTO_UDP, IP_PROTO_ICMP if fam == "ipv4" else IP_PROTO_ICMPV6, 47))
    f["ip_proto"] = proto
    if proto in (IP_PROTO_TCP, IP_PROTO_UDP):
        name = "tcp" if proto == IP_PROTO_TCP else "udp"
        f[f"{name}_src"], f[f"{name}_dst"] = random_value(rng, "tcp_src"), random_value(rng, "tcp_dst")
    elif proto == IP_PROTO_ICMP:
        f["icmpv4_type"], f["icmpv4_code"] = random_value(rng, "icmpv4_type"), rng.randrange(4)
    return f


def _with_pof(rng: random.Random, frame: bytes, match: Match) -> bytes:
    for key, fm in match:
        if not isinstance(key, PofField):
            continue
        end = key.offset + key.length
        if end > len(frame) * 8:
            frame += b"\0" * ((end + 7) // 8 - len(frame))
        mask = (1 << key.length) - 1 if fm.mask is None else fm.mask
        cur = pof_bits(frame, key) or 0
        new = (fm.value & mask) | (cur & ~mask)
        shift = len(frame) * 8 - end
        whole = int.from_bytes(frame, "big")
        whole = (whole & ~(((1 << key.length) - 1) << shift)) | (new << shift)
        frame = whole.to_bytes(len(frame), "big")
    return frame


def random_frame(rng: random.Random, hints: Rule | Match | Sequence[Rule | Match] | None = None,
                 hit: float = 0.8, of13: bool = False) -> bytes:
    """A random valid frame; with probability ``hit`` it satisfies one of ``hints``
    (except in_port/metadata/tunnel_id, which are not in the frame). ``of13``
    also draws SCTP, ICMPv6 ND, flow labels, ARP SHA/THA and MPLS TC/BOS."""
    matches = _hint_matches(hints)
    fields = _random_fields(rng, of13)
    match = rng.choice(matches) if matches and rng.random() < hit else None
    if match is not None:
        want = _satisfy(rng, match)
        if "eth_type" in want and want["eth_type"] != fields.get("eth_type", -1):
            fields = {k: v for k, v in fields.items() if k in ("eth_src", "eth_dst", "vlan_vid", "vlan_pcp")}
        if want.get("ip_proto", fields.get("ip_proto")) != fields.get("ip_proto"):
            fields = {k: v for k, v in fields.items() if not k.startswith(("tcp", "udp", "icmp", "sctp", "ipv6_nd"))}
        if want.get("icmpv6_type", fields.get("icmpv6_type")) != fields.get("icmpv6_type"):
            fields = {k: v for k, v in fields.items() if not k.startswith("ipv6_nd")}
        fields.update(want)
        if fields.get("vlan_vid", OFPVID_PRESENT) == 0:
            fields.pop("vlan_pcp", None)
    if fields.get("ip_frag") and fields.get("ip_proto") in _TRANSPORTS:  # (fragments: no transport, see _nx_fields)
        if match is not None and "ip_frag" in match and "ip_proto" not in match:
            fields = {k: v for k, v in fields.items() if not k.startswith(("tcp_", "udp_", "sctp_", "icmp", "ipv6_nd"))}
            fields["ip_proto"] = rng.choice((47, 50))
        else:
            del fields["ip_frag"]
    if fields.get("eth_type") == ETH_TYPE_NSH:  # (an NSH hint's open fields: generate_nsh)
        from .generate_nsh import fill_frame
        fill_frame(rng, fields)
        fields["payload"] = _nsh_inner_frame(rng, fields)  # (decap: an Ethernet frame inside, now and then)
    payload = fields.pop("payload", None)
    frame = build_frame(payload=rng.randbytes(rng.choice((0, 0, 8, 32))) if payload is None else payload, **fields)
    return _with_pof(rng, frame, match) if match is not None else frame


def _nsh_inner_frame(rng: random.Random, fields: dict) -> bytes | None:
    """For an NSH frame whose next protocol is Ethernet, now and then (a feature-free
    draw) a whole random Ethernet frame as its payload (no VLAN tag, so a later table's
    matches meet it); None: the caller's random payload."""
    if fields.get("nsh_np", 3) != 3 or rng.random() < 0.3:
        return None
    inner = random_frame(rng)
    return inner if inner[12:14] != b"\x81\x00" else None


def random_packet(rng: random.Random, hints: Sequence[Rule | Match] | Rule | Match | None,
                  ports: Sequence[int], hit: float = 0.8, of13: bool = False) -> tuple[int, bytes]:
    """(in_port, frame): like ``random_frame`` but also picks an ingress port from
    ``ports`` that the chosen hint accepts (when it matches ``in_port``)."""
    matches = _hint_matches(hints)
    if matches and rng.random() < hit:
        match = rng.choice(matches)
        fm = match.get("in_port")
        port = fm.value if fm is not None and fm.value in ports else rng.choice(list(ports))
        return port, random_frame(rng, match, hit=1.0, of13=of13)
    return rng.choice(list(ports)), random_frame(rng, None, of13=of13)


def _hint_matches(hints: object) -> list[Match]:
    if hints is None:
        return []
    items = [hints] if isinstance(hints, (Rule, Match)) else list(hints)  # type: ignore[call-overload]
    return [h.match if isinstance(h, Rule) else h for h in items]
