"""PACKET_OUTs with ``dec_nsh_ttl`` for the PACKET_OUT oracle (``packet_out_oracle``,
``nsh_ttl=True``; ``tandem bench packet_out_oracle --nsh-ttl``): the drawn frame becomes the
payload of an NSH MD type 1 header (TTL from 0, 1, 2, 5, 63; a VLAN tag now and then) and
one ``dec_nsh_ttl`` goes at a random place of the top-level list before its first change
(the form OneSwitch's endpoint carries out: oneswitch/endpoint_nsh_ttl.py), so outputs,
group calls and clones may come before it. Pure: all randomness comes from ``rng``.
"""

from __future__ import annotations

import random
import struct

from tandem.rules import nsh as N
from tandem.rules.ir import Action, Clone, DecNshTtl, GroupAction, Output

_TTLS = (0, 1, 2, 2, 5, 63)
_FREE = (Output, GroupAction, Clone)  # (these change nothing of the PACKET_OUT's own packet)


def with_nsh_ttl(rng: random.Random, actions: tuple[Action, ...], frame: bytes) -> tuple[tuple[Action, ...], bytes]:
    """(actions with one dec_nsh_ttl, ``frame`` inside an NSH header)."""
    first_change = next((i for i, a in enumerate(actions) if not isinstance(a, _FREE)), len(actions))
    at = rng.randint(0, first_change)
    acts = (*actions[:at], DecNshTtl(), *actions[at:])
    tag = struct.pack("!HH", 0x8100, rng.randrange(1, 4095)) if rng.random() < 0.2 else b""
    header = N.header({"nsh_ttl": rng.choice(_TTLS), "nsh_spi": rng.choice((0x10, 0xABCDE)), "nsh_si": rng.choice((255, 1)),
                       "nsh_c1": rng.choice((0, 0x11))})
    return acts, frame[:12] + tag + struct.pack("!H", N.ETH_TYPE_NSH) + header + frame
