"""Nicira ``output_reg`` (``output:REG[a..b]``) in a PACKET_OUT (docs/endpoint.md, PACKET_OUT).

The endpoint sends each output of a PACKET_OUT as its own physical PACKET_OUT, so it
must know the port an ``output_reg`` names: the register's bits as the changes before it
wrote them (a PACKET_OUT's registers start at 0). dp-core runs those changes on the frame
(``endpoint_packet_in.changed_packet_in``, whose state lists the registers), and the
``output_reg`` becomes an output to that OpenFlow 1.0 port number (0xff00 and up: the
reserved ports, as Open vSwitch maps them; above 0xffff: nothing), which the walk then
carries out as any output, also for ``output(port=P,max_len=N)``'s commits
(``endpoint_trunc.py``). Refused: a source other than ``reg0``..``reg15`` (checked with the
actions, ``output_reg_problem``), and a number that is TABLE, NORMAL or CONTROLLER when the
PACKET_OUT runs (``output_reg_as_output`` raises: the checks those outputs need are made on
the actions written, before the walk). Pure but for dp-core's scratch switch.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules.ir import Action, Output, OutputReg

from .endpoint_packet_in import changed_packet_in

_REGS = frozenset(f"reg{i}" for i in range(16))
_NOT_RUN = {ir.OFPP_TABLE: "TABLE", ir.OFPP_NORMAL: "NORMAL", ir.OFPP_CONTROLLER: "CONTROLLER"}


def output_reg_problem(a: Action) -> str | None:
    """Why ``a``, an action of a PACKET_OUT, is refused as an output_reg (None: taken)."""
    if type(a) is OutputReg and a.src.field not in _REGS:
        return (f"output_reg in a PACKET_OUT from {a.src.field}: OneSwitch takes it from reg0..reg15 only (the endpoint "
                "works out the port from the registers the PACKET_OUT's changes write)")
    return None


def output_reg_as_output(frame: bytes, mods: Sequence[Action], a: OutputReg, in_vport: int,
                         vports: Iterable[int]) -> list[Action]:
    """The output ``a`` is for this frame after ``mods`` (none for a number above 0xffff)."""
    _, match = changed_packet_in(frame, mods, in_vport, vports)
    fm = match.get(a.src.field)
    value = ((fm.value if fm is not None else 0) >> a.src.ofs) & ((1 << a.src.n_bits) - 1)
    if value > 0xFFFF:
        return []
    port = value + 0xFFFF0000 if value >= 0xFF00 else value  # (OpenFlow 1.0's reserved numbers)
    if port in _NOT_RUN:
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT, f"output_reg in a PACKET_OUT whose register holds "
                        f"{_NOT_RUN[port]}'s number ({value:#x}): OneSwitch carries out a PACKET_OUT's output_reg as "
                        "an output to a port, IN_PORT, FLOOD, ALL or LOCAL")
    return [Output(port, a.max_len)]


__all__ = ["output_reg_as_output", "output_reg_problem"]
