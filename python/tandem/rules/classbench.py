"""ClassBench / dpdk-test-acl 5-tuple rule and trace files.

Rule lines (as ``classbench_gen.py`` and ClassBench's filter sets write them,
first line highest priority)::

    @SRC/LEN  DST/LEN  SPORT_LO : SPORT_HI  DPORT_LO : DPORT_HI  PROTO/MASK  [anything]

Trace lines: ``SRC DST SPORT DPORT PROTO [anything]`` with addresses as
integers (``0x…`` or decimal) or dotted quads. Blank lines and ``#`` comments
are skipped. Errors name ``file:line:col: field: message``.

``to_openflow`` turns the rules into OpenFlow rules for a switch table: port
ranges become prefix-masked port matches, and a port range on a rule without
a protocol needs one copy per protocol (OpenFlow has no port without one); the
dp-core classifier reads the same files directly and holds such rules, and
any port range, as one rule (``tandem._dp.AclBench``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tandem.rules.ir import ApplyActions, Match, Output, Rule


class ClassBenchError(ValueError):
    """A malformed rule or trace line."""


@dataclass(frozen=True)
class AclRule:
    src: int
    src_len: int
    dst: int
    dst_len: int
    sport: tuple[int, int]
    dport: tuple[int, int]
    proto: int
    proto_mask: int

    def matches(self, p: "AclPacket") -> bool:
        def pre(v: int, rv: int, n: int) -> bool:
            return n == 0 or (v >> (32 - n)) == (rv >> (32 - n))

        return (pre(p.src, self.src, self.src_len) and pre(p.dst, self.dst, self.dst_len)
                and self.sport[0] <= p.sport <= self.sport[1] and self.dport[0] <= p.dport <= self.dport[1]
                and (p.proto & self.proto_mask) == (self.proto & self.proto_mask))


@dataclass(frozen=True)
class AclPacket:
    src: int
    dst: int
    sport: int
    dport: int
    proto: int


class _Line:
    """A cursor over one line, for column-exact errors."""

    def __init__(self, text: str, where: str, lineno: int):
        self.t, self.i, self.where, self.lineno = text, 0, where, lineno

    def error(self, field: str, msg: str, col: int | None = None) -> ClassBenchError:
        return ClassBenchError(f"{self.where}:{self.lineno}:{(self.i if col is None else col) + 1}: {field}: {msg}")

    def skip_ws(self) -> None:
        while self.i < len(self.t) and self.t[self.i] in " \t":
            self.i += 1

    def word(self, field: str, stop: str = " \t") -> tuple[str, int]:
        self.skip_ws()
        start = self.i
        while self.i < len(self.t) and self.t[self.i] not in stop:
            self.i += 1
        if self.i == start:
            raise self.error(field, "missing")
        return self.t[start:self.i], start

    def expect(self, ch: str, field: str) -> None:
        self.skip_ws()
        if self.i >= len(self.t) or self.t[self.i] != ch:
            raise self.error(field, f"expected '{ch}'")
        self.i += 1

    def number(self, field: str, bits: int, stop: str = " \t") -> int:
        text, col = self.word(field, stop)
        try:
            v = int(text, 0)
        except ValueError:
            raise self.error(field, f"not a number: {text!r}", col) from None
        if not 0 <= v < (1 << bits):
            raise self.error(field, f"{v} does not fit in {bits} bits", col)
        return v

    def address(self, field: str, stop: str = " \t") -> int:
        text, col = self.word(field, stop)
        if "." in text:
            parts = text.split(".")
            if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
                raise self.error(field, f"not an IPv4 address: {text!r}", col)
            a, b, c, d = (int(p) for p in parts)
            return (a << 24) | (b << 16) | (c << 8) | d
        try:
            v = int(text, 0)
        except ValueError:
            raise self.error(field, f"not an IPv4 address: {text!r}", col) from None
        if not 0 <= v < 1 << 32:
            raise self.error(field, f"{v} does not fit in 32 bits", col)
        return v


def _prefix(ln: _Line, field: str) -> tuple[int, int]:
    addr = ln.address(field, stop=" \t/")
    ln.expect("/", field)
    col = ln.i
    n = ln.number(field + " prefix length", 6)
    if n > 32:
        raise ln.error(field + " prefix length", f"{n} is longer than 32", col)
    return addr, n


def _range(ln: _Line, field: str) -> tuple[int, int]:
    ln.skip_ws()
    col = ln.i
    lo = ln.number(field, 16, stop=" \t:")
    ln.expect(":", field)
    hi = ln.number(field, 16)
    if lo > hi:
        raise ln.error(field, f"empty range {lo} : {hi}", col)
    return lo, hi


def parse_rules(text: str, source: str = "<rules>") -> list[AclRule]:
    rules = []
    for n, raw in enumerate(text.splitlines(), start=1):
        body = raw.split("#", 1)[0].rstrip()
        if not body.strip():
            continue
        ln = _Line(body, source, n)
        ln.skip_ws()
        if ln.i >= len(body) or body[ln.i] != "@":
            raise ln.error("rule", "a rule line starts with '@'")
        ln.i += 1
        src, sl = _prefix(ln, "source")
        dst, dl = _prefix(ln, "destination")
        sport = _range(ln, "source port")
        dport = _range(ln, "destination port")
        proto = ln.number("protocol", 8, stop=" \t/")
        ln.expect("/", "protocol")
        pmask = ln.number("protocol mask", 8)
        rules.append(AclRule(src, sl, dst, dl, sport, dport, proto & pmask, pmask))
    if not rules:
        raise ClassBenchError(f"{source}: no rules")
    return rules


def parse_trace(text: str, source: str = "<trace>") -> list[AclPacket]:
    pkts = []
    for n, raw in enumerate(text.splitlines(), start=1):
        body = raw.split("#", 1)[0].rstrip()
        if not body.strip():
            continue
        ln = _Line(body, source, n)
        pkts.append(AclPacket(ln.address("source"), ln.address("destination"), ln.number("source port", 16),
                              ln.number("destination port", 16), ln.number("protocol", 8)))
    if not pkts:
        raise ClassBenchError(f"{source}: no packets")
    return pkts


def load(rules: Path, trace: Path) -> tuple[list[AclRule], list[AclPacket]]:
    """Both files, with errors that name them."""
    try:
        rt, tt = rules.read_text(), trace.read_text()
    except OSError as e:
        raise ClassBenchError(f"{e.filename}: {e.strerror}") from None
    return parse_rules(rt, str(rules)), parse_trace(tt, str(trace))


def range_prefixes(lo: int, hi: int, bits: int = 16) -> list[tuple[int, int]]:
    """The fewest (value, mask) prefixes covering exactly [lo, hi]."""
    out = []
    full = (1 << bits) - 1
    while lo <= hi:
        size = lo & -lo if lo else 1 << bits
        while size > hi - lo + 1:
            size >>= 1
        out.append((lo, full & ~(size - 1)))
        lo += size
    return out


def to_openflow(rules: list[AclRule], ports: list[int], table: int = 0) -> list[Rule]:
    """OpenFlow rules for a table: rule i gets priority len(rules) - i and
    outputs to ``ports[i % len(ports)]``."""
    n = len(rules)
    if n >= 65535:
        raise ClassBenchError(f"{n} rules do not fit OpenFlow's 16-bit priorities")
    out = []
    for i, r in enumerate(rules):
        base: dict = {"eth_type": 0x0800}
        if r.src_len:
            m = (0xFFFFFFFF << (32 - r.src_len)) & 0xFFFFFFFF
            base["ipv4_src"] = (r.src & m, m)
        if r.dst_len:
            m = (0xFFFFFFFF << (32 - r.dst_len)) & 0xFFFFFFFF
            base["ipv4_dst"] = (r.dst & m, m)
        any_ports = r.sport == (0, 0xFFFF) and r.dport == (0, 0xFFFF)
        if r.proto_mask == 0xFF:
            protos = [r.proto]
        elif r.proto_mask == 0 and not any_ports:
            protos = [6, 17]  # a port needs a protocol in OpenFlow
        elif r.proto_mask == 0:
            protos = [None]
        else:
            raise ClassBenchError(f"rule {i + 1}: protocol mask 0x{r.proto_mask:02x} has no OpenFlow form (0x00 or 0xff)")
        act = (ApplyActions((Output(ports[i % len(ports)]),)),)
        for proto in protos:
            m = dict(base)
            if proto is not None:
                m["ip_proto"] = proto
            name = {6: "tcp", 17: "udp"}.get(proto) if proto is not None else None
            if name is None and not any_ports:
                raise ClassBenchError(f"rule {i + 1}: port ranges need protocol tcp or udp in OpenFlow, not {proto}")
            s_list = [None] if r.sport == (0, 0xFFFF) else range_prefixes(*r.sport)
            d_list = [None] if r.dport == (0, 0xFFFF) else range_prefixes(*r.dport)
            for sp in s_list:
                for dp in d_list:
                    mm = dict(m)
                    if sp is not None:
                        mm[f"{name}_src"] = sp
                    if dp is not None:
                        mm[f"{name}_dst"] = dp
                    out.append(Rule(Match.of(**mm), act, table=table, priority=n - i))
    return out


def first_match(rules: list[AclRule], p: AclPacket) -> int:
    """Index of the first rule matching ``p`` (-1: none): the slow reference."""
    for i, r in enumerate(rules):
        if r.matches(p):
            return i
    return -1
