"""tun_metadata values longer on the wire than the option's mapped length, against a plain
Open vSwitch 3.1 bridge: the same FLOW_MODs (match values and masks, OFPAT_SET_FIELD and
NXAST_REG_LOAD2 payloads longer than the option, with and without leading zero bytes,
one shorter, and ovs-ofctl's empty payload for 0) go to the bridge and to OneSwitch over
the OVS backend; both take every one, each flow's tun_metadata match and actions on the
physical bridges are what the plain bridge holds, and OneSwitch's FLOW_STATS show each
flow as the bridge's do, byte for byte (a match at the mapped length, a set_field in the
fewest bytes). Open vSwitch keeps the first mapped bytes of a longer payload
(``rules/tun_metadata.fit``, applied while the endpoint decodes)."""

from __future__ import annotations

import struct

import pytest

from endpoint_helpers import OFClient, errors_in, ovs_backend_endpoint, ovs_bridge_client
from test_endpoint_protocol import async_test
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire as W
from tandem.rules import ofwire_stats as S
from tandem.rules import ofwire_tlv as T
from tandem.rules.ofwire_tlv import TlvMap
from tandem.rules.tun_metadata import decoding_lengths, fit

pytestmark = [pytest.mark.ovs]
MAP = {0: 4, 1: 8}


def _oxm(index: int, value: bytes, mask: bytes = b"") -> bytes:
    """NXM_NX_TUN_METADATA<index> with ``value`` (and ``mask``) as given, whatever its length."""
    return struct.pack("!I", 1 << 16 | (40 + index) << 9 | bool(mask) << 8 | len(value) + len(mask)) + value + mask


def _pad(b: bytes) -> bytes:
    return b + bytes(-len(b) % 8)


def _set_field(oxm: bytes) -> bytes:
    body = _pad(struct.pack("!HH", 25, 0) + oxm)
    return body[:2] + struct.pack("!H", len(body)) + body[4:]


def _reg_load2(oxm: bytes) -> bytes:
    body = _pad(struct.pack("!HHIH", 0xFFFF, 0, 0x2320, 33) + oxm)
    return body[:2] + struct.pack("!H", len(body)) + body[4:]


def _flow_mod(x: int, priority: int, oxms: bytes = b"", actions: bytes = b"") -> bytes:
    match = _pad(struct.pack("!HH", 1, 4 + len(oxms)) + oxms)
    out = struct.pack("!HHIH6x", 0, 16, 1, 0)
    ins = struct.pack("!HH4x", 4, 8 + len(actions) + len(out)) + actions + out
    body = struct.pack("!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, priority, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return W.header(W.OFPT_FLOW_MOD, x, body + match + ins)


H = bytes.fromhex
FLOWS = [  # (priority, match OXMs, actions): each payload longer (or shorter) than its option
    (20, _oxm(0, H("1122334455")), b""),  # (as ovs-ofctl sends tun_metadata0=0x1122334455)
    (21, _oxm(0, H("0000000011223344")), b""),  # (leading zero bytes: OVS keeps them)
    (22, _oxm(0, H("1100330055"), H("ff00ff00ff")), b""),
    (23, _oxm(1, H("0102030405060708090a0b0c"), H("ffffffffffffffffffffffff")), b""),
    (24, b"", _set_field(_oxm(0, H("1122334455")))),
    (25, b"", _set_field(_oxm(0, H("00000000ffffffff")))),
    (26, b"", _reg_load2(_oxm(0, H("ff00000000"), H("ff00000000")))),  # (load:0xff->…TUN_METADATA0[32..39])
    (27, b"", _reg_load2(_oxm(1, H("abcd000000000000000000"), H("ffff000000000000000000")))),
    (28, b"", _set_field(_oxm(1, H("123456")))),  # (shorter: the number as it is)
    (29, _oxm(0, b""), _set_field(_oxm(1, b""))),  # (no bytes: ovs-ofctl's tun_metadata0=0, set_field:0)
]


async def _send_all(c: OFClient) -> list:
    x = c.next_xid()
    c.send(T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0xFFFF, i, n, i) for i, n in MAP.items()]))
    errs = errors_in(await c.barrier())
    for prio, oxms, actions in FLOWS:
        c.send(_flow_mod(c.next_xid(), prio, oxms, actions))
        errs += errors_in(await c.barrier())
    return errs


async def _stats(c: OFClient, lengths: dict[int, int] = MAP) -> dict[int, tuple]:
    """priority -> (match, instructions, their bytes) of every flow in the FLOW_STATS reply, read under
    ``lengths`` (the TLV map)."""
    req = struct.pack("!HH4xB3xII4xQQ", 1, 0, 0xFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0) + struct.pack("!HH4x", 1, 4)
    c.send(W.header(W.OFPT_MULTIPART_REQUEST, x := c.next_xid(), req))
    out: dict[int, tuple] = {}
    for m in await c.until(W.OFPT_MULTIPART_REPLY, x):
        with decoding_lengths(lengths):
            out.update({e.rule.priority: (e.rule.match, e.rule.instructions) for e in S.decode_flow_stats(m.body[8:])})
        for e in S.decode_flow_stats(m.body[8:]):  # (and the bytes of its match and instructions)
            out[e.rule.priority] += (_entry_bytes(m.body[8:], e.rule.priority),)
    return out


