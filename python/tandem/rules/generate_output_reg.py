"""Random ``output_reg`` actions whose port number only the pipeline knows.

Opt-in ``OUTPUT_REG_RUNTIME_FEATURE`` (``generate.random_ruleset``): an output to
the port a register holds when nothing in the rule fixes it — the value earlier
tables loaded or moved there (``generate_nx.REGS`` hold ``REG_VALUES``: 0, the
small port numbers, 0xff, a high bit; the loads drawn after the output_reg put
port numbers there). Most sources are narrower than 16 bits, so they cannot hold
0xfff9 (TABLE) or 0xfffa (NORMAL): a rule that may output to NORMAL needs every
pipeline on the host (docs/oneswitch.md section 7), so an offline translation
with sNIC ports refuses it; some are register views whose bits span two
registers; a few are 16 bits wide.
Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .generate_nx import REGS, VIEWS
from .ir import REG_VIEWS, Action, OutputReg, SetField, Subfield

OUTPUT_REG_RUNTIME_FEATURE = "nx_output_reg_runtime"


def runtime_output_reg_actions(rng: random.Random, ports) -> list[Action]:
    """One output_reg of a register (or view) whose value the rule does not fix, and
    often after it a load of a port number (virtual or reserved) into a register at
    bit 0 or 32 of a view, for the rules of later tables to output to."""
    k = rng.random()
    if k < 0.55:
        src = Subfield(rng.choice(REGS), 0, rng.choice((2, 4, 8, 12, 15)))
    elif k < 0.85:
        view = rng.choice(VIEWS)
        width = 32 * REG_VIEWS[view][1]
        n_bits = rng.choice((4, 8, 12))
        src = Subfield(view, min(rng.choice((0, 28, 32, 60)), width - n_bits), n_bits)
    else:
        src = Subfield(rng.choice(REGS), rng.choice((0, 16)), 16)
    out: list[Action] = [OutputReg(src)]
    if rng.random() < 0.6:
        port = rng.choice(list(ports)) if rng.random() < 0.8 else rng.choice(_RESERVED)
        out.append(SetField(rng.choice(REGS), port))
    return out


# OpenFlow 1.0 numbers of IN_PORT, FLOOD, ALL, CONTROLLER, LOCAL
_RESERVED = (0xFFF8, 0xFFFB, 0xFFFC, 0xFFFD, 0xFFFE)
