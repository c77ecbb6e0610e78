"""``output(port=P,max_len=N)`` (Nicira ``output_trunc``) in a PACKET_OUT (docs/endpoint.md).

Open vSwitch cuts the frame as last committed to its datapath: it keeps ``max(N, 14)``
bytes of the frame as it was at the last *commit*, and header pushes and pops made
since then are applied after the cut (``push_vlan`` then ``output(port=2,max_len=20)``
sends 24 bytes). The endpoint sends each output of a PACKET_OUT as its own physical
PACKET_OUT, so a physical switch would see other commits; the endpoint follows them
itself (``TruncTracker``), as on an Open vSwitch 3.1 PACKET_OUT: an output that sends
(to a port other than ``in_port``, IN_PORT, FLOOD, ALL, LOCAL), a packet-in and
``check_pkt_larger`` commit, and so does an ``output_trunc`` after its cut;
``output_trunc`` to IN_PORT, to the PACKET_OUT's ``in_port`` or to a reserved port sends
nothing and commits nothing (``tandem bench packet_out_oracle -- --truncs``). The cut
frame (dp-core makes the frame as changed so far) goes out as a physical PACKET_OUT with
no actions but the output. A PACKET_OUT holding ``output_trunc`` and a clone, a group,
``bundle``, ``output:TABLE``, ``output:NORMAL`` or ``output_reg`` is refused
(``trunc_problem``): their commits are not modeled here (measured around clones: a
clone holding ``output_trunc`` does not commit where it starts on a PACKET_OUT, unlike
in a flow, ``push_vlan,clone(output(port=2,max_len=20))`` sending 24 bytes, yet after an
earlier ``output_trunc`` in the same PACKET_OUT it does).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from tandem.rules import ir
from tandem.rules.ir import Action, Output, OutputTrunc

from .endpoint_packet_in import changed_packet_in

_UNMODELED = (ir.GroupAction, ir.Bundle, ir.OutputReg, ir.Clone)


class TruncFrame(NamedTuple):
    """An ``output_trunc``'s frame, cut, for virtual port ``port``."""

    port: int
    frame: bytes


def _all(actions: Iterable[Action]):
    for a in actions:
        yield a
        if type(a) is ir.Clone:
            yield from _all(a.actions)


def trunc_problem(actions: Sequence[Action]) -> str | None:
    """Why a PACKET_OUT's ``output_trunc`` is refused (None: it is carried out)."""
    acts = list(_all(actions))
    if not any(type(a) is OutputTrunc for a in acts):
        return None
    for a in acts:
        if isinstance(a, _UNMODELED) or isinstance(a, Output) and a.port in (ir.OFPP_TABLE, ir.OFPP_NORMAL):
            return (f"output(port=P,max_len=N) in a PACKET_OUT that holds {type(a).__name__} "
                    f"{getattr(a, 'port', '')}".rstrip() + ": OneSwitch does not follow Open vSwitch's commits there")
    return None


class TruncTracker:
    """The frame's length at Open vSwitch's last commit along a PACKET_OUT's walk."""

    def __init__(self, frame: bytes, in_vport: int, vports: Iterable[int]) -> None:
        self.frame, self.in_vport, self.vports = frame, in_vport, set(vports)
        self.committed = len(frame)
        self._frames: dict[tuple, bytes] = {}

    def changed(self, mods: Sequence[Action]) -> bytes:
        key = tuple(mods)
        if key not in self._frames:
            self._frames[key] = changed_packet_in(self.frame, mods, self.in_vport, self.vports)[0]
        return self._frames[key]

    def commit(self, mods: Sequence[Action]) -> None:
        self.committed = len(self.changed(mods))

    def output(self, port: int, mods: Sequence[Action]) -> None:
        """A plain output (or a packet-in, ``port`` CONTROLLER): commits if it sends."""
        if port in (ir.OFPP_CONTROLLER, ir.OFPP_LOCAL, ir.OFPP_FLOOD, ir.OFPP_ALL) \
                or port == ir.OFPP_IN_PORT and self.in_vport in self.vports \
                or port in self.vports and port != self.in_vport:
            self.commit(mods)

    def trunc(self, a: OutputTrunc, mods: Sequence[Action]) -> list[TruncFrame]:
        """The frame ``a`` sends (none to IN_PORT, the in_port or a reserved port but LOCAL)."""
        if not (a.port in self.vports and a.port != self.in_vport or a.port == ir.OFPP_LOCAL != self.in_vport):
            return []
        now = self.changed(mods)
        cut = max(0, self.committed - max(a.max_len, 14))
        self.committed = len(now)
        return [TruncFrame(a.port, now[:len(now) - cut])]


def on_output(tracker: TruncTracker | None, port, mods: Sequence[Action]) -> None:
    """(for the walk: a plain output or a packet-in, when the PACKET_OUT holds output_trunc)"""
    if tracker is not None:
        tracker.output(port if isinstance(port, int) else ir.OFPP_CONTROLLER, mods)


def tracker_for(actions: Sequence[Action], frame: bytes, in_vport: int, vports: Iterable[int]
                ) -> TruncTracker | None:
    return TruncTracker(frame, in_vport, vports) if any(type(a) is OutputTrunc for a in _all(actions)) else None


__all__ = ["TruncFrame", "TruncTracker", "on_output", "tracker_for", "trunc_problem"]
