"""In-memory fake backend for unit tests: flow and group tables per switch, no packets.

Implements the ``Backend`` contract on dicts: ``add`` replaces an entry with
the same (table, priority, match), ``modify_strict``/``delete_strict`` act
on exactly that entry, ``delete`` removes every entry of the table whose
match is at least as specific as the given one. Packet-outs are recorded in
``sent``, packet-ins to meter in ``metered``; tests drive events with ``inject_packet_in``/``emit`` and set
counters with ``set_counters``. ``fail_next`` makes the next op refuse with
an OpenFlow error, to test error paths.
State: tables, groups, counters, sent packets. Cost: O(n) per op.
"""

from __future__ import annotations

from typing import Sequence

from tandem.backends.base import (
    Backend, BackendError, FlowStats, GroupOp, group_command, MeterOp, Op, PacketIn, PairOp, PhysicalLayout, PortInfo,
    PortStats, TableStats,
)
from tandem.rules.ir import Action, Group, Match, Rule
from tandem.rules.meters import Meter, MeterStats

Key = tuple[int, int, Match]


def covers(general: Match, specific: Match) -> bool:
    """Every packet ``specific`` matches is matched by ``general`` (field-wise)."""
    for key, fm in general:
        other = specific.get(key)
        if other is None:
            return False
        gm = fm.mask if fm.mask is not None else -1
        om = other.mask if other.mask is not None else -1
        if (gm & ~om) & ((1 << 128) - 1) or (other.value & gm) != fm.value:
            return False
    return True


