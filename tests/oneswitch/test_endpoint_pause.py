"""The endpoint's continuations (oneswitch/endpoint_pause.py), pure: a sealed one opens to the
physical continuation, switch and ports it holds; one changed, of another endpoint (key or
bridge id) or none is stale; an NXT_RESUME's metadata goes back to physical terms (the virtual
in_port the packet-in showed becomes the physical one; another, or none, is refused: the physical
actions after the pause were translated for that in_port; the hidden flow-id mark is put back,
and a pkt_mark the controller sets where the virtual mark is unused is refused)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tandem.oneswitch.endpoint_pause import NXR_STALE, Paused, pause_keys, physical_resume, seal, unseal, virtual_continuation
from tandem.rules import ofwire as W
from tandem.rules.ir import FieldMatch, Match
from tandem.rules.ofwire_packet_in2 import WirePacketIn2, encode_resume

PHYS = bytes(4) + bytes.fromhex("800000140123456789abcdef0123456789abcdef000000008008000800000001")  # (a physical continuation)


def _ep(mark_used: bool = False):
    key, bridge = pause_keys()
    return SimpleNamespace(pause_key=key, pause_bridge=bridge, state=SimpleNamespace(mark_used=mark_used))


def _resume(ep, cont: bytes, **fields: int) -> tuple[str, WirePacketIn2]:
    pi = WirePacketIn2(b"\x02" * 60, 60, 0, 0x11, 1, Match.of(**fields), continuation=cont)
    return physical_resume(ep, encode_resume(1, pi)[8:])


def test_seal_opens_to_what_it_holds_and_nothing_else():
    key, bridge = pause_keys()
    p = Paused("snic0", 1, 2, 0x1234, PHYS)
    sealed = seal(key, bridge, p)
    assert unseal(key, bridge, sealed) == p
    assert unseal(pause_keys()[0], bridge, sealed) is None  # (another endpoint's key)
    assert unseal(key, pause_keys()[1], sealed) is None  # (another bridge id)
    assert unseal(key, bridge, sealed[:-9] + bytes([sealed[-9] ^ 1]) + sealed[-8:]) is None  # (a bit changed)


def test_resume_maps_in_port_and_puts_the_mark_back():
    ep = _ep()
    cont = virtual_continuation(ep, "host", 0xF001, 3, [("reg0", 5), ("pkt_mark", 0x77)], PHYS)  # (port 3, homed)
    switch, pi = _resume(ep, cont, in_port=3, reg0=9)
    assert (switch, pi.continuation, pi.data) == ("host", PHYS, b"\x02" * 60)
    assert dict(pi.match) == {"in_port": FieldMatch(0xF001), "reg0": FieldMatch(9), "pkt_mark": FieldMatch(0x77)}


@pytest.mark.parametrize("fields, error", [
    ({"in_port": 2}, (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_PORT)),
    ({"reg0": 2}, (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_PORT)),  # (no in_port: Open vSwitch's 0)
    ({"in_port": 1, "pkt_mark": 3}, (W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM)),
])
def test_resume_refusals(fields, error):
    ep = _ep()
    cont = virtual_continuation(ep, "host", 1, 1, [], PHYS)
    with pytest.raises(W.OFError) as e:
        _resume(ep, cont, **fields)
    assert (e.value.etype, e.value.code) == error


def test_stale_continuations():
    ep = _ep(mark_used=True)
    other = virtual_continuation(_ep(), "host", 1, 1, [], PHYS)
    for cont in (b"", PHYS, other):
        with pytest.raises(W.OFError) as e:
            _resume(ep, cont, in_port=1)
        assert (e.value.etype, e.value.code) == NXR_STALE
    mine = virtual_continuation(ep, "host", 1, 1, [("pkt_mark", 0x77)], PHYS)  # (the mark is the virtual one's)
    assert dict(_resume(ep, mine, in_port=1, pkt_mark=4)[1].match) == {"in_port": FieldMatch(1), "pkt_mark": FieldMatch(4)}
