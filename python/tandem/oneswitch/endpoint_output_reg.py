"""Nicira ``output_reg`` (``output:REG[a..b]``) in a PACKET_OUT (docs/endpoint.md, PACKET_OUT).

The endpoint sends each output of a PACKET_OUT as its own physical PACKET_OUT, so it
must know the port an ``output_reg`` names: the register's bits as the changes before it
wrote them (a PACKET_OUT's registers start at 0). dp-core runs those changes on the frame
(``endpoint_packet_in.changed_packet_in``, whose state lists the registers), and the
``output_reg`` becomes an output to that OpenFlow 1.0 port number (0xff00 and up: the
reserved ports, as Open vSwitch maps them; above 0xffff: nothing), which the walk then
carries out as any output, also for ``output(port=P,max_len=N)``'s commits
(``endpoint_trunc.py``). Other sources (``FIELDS``): ``in_port`` (the PACKET_OUT's, as an
OpenFlow 1.1 number cut to the bits read), ``metadata``, ``tunnel_id``, ``pkt_mark``,
``xxreg0``..``3`` from the state dp-core's run lists, and Ethernet, VLAN, IPv4/IPv6 and
TCP/UDP header fields from the frame it makes (``rules.packets.extract_fields``), read after
the changes as Open vSwitch reads its flow; a header source whose prerequisite the frame
does not meet is ``BAD_ACTION/MATCH_INCONSISTENT``, as Open vSwitch 3.1 checks the list
against the frame (measured: ``output:NXM_OF_UDP_DST[0..2]`` on a TCP frame), refused
(``BAD_TYPE``) in a list that may change the ethertype (MPLS push/pop, encap, decap:
``check_output_reg_frame``). A number that is CONTROLLER sends the packet-in of an output to
CONTROLLER when only changes the endpoint's packet-in is measured for come before the
``output_reg`` (``pin_blocked``), as a written one. Refused: other sources (checked with the
actions, ``output_reg_problem``), and a number that is TABLE or NORMAL (or CONTROLLER after
another change) when the PACKET_OUT runs (``output_reg_as_output`` raises: the checks those
outputs need are made on the actions written, before the walk). Pure but for dp-core's
scratch switch.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules.ir import Action, Output, OutputReg

from tandem.rules.packets import extract_fields

from .endpoint_packet_in import changed_packet_in, unmodeled_before_packet_in

_REGS = frozenset(f"reg{i}" for i in range(16))
_NOT_RUN = {ir.OFPP_TABLE: "TABLE", ir.OFPP_NORMAL: "NORMAL", ir.OFPP_CONTROLLER: "CONTROLLER"}
_STATE = frozenset({"metadata", "tunnel_id", "pkt_mark"})  # (in the state dp-core's run lists when not 0)
_XXREGS = frozenset(f"xxreg{i}" for i in range(4))
_HEADERS = frozenset({"eth_src", "eth_dst", "eth_type", "vlan_vid", "ipv4_src", "ipv4_dst", "ipv6_src",
                      "ipv6_dst", "ip_proto", "tcp_src", "tcp_dst", "udp_src", "udp_dst"})  # (rules.packets.extract_fields')
FIELDS = _REGS | _STATE | _XXREGS | _HEADERS | {"in_port"}
_RETYPING = (ir.PushMpls, ir.PopMpls, ir.EncapNsh, ir.EncapEthernet, ir.Decap)  # (they change what the prerequisites are checked against)


def output_reg_problem(a: Action) -> str | None:
    """Why ``a``, an action of a PACKET_OUT, is refused as an output_reg (None: taken)."""
    if type(a) is OutputReg and a.src.field not in FIELDS:
        return (f"output_reg in a PACKET_OUT from {a.src.field}: OneSwitch takes it from registers, in_port, metadata, "
                "tunnel_id, pkt_mark and Ethernet, VLAN, IP address, ip_proto and TCP/UDP port fields only (the endpoint "
                "works out the port from the frame and state the PACKET_OUT's changes make)")
    return None


def check_output_reg_frame(actions: Sequence[Action], frame: bytes) -> None:
    """Refuse a PACKET_OUT's ``output_reg`` from a header field the frame does not have
    (``BAD_ACTION/MATCH_INCONSISTENT``, as Open vSwitch 3.1), or in a list that may change
    the ethertype first (``BAD_TYPE``: module doc)."""
    heads = [a.src.field for a in actions if type(a) is OutputReg and a.src.field in _HEADERS]
    if not heads:
        return
    if any(isinstance(b, _RETYPING) for b in actions):
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE, f"output_reg in a PACKET_OUT from {heads[0]} with an "
                        "MPLS push or pop, encap or decap: its prerequisite would be checked against another packet type")
    have = extract_fields(frame)
    missing = next((f for f in heads if f not in have), None)
    if missing is not None:
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_MATCH_INCONSISTENT,
                        f"output_reg from {missing} in a PACKET_OUT of a frame without that field")


def pin_blocked(actions: Sequence[Action]) -> set[int]:
    """The ids of the top-level ``output_reg``s after a change the endpoint's packet-in is
    not measured for (``endpoint_packet_in.unmodeled_before_packet_in``; earlier
    ``output_reg``s change nothing): CONTROLLER's number there is refused."""
    blocked: set[int] = set()
    changed = False
    for a in actions:
        if type(a) is OutputReg:
            if changed:
                blocked.add(id(a))
            continue
        changed = changed or unmodeled_before_packet_in(a)
    return blocked


def _read(frame: bytes, mods: Sequence[Action], field: str, in_vport: int, vports: Iterable[int]) -> int:
    """``field``'s value after ``mods``, as Open vSwitch's flow holds it (module doc)."""
    if field == "in_port":
        return in_vport
    changed, match = changed_packet_in(frame, mods, in_vport, vports)
    if field in _HEADERS:
        return extract_fields(changed).get(field, 0)
    if field in _XXREGS:
        base = 4 * int(field[5:])
        regs = [match.get(f"reg{base + i}") for i in range(4)]
        return sum((fm.value if fm is not None else 0) << (32 * (3 - i)) for i, fm in enumerate(regs))
    fm = match.get(field)
    return fm.value if fm is not None else 0


def output_reg_as_output(frame: bytes, mods: Sequence[Action], a: OutputReg, in_vport: int,
                         vports: Iterable[int], packet_in: bool = False) -> list[Action]:
    """The output ``a`` is for this frame after ``mods`` (none for a number above 0xffff);
    ``packet_in``: CONTROLLER's number is taken (``pin_blocked``)."""
    value = (_read(frame, mods, a.src.field, in_vport, vports) >> a.src.ofs) & ((1 << a.src.n_bits) - 1)
    if value > 0xFFFF:
        return []
    port = value + 0xFFFF0000 if value >= 0xFF00 else value  # (OpenFlow 1.0's reserved numbers)
    if port == ir.OFPP_CONTROLLER and packet_in:
        return [Output(port, a.max_len)]
    if port in _NOT_RUN:
        raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_OUT_PORT, f"output_reg in a PACKET_OUT whose register holds "
                        f"{_NOT_RUN[port]}'s number ({value:#x}): OneSwitch carries out a PACKET_OUT's output_reg as "
                        "an output to a port, IN_PORT, FLOOD, ALL or LOCAL")
    return [Output(port, a.max_len)]


__all__ = ["FIELDS", "check_output_reg_frame", "output_reg_as_output", "output_reg_problem", "pin_blocked"]
