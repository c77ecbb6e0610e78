"""Random ``output_reg`` of NSH fields (feature ``nx_nsh_output_reg``, with ``nx_nsh``) for
the OVS oracle's item ``nsh_output_reg``.

Open vSwitch outputs to the port number the flow's value of the field holds (measured
on 3.1 with frames: ``output:NXOXM_NSH_C1[0..15]`` of context 3 sends to port 3,
``set_field:4->nsh_c1`` before it to port 4, ``output:NXOXM_NSH_SI[]`` of SI 2 to
port 2, a load of bits 6..7 of ``nsh_ttl`` before ``output:NXOXM_NSH_TTL[]`` to no
port). The translation takes it where the rule fixes the number (rule_analysis.
output_reg_port: a set_field just before), so the drawn field is set to a port
number (a virtual port, IN_PORT's, or one no port has) right before the output_reg;
the value sits in the subfield read. Pure: all randomness comes from ``rng``."""

from __future__ import annotations

import random
from typing import Sequence

from .ir import OutputReg, SetField, Subfield
from .nsh import ETH_TYPE_NSH

NSH_OUTPUT_REG_FEATURE = "nx_nsh_output_reg"
# field -> (its width in the IR's set_field, the subfields read: (ofs, n_bits))
_SOURCES = {"nsh_c1": (32, ((0, 16), (0, 32), (8, 16))), "nsh_c2": (32, ((0, 16),)), "nsh_c4": (32, ((16, 16),)),
            "nsh_spi": (24, ((0, 16), (0, 24), (4, 8))), "nsh_si": (8, ((0, 8),)), "nsh_flags": (8, ((0, 8), (0, 4))),
            "nsh_ttl": (6, ((0, 6),))}


def nsh_output_reg_actions(rng: random.Random, flow, ports: Sequence[int]) -> list:
    """Where the flow is NSH: a set_field of an NSH field to a port number in the bits an
    output_reg right after it reads."""
    if flow.eth_type != ETH_TYPE_NSH or not ports or rng.random() >= 0.8:
        return []
    field = rng.choice(list(_SOURCES))
    width, subs = _SOURCES[field]
    ofs, n = rng.choice(subs)
    port = rng.choice((*ports, *ports, 0xFFF8, 77))  # (IN_PORT's OpenFlow 1.0 number; a number no port has)
    if port >> n:
        port = rng.choice(ports)
    if port >> n:
        return []
    value = (port << ofs) | (rng.getrandbits(width) & ~(((1 << n) - 1) << ofs) if rng.random() < 0.3 else 0)
    return [SetField(field, value & ((1 << width) - 1)), OutputReg(Subfield(field, ofs, n))]
