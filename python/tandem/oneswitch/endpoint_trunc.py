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
no actions but the output. Clones (``clone_start``/``clone_end``), as Open vSwitch 3.1
translates them (``ofproto/trace-packet-out``, as in a flow: dp-core's pipeline/clone.rs):
a clone holding ``output_trunc`` in its own list commits where it starts and the frame
after it is as committed then (a datapath clone), unless it is the list's last action and
its list ends the PACKET_OUT, when it is translated inline and commits nothing
(``push_vlan,clone(output(port=2,max_len=20))`` sends 24 bytes, with any action after
the clone, even a note, 20); any other clone runs inline, its commits staying in force.
A datapath clone's own list ends the PACKET_OUT too (its last clone runs inline:
``clone(output(port=3,max_len=64),push_vlan,clone(output(port=4,max_len=24))),output:2``
sends 28 bytes to 4), an inline clone's only when the clone does.
Groups: the group and a bucket's start commit nothing; a bucket's output that sends
commits the bucket's frame (the walk's ``output`` with the bucket's changes), and that
commit stays after the group, whose changes do not (``group:1`` with a bucket
``push_vlan,output:3``, then ``output(port=2,max_len=20)`` sends 16 bytes; measured on
Open vSwitch 3.1, tests/endpoint/test_packet_out_trunc_groups.py). A bundle's chosen
member is an output (none chosen: nothing), ``bundle_load`` a load, an ``output_reg`` an
output to its register's port (``endpoint_output_reg.py``).
A PACKET_OUT holding ``output_trunc`` and ``output:TABLE`` or ``output:NORMAL`` is refused
(``trunc_problem``): the commits of the rules a lookup or NORMAL runs on the physical
switch are not modeled here.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from tandem.rules import ir
from tandem.rules.ir import Action, Output, OutputTrunc

from .endpoint_packet_in import changed_packet_in

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
        if isinstance(a, Output) and a.port in (ir.OFPP_TABLE, ir.OFPP_NORMAL):
            return (f"output(port=P,max_len=N) in a PACKET_OUT that holds output:{ir.RESERVED_PORT_NAMES[a.port]}: "
                    "OneSwitch does not follow Open vSwitch's commits in the rules it runs")
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

    def clone_start(self, a: ir.Clone, mods: Sequence[Action], last: bool) -> int | None:
        """At clone ``a`` (``last``: it ends the PACKET_OUT): the committed length to restore
        after it (a datapath clone), or None (translated inline, its commits stay)."""
        if last or not any(type(b) is OutputTrunc for b in a.actions):
            return None
        self.commit(mods)
        return self.committed

    def clone_end(self, was: int | None) -> None:
        if was is not None:
            self.committed = was

    def trunc(self, a: OutputTrunc, mods: Sequence[Action]) -> list[TruncFrame]:
        """The frame ``a`` sends (none to IN_PORT, the in_port or a reserved port but LOCAL)."""
        if not (a.port in self.vports and a.port != self.in_vport or a.port == ir.OFPP_LOCAL != self.in_vport):
            return []
        now = self.changed(mods)
        cut = max(0, self.committed - max(a.max_len, 14))
        self.committed = len(now)
        return [TruncFrame(a.port, now[:len(now) - cut])]  # (below 14 bytes: ``sent``)


def sent(port: int | TruncFrame, dead: set[int]) -> bool:
    """Does a frame to virtual port ``port`` (or a cut frame) leave Open vSwitch? A frame
    cut below an Ethernet header does not, nor any later frame of the PACKET_OUT to its
    port (Open vSwitch 3.1's datapath sends a port's frames as one batch, which stops at
    the short one: dp-core's pipeline/trunc.rs); ``dead`` holds those ports."""
    if type(port) is TruncFrame:
        if len(port.frame) < 14:
            dead.add(port.port)
        port = port.port
    return port not in dead


def on_output(tracker: TruncTracker | None, port, mods: Sequence[Action]) -> None:
    """(for the walk: a plain output or a packet-in, when the PACKET_OUT holds output_trunc)"""
    if tracker is not None:
        tracker.output(port if isinstance(port, int) else ir.OFPP_CONTROLLER, mods)


def tracker_for(actions: Sequence[Action], frame: bytes, in_vport: int, vports: Iterable[int]
                ) -> TruncTracker | None:
    return TruncTracker(frame, in_vport, vports) if any(type(a) is OutputTrunc for a in _all(actions)) else None


__all__ = ["TruncFrame", "TruncTracker", "on_output", "sent", "tracker_for", "trunc_problem"]
