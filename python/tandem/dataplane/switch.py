"""``Switch``: the Rust OpenFlow 1.3 + POF pipeline (``tandem._dp.Pipeline``)
driven with rule-IR objects.

Ports are OpenFlow port numbers; ``process(in_port, frame)`` returns the frames
sent per port (a list of ``(port, bytes)``) and carries the controller copies
and drop reasons alongside. State lives in Rust (rules, groups, counters);
this wrapper only converts. Cost: one PyO3 call per rule or packet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from tandem import _dp
from tandem.rules.ir import Action, FlowMod, Group, Rule

from .convert import action_args, flow_mod_args, group_args, rule_args


class DataplaneError(ValueError):
    """The pipeline refused a rule or group; the message names it and why."""


def _describe(rule: Rule) -> str:
    try:
        from tandem.rules.ofctl import format_rule

        return format_rule(rule)
    except Exception:  # a POF rule has no ovs-ofctl form
        return f"table={rule.table},priority={rule.priority},{rule.match}"


class PacketInCopy(NamedTuple):
    """A copy of the packet for the controller: why, the frame, the table it was
    in and the cookie of the rule that sent it (all ones if no rule matched)."""

    reason: str
    frame: bytes
    table: int
    cookie: int
    # pipeline state a packet-in's match lists when not zero (tunnel_id, metadata, regN, pkt_mark)
    meta: tuple[tuple[str, int], ...] = ()
    userdata = b""  # (not a field) controller(userdata=...)'s bytes: see NxPacketInCopy


class NxPacketInCopy(PacketInCopy):
    """A packet-in of Open vSwitch's ``controller(userdata=...)``: ``userdata`` its bytes."""


class Fates(list):
    """``[(port, frame), ...]`` sent to ports, plus ``controller`` =
    ``[PacketInCopy, ...]`` and ``drops`` = ``[(reason, explanation)]``."""

    def __init__(self, outputs: list[tuple[int, bytes]], controller: list[PacketInCopy], drops: list[tuple[str, str]]):
        super().__init__(outputs)
        self.controller = controller
        self.drops = drops


def _fates(raw: list[tuple]) -> Fates:
    out, ctl, drops = [], [], []
    for kind, a, b, *more in raw:
        if kind == "controller":
            table, cookie, meta, userdata = more
            if userdata:
                c = NxPacketInCopy(a, b, table, cookie, tuple(meta))
                c.userdata = bytes(userdata)
                ctl.append(c)
            else:
                ctl.append(PacketInCopy(a, b, table, cookie, tuple(meta)))
        else:
            (out if kind == "output" else drops).append((a, b))
    return Fates(out, ctl, drops)


@dataclass(frozen=True)
class Trace:
    fates: Fates
    steps: list[str]

    def __str__(self) -> str:
        return "\n".join(self.steps)


class Switch:
    """One emulated OpenFlow switch with ``n_tables`` flow tables."""

    def __init__(self, ports: Iterable[int], n_tables: int = 1, *, drop_malformed: bool = True) -> None:
        self._p = _dp.Pipeline(n_tables)
        self._p.drop_malformed = drop_malformed
        self.n_tables = n_tables
        for port in ports:
            self._p.add_port(port)

    @property
    def ports(self) -> list[int]:
        return list(self._p.ports())

    @property
    def pipeline(self) -> "_dp.Pipeline":
        """The underlying Rust pipeline (for benchmarks)."""
        return self._p

    # -------------------------------------------------------------- rules
    def add_rule(self, rule: Rule) -> int:
        try:
            return self._p.flow_mod({"command": "add", **rule_args(rule)})[0]
        except ValueError as e:
            raise DataplaneError(f"rule {_describe(rule)}: {e}") from None

    def add_rules(self, rules: Iterable[Rule]) -> list[int]:
        return [self.add_rule(r) for r in rules]

    def flow_mod(self, fm: FlowMod) -> list[int]:
        try:
            return self._p.flow_mod(flow_mod_args(fm))
        except ValueError as e:
            raise DataplaneError(f"{fm.command} {_describe(fm.rule)}: {e}") from None

    def remove_rule(self, rule_id: int) -> bool:
        return self._p.remove_rule(rule_id)

    def rule_stats(self, rule_id: int) -> tuple[int, int] | None:
        return self._p.rule_stats(rule_id)

    @property
    def n_rules(self) -> int:
        return self._p.n_rules()

    # -------------------------------------------------------------- groups
    def add_group(self, group: Group) -> None:
        try:
            self._p.add_group(*group_args(group))
        except ValueError as e:
            raise DataplaneError(f"group {group.group_id}: {e}") from None

    def add_groups(self, groups: Iterable[Group]) -> None:
        for g in groups:
            self.add_group(g)

    def remove_group(self, group_id: int) -> bool:
        return self._p.remove_group(group_id)

    # -------------------------------------------------------------- packets
    def process(self, in_port: int, frame: bytes) -> Fates:
        return _fates(self._p.process(in_port, frame))

    def packet_out(self, in_port: int, actions: Sequence[Action], frame: bytes) -> Fates:
        """A PACKET_OUT's ``actions`` on ``frame`` from ``in_port``, run on this switch's
        groups, tables and tracker (dp-core ``pipeline/packet_out.rs``)."""
        try:
            return _fates(self._p.packet_out(in_port, [action_args(a) for a in actions], frame))
        except ValueError as e:
            raise DataplaneError(f"packet out: {e}") from None

    def trace(self, in_port: int, frame: bytes) -> Trace:
        raw, steps = self._p.trace(in_port, frame)
        return Trace(_fates(raw), steps)

    def counters(self) -> dict[str, int]:
        return dict(self._p.counters())

    def set_cache_enabled(self, on: bool) -> None:
        self._p.set_cache_enabled(on)
