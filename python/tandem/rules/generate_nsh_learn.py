"""Random ``learn`` whose ``result_dst`` is an NSH field's bit (feature ``nx_nsh_learn_result``,
with ``nx_nsh``) for the OVS oracle's item ``nsh_learn_result``.

Open vSwitch 3.1 writes learn's result (1 learned, 0 refused by its limit) into the flow,
and the frame's NSH header gets it at the next output (measured with frames:
``result_dst=NXOXM_NSH_FLAGS[1]`` of flags 1 leaves with flags 3, ``NXOXM_NSH_SPI[2]`` of
SPI 0x123 with 0x127; bits 6 and 7 of ``nsh_ttl`` stay in the flow only, as a load's do).
The learned flows match ``eth_dst`` on the frame's ``eth_src`` in ``LEARN_TABLE``, a table
no drawn rule uses, so they change no forwarding. The limit drawn (none, or 1000) is never
reached, so the result is 1: at a reached limit Open vSwitch's result depends on its datapath
flow cache (a frame on a cached datapath flow keeps the first translation's 1, a new
translation of the same learned flow gets 0: measured, 58 of 100 frames differed from
dp-core with limits 1 and 2), for any result_dst, registers too. A move of the field's bits into a register that a
later table may read, or into ``eth_src``, sometimes follows, so the flow's value shows
too. Pure: all randomness comes from ``rng``."""

from __future__ import annotations

import random

from .ir import LEARN_MATCH, Learn, LearnSpec, MoveField, Subfield
from .nsh import ETH_TYPE_NSH

NSH_LEARN_RESULT_FEATURE = "nx_nsh_learn_result"
_LIMITS = (0, 1000)  # (none, or never reached: see above)
LEARN_TABLE = 250  # (no generated rule lives there: generate.LAST_TABLES)
# the writable NSH fields and their widths as operands (nsh_ttl: the flow's 8 bits)
_FIELDS = {"nsh_flags": 8, "nsh_ttl": 8, "nsh_spi": 24, "nsh_si": 8, "nsh_c1": 32, "nsh_c2": 32, "nsh_c3": 32,
           "nsh_c4": 32}


def nsh_learn_result_actions(rng: random.Random, flow) -> list:
    """Where the flow is NSH: a learn whose result goes into a drawn NSH field bit, and
    sometimes a move of that field's low bits into ``reg1`` or ``eth_src``."""
    if flow.eth_type != ETH_TYPE_NSH or rng.random() >= 0.8:
        return []
    field = rng.choice(list(_FIELDS))
    width = _FIELDS[field]
    bit = rng.choice((0, 1, 2, rng.randrange(width)))
    spec = LearnSpec(LEARN_MATCH, Subfield.whole("eth_src"), dst=Subfield.whole("eth_dst"))
    learn = Learn((spec,), table=LEARN_TABLE, priority=rng.choice((5, 6)), cookie=rng.choice((0, 0x5a)),
                  limit=rng.choice(_LIMITS), result_dst=Subfield(field, bit, 1))
    out: list = [learn]
    if rng.random() < 0.5:
        n = min(width, 8)
        dst = rng.choice((Subfield("reg1", 0, n), Subfield("eth_src", 0, n)))
        out.append(MoveField(Subfield(field, 0, n), dst))
    return out
