"""PACKET_OUT oracle mode ``tun_long``: every PACKET_OUT first writes a tun_metadata option
mapped longer than 16 bytes (``LONG_TLV_MAP``: a whole set_field or a load past bit 127)
and moves 32 of its bits into eth_src (where the frames show them), so the
``check_pkt_larger``, ``bundle`` and ``output(port=P,max_len=N)`` after it run in dp-core
on a packet holding the long option, as the emulator backend and the endpoint run them.
Both sides map ``LONG_TLV_MAP`` (the plain bridge by ``add-tlv-map``). Pure."""

from __future__ import annotations

import random

from tandem.rules.generate_tun_metadata import LONG_TLV_MAP
from tandem.rules.ir import Action, MoveField, SetField, Subfield
from tandem.rules.tun_metadata import tlv_map_text

TLV_MAP_TEXT = tlv_map_text(LONG_TLV_MAP)


def with_long_option(rng: random.Random, acts: tuple[Action, ...]) -> tuple[Action, ...]:
    """``acts`` after a write of a long option and a move of 32 of its bits into eth_src."""
    i = rng.choice(sorted(LONG_TLV_MAP))
    f, bits = f"tun_metadata{i}", 8 * LONG_TLV_MAP[i]
    if rng.random() < 0.5:
        write = SetField(f, rng.getrandbits(bits))
    else:
        n = rng.choice((8, 32, 64))
        ofs = rng.randrange(min(128 - n + 1, bits - n), bits - n + 1)  # (reaching past bit 127 where it can)
        write = SetField(f, rng.getrandbits(n) << ofs, ((1 << n) - 1) << ofs)
    shown = MoveField(Subfield(f, rng.randrange(bits - 32 + 1), 32), Subfield("eth_src", 8, 32))
    return (write, shown, *acts)