class FakeBackend(Backend):
    name = "fake"

    def __init__(self) -> None:
        super().__init__()
        self.layout: PhysicalLayout | None = None
        self.tables: dict[str, dict[Key, Rule]] = {}
        self.group_tables: dict[str, dict[int, Group]] = {}
        self.meter_tables: dict[str, dict[int, Meter]] = {}
        self.meter_counters: dict[tuple[str, int], MeterStats] = {}
        self.metered: list[tuple[str, int, bytes]] = []  # meter_packet_in's requests
        self.dropping: set[tuple[str, int]] = set()  # (switch, meter) whose meter_packet_in drops
        self.counters: dict[tuple[str, Key], tuple[int, int]] = {}
        self.port_counters: dict[tuple[str, int], PortStats] = {}
        self.lookups: dict[tuple[str, int], int] = {}  # (switch, table) -> lookups (set by tests)
        self.sent: list[tuple[str, int, tuple[Action, ...], bytes]] = []
        self.applied: list[list[Op]] = []  # every apply() batch, for ordering checks
        self.pairs: set[tuple[str, int, str, int]] = set()  # port pairs built (PairOp)
        self.fail_next: tuple[int, int] | None = None
        self.closed = False

    async def start(self, layout: PhysicalLayout) -> None:
        self.layout = layout
        for sw in layout.switches:
            self.tables[sw] = {}
            self.group_tables[sw] = {}

    async def close(self) -> None:
        self.closed = True

    def _table(self, switch: str) -> dict[Key, Rule]:
        if switch not in self.tables:
            raise BackendError(f"unknown switch {switch!r}; known: {', '.join(self.tables)}", switch)
        return self.tables[switch]

    async def apply(self, ops: Sequence[Op]) -> None:
        self.applied.append(list(ops))
        for op in ops:
            if self.fail_next is not None:
                err, self.fail_next = self.fail_next, None
                raise BackendError(f"switch {op.switch} refused {op!r} (injected)", op.switch, err, op)
            if isinstance(op, PairOp):
                self.pairs.add((op.switch, op.port, op.peer, op.peer_port))
                continue
            if isinstance(op, MeterOp):
                meters = self.meter_tables.setdefault(op.switch, {})
                if op.op == "delete":
                    for mid in ([*meters] if op.meter.meter_id == 0xFFFFFFFF else [op.meter.meter_id]):
                        meters.pop(mid, None)
                else:
                    meters[op.meter.meter_id] = op.meter
                continue
            gcmd = group_command(op)
            if gcmd is not None:
                groups = self.group_tables[op.switch]
                if gcmd == "delete":
                    groups.pop(op.group.group_id, None)
                else:
                    groups[op.group.group_id] = op.group
                continue
            table = self._table(op.switch)
            r = op.rule
            key = (r.table, r.priority, r.match)
            if op.op == "add":
                table[key] = r
                self.counters[(op.switch, key)] = (0, 0)
            elif op.op == "modify_strict":
                if key in table:
                    table[key] = Rule(r.match, r.instructions, r.table, r.priority, table[key].cookie,
                                      table[key].idle_timeout, table[key].hard_timeout)
            elif op.op == "delete_strict":
                table.pop(key, None)
            elif op.op == "delete":
                for k in [k for k in table if k[0] == r.table and covers(r.match, k[2])]:
                    del table[k]
            else:
                raise BackendError(f"switch {op.switch}: unknown flow op {op.op!r}", op.switch)

    async def clear(self, switch: str | None = None) -> None:
        for sw in [switch] if switch else list(self.tables):
            self._table(sw).clear()
            self.group_tables[sw].clear()
            self.meter_tables.pop(sw, None)

    async def packet_out(self, switch: str, in_port: int, actions: Sequence[Action], frame: bytes) -> None:
        self._table(switch)
        self.sent.append((switch, in_port, tuple(actions), frame))

    async def meter_packet_in(self, switch: str, meter_id: int, frame: bytes) -> bytes | None:
        """Recorded in ``metered``; passed, unless a test put (switch, meter) in ``dropping``
        (the fake keeps no token bucket)."""
        self.metered.append((switch, meter_id, frame))
        return None if (switch, meter_id) in self.dropping else frame

    def switches(self) -> list[str]:
        return list(self.tables)

    def ports(self, switch: str) -> list[PortInfo]:
        assert self.layout is not None
        built = {p for a, pa, b, pb in self.pairs for p in ((pa,) if a == switch else ()) + ((pb,) if b == switch else ())}
        return [PortInfo(p, f"{switch}-p{p}", hw_addr=0x02_00_00_00_00_00 + p)
                for p in sorted(set(self.layout.all_ports(switch)) | built)]

    def rules(self, switch: str) -> list[Rule]:
        return sorted(self._table(switch).values(), key=lambda r: (r.table, -r.priority, repr(r.match)))

    def set_counters(self, switch: str, rule: Rule, packets: int, nbytes: int) -> None:
        self.counters[(switch, (rule.table, rule.priority, rule.match))] = (packets, nbytes)

    async def flow_stats(self, switch: str) -> list[FlowStats]:
        out = []
        for k, r in self._table(switch).items():
            pk, by = self.counters.get((switch, k), (0, 0))
            out.append(FlowStats(r, packet_count=pk, byte_count=by))
        return out

    async def table_stats(self, switch: str) -> list[TableStats]:
        """Matched = the table's rule counters; lookups as set in ``lookups`` (at least matched)."""
        per: dict[int, list[int]] = {}
        for k, r in self._table(switch).items():
            e = per.setdefault(r.table, [0, 0])
            e[0] += 1
            e[1] += self.counters.get((switch, k), (0, 0))[0]
        for (sw, t), _ in self.lookups.items():
            if sw == switch:
                per.setdefault(t, [0, 0])
        return [TableStats(t, n, max(m, self.lookups.get((switch, t), 0)), m) for t, (n, m) in sorted(per.items())]

    async def port_stats(self, switch: str) -> list[PortStats]:
        assert self.layout is not None
        return [self.port_counters.get((switch, p), PortStats(p)) for p in self.layout.all_ports(switch)]

    async def groups(self, switch: str) -> list[Group]:
        return list(self.group_tables[switch].values())

    async def meter_stats(self, switch: str) -> list[MeterStats]:
        return [self.meter_counters.get((switch, m), MeterStats(m, band_stats=tuple((0, 0) for _ in cfg.bands)))
                for m, cfg in sorted(self.meter_tables.get(switch, {}).items())]

    def inject_packet_in(self, switch: str, in_port: int, frame: bytes, reason: int = 1, table: int = 0, cookie: int = 0) -> None:
        self.emit(PacketIn(switch, in_port, frame, reason, table, cookie, len(frame)))