def _entry_bytes(body: bytes, priority: int) -> bytes:
    off = 0
    while off < len(body):
        length, prio = struct.unpack_from("!H", body, off)[0], struct.unpack_from("!H", body, off + 12)[0]
        if prio == priority:
            return body[off + 48:off + length]
        off += length
    return b""


def _tokens(flows: list[str], priorities: set[int] | None = None) -> dict[int, list[str]]:
    """priority -> the flow's tun_metadata match and action tokens (the flows of FLOWS, or of ``priorities``)."""
    want = {p for p, _, _ in FLOWS} if priorities is None else priorities
    out: dict[int, list[str]] = {}
    for f in flows:
        toks = f.replace(" ", ",").replace("actions=", "").split(",")
        prio = [int(t[9:]) for t in toks if t.startswith("priority=")]
        if prio and prio[0] in want:
            out[prio[0]] = [t for t in toks if "TUN_METADATA" in t.upper()]
    return out


async def plain_and_oneswitch(send, stats, tokens) -> tuple[tuple, tuple]:
    """``send`` the same messages to a plain bridge and to OneSwitch over the OVS backend:
    for each, (what ``send`` returned, ``stats`` of it, ``tokens`` of its dump-flows: the
    plain bridge's, and a list of each physical bridge's)."""
    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2])
        ovs = await ovs_bridge_client(sb, "plain")
        plain = (await send(ovs), await stats(ovs))
        ovs.close()
        plain += (tokens(sb.dump_flows("plain")),)
        ep, backend = await ovs_backend_endpoint(sb)
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        try:
            ours = (await send(c), await stats(c))
            ours += ([tokens(sb.dump_flows(backend.bridge_name(sw))) for sw in backend.switches()],)
        finally:
            await ep.close()
            await backend.close()
    return plain, ours


@async_test
async def test_values_longer_than_the_option_are_cut_as_ovs_cuts_them():
    (plain_errs, want_stats, want), (errs, got_stats, copies) = await plain_and_oneswitch(_send_all, _stats, _tokens)
    assert plain_errs == []  # (OVS takes every one)
    assert errs == []
    assert set(want) == {p for p, _, _ in FLOWS}
    assert want[20] == ["tun_metadata0=0x11223344"] and want[21] == ["tun_metadata0=0"]  # (first 4 bytes kept)
    assert want[26] == ["set_field:0xff000000/0xff000000->tun_metadata0"]  # (bits 32..39 land on 24..31)
    assert got_stats == want_stats
    for prio in want:  # every copy of every flow (a switch may hold a flow more than once: one per ingress)
        got = [c[prio] for c in copies if prio in c]
        assert got and all(g == want[prio] for g in got), (prio, want[prio], got)


def test_fit_keeps_the_first_mapped_bytes():
    assert fit(0x1122334455, None, 4) == (0x11223344, None)  # (ovs-ofctl's 5 bytes)
    assert fit(0x11223344, None, 4, 8) == (0, None)  # (8 bytes on the wire, leading zeros)
    assert fit(0x11, 0xFF00000000FF, 4) == (0, 0xFF000000)  # (the mask's length counts)
    assert fit(0xFF << 32, 0xFF << 32, 4) == (0xFF << 24, 0xFF << 24)  # (load into bits 32..39)
    assert fit(0x123456, None, 8) == (0x123456, None) and fit(5, 0xFF, 4, 3) == (5, 0xFF)  # (not longer: as it is)


def test_longer_values_go_on_the_wire_as_ovs_ofctl_sends_them():
    """In the fewest bytes, whatever the map (captured from ovs-ofctl 3.1's FLOW_MODs for
    ``set_field:0x1122334455->tun_metadata0`` and ``load:0xff->NXM_NX_TUN_METADATA0[32..39]``),
    and read back under the map as the switch keeps them."""
    from tandem.rules.ir import SetField
    from tandem.rules.tun_metadata import decoding_lengths, encoding_lengths

    acts = [SetField("tun_metadata0", 0x1122334455), SetField("tun_metadata0", 0xFF << 32, 0xFF << 32)]
    ovs_ofctl = H("00190010000150051122334455000000" "ffff00180000232000210001510aff00000000ff00000000")
    for lengths in ({}, MAP):
        with encoding_lengths(lengths):
            assert W.encode_actions(acts) == ovs_ofctl
    assert W.decode_actions(ovs_ofctl) == acts
    with decoding_lengths(MAP):
        assert W.decode_actions(ovs_ofctl) == [SetField("tun_metadata0", 0x11223344),
                                               SetField("tun_metadata0", 0xFF << 24, 0xFF << 24)]
