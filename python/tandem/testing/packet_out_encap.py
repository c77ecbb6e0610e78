"""PACKET_OUTs with the SFC encap pattern for the PACKET_OUT oracle (``packet_out_oracle``,
``encap=True``; ``tandem bench packet_out_oracle --encap``): ``encap(nsh…)``, NSH
set_fields, ``encap(ethernet)`` at a random place of the top-level list from which on
only the actions OneSwitch's endpoint carries out after it stand (outputs to ports, group
calls, header changes: rules/encap_set.py ``packet_out_problem``), and now and then an
output after it, so the encapsulated frame is sent. Without check_pkt_larger: Open vSwitch
3.1's vswitchd aborts on a PACKET_OUT ``check_pkt_larger(100)->NXM_NX_REG1[0],encap(nsh),
encap(ethernet)`` that sends nothing after the pattern (``lib/packets.c:272: assertion
!dp_packet_is_eth(packet) failed in push_eth()``, measured; OneSwitch's endpoint decides
check_pkt_larger itself and sends no such list). Pure: all randomness comes from ``rng``.
"""

from __future__ import annotations

import random

from tandem.rules.encap_set import packet_out_problem
from tandem.rules.generate_nsh import nsh_value
from tandem.rules.ir import Action, CheckPktLarger, EncapEthernet, EncapNsh, Output, SetField

_NSH_SET = ("nsh_spi", "nsh_si", "nsh_c1", "nsh_c4")


def with_encap(rng: random.Random, actions: tuple[Action, ...], ports) -> tuple[Action, ...]:
    """``actions`` with one SFC pattern where the endpoint carries it out."""
    acts = [a for a in actions if type(a) is not CheckPktLarger]
    start = len(acts)
    while start > 0 and packet_out_problem((EncapNsh(1), EncapEthernet(), *acts[start - 1:])) is None:
        start -= 1
    at = rng.randint(start, len(acts))
    pattern: list[Action] = [EncapNsh(rng.choice((1, 1, None)))]
    pattern += [SetField(f, nsh_value(rng, f)) for f in rng.sample(_NSH_SET, rng.choice((0, 1, 2)))]
    pattern.append(EncapEthernet())
    tail = [Output(rng.choice(list(ports)))] if rng.random() < 0.8 else []
    return (*acts[:at], *pattern, *acts[at:], *tail)
