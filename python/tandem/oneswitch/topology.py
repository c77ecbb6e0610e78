"""OneSwitch topology: the physical switches behind the one virtual switch.

Inputs: a YAML file (or dict), validated as the pydantic ``TopologyFile``, with ``switches`` (name -> {kind: host|snic}),
``links`` (PCIe port pairs ``{a: "sw:port", b: "sw:port"}``) and ``ports``
(virtual port number -> ``"sw:port"``). Output: an immutable ``Topology`` with
the port map and shortest paths between switches (breadth-first search over
the links; with one host and k-1 sNICs every sNIC-to-sNIC path transits the
host). State: none beyond the frozen model. Cost: O(switches + links) per
query after an O(switches x links) path table built once per topology.

Every validation error names the YAML path (``links[1].b``) and, when loaded
from a file, the file, line and column (the scenario loader reads the file).
"""

from __future__ import annotations

from collections import deque
import re
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError


MAX_VIRTUAL_PORT = 0xFFFFFF00  # OFPP_MAX: above it are the reserved ports
MAX_PHYSICAL_PORT = 0xFEFF  # largest ofport_request Open vSwitch accepts


class TopologyError(ValueError):
    """A topology that cannot be used; the message names the place and the problem."""


@dataclass(frozen=True, order=True)
class PortRef:
    """A physical port: OpenFlow port ``port`` on switch ``switch``."""

    switch: str
    port: int

    @classmethod
    def parse(cls, text: object, where: str = "port") -> "PortRef":
        problem = _port_problem(text)
        if problem:
            raise TopologyError(f"{where}: {problem}")
        sw, _, num = str(text).partition(":")
        return cls(sw.strip(), int(num))

    def __str__(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True)
class Link:
    """One PCIe port pair joining two switches."""

    a: PortRef
    b: PortRef

    def end_on(self, switch: str) -> tuple[PortRef, PortRef]:
        """(local end, far end) seen from ``switch``."""
        return (self.a, self.b) if self.a.switch == switch else (self.b, self.a)


SwitchKind = Literal["host", "snic"]


@dataclass(frozen=True)
class Topology:
    """Switches, PCIe links and the virtual-to-physical port map (immutable)."""

    switches: tuple[tuple[str, SwitchKind], ...]
    links: tuple[Link, ...]
    ports: tuple[tuple[int, PortRef], ...]

    # ------------------------------------------------------------ construction
    @classmethod
    def build(cls, switches: Mapping[str, str], links: list[tuple[str, str]], ports: Mapping[int, str]) -> "Topology":
        """Convenience constructor for code and tests: same checks as the YAML loader."""
        return from_dict({
            "switches": {n: {"kind": k} for n, k in switches.items()},
            "links": [{"a": a, "b": b} for a, b in links],
            "ports": dict(ports),
        })

    def with_port(self, vport: int, new: PortRef) -> "Topology":
        """The same topology with virtual port ``vport`` mapped to ``new``."""
        if vport not in self.port_map:
            raise TopologyError(f"ports: virtual port {vport} does not exist")
        ports = tuple((v, new if v == vport else p) for v, p in self.ports)
        topo = Topology(self.switches, self.links, ports)
        topo.validate()
        return topo

    def validate(self) -> None:
        names = {n for n, _ in self.switches}
        used: dict[PortRef, str] = {}

        def claim(ref: PortRef, where: str) -> None:
            if ref.switch not in names:
                raise TopologyError(f"{where}: unknown switch {ref.switch!r} (known: {', '.join(sorted(names))})")
            if ref in used:
                raise TopologyError(f"{where}: physical port {ref} is already used by {used[ref]}")
            used[ref] = where

        for i, link in enumerate(self.links):
            claim(link.a, f"links[{i}].a")
            claim(link.b, f"links[{i}].b")
            if link.a.switch == link.b.switch:
                raise TopologyError(f"links[{i}]: a link must join two different switches, both ends are on {link.a.switch!r}")
        for v, ref in self.ports:
            if not 1 <= v <= MAX_VIRTUAL_PORT:
                raise TopologyError(f"ports.{v}: virtual port number outside 1..{MAX_VIRTUAL_PORT:#x}")
            claim(ref, f"ports.{v}")
        hosts = [n for n, k in self.switches if k == "host"]
        if len(hosts) != 1:
            raise TopologyError(f"switches: need exactly one switch of kind host, found {len(hosts)} ({', '.join(hosts) or 'none'})")
        reach = self._bfs(hosts[0])
        for n, _ in self.switches:
            if n not in reach:
                raise TopologyError(f"switches.{n}: not connected to host {hosts[0]!r} by any chain of links")

    # ------------------------------------------------------------ queries
    @cached_property
    def port_map(self) -> dict[int, PortRef]:
        return dict(self.ports)

    @cached_property
    def switch_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.switches)

    @property
    def host(self) -> str:
        return next(n for n, k in self.switches if k == "host")

    @cached_property
    def _local(self) -> dict[str, tuple[int, ...]]:
        out: dict[str, list[int]] = {n: [] for n in self.switch_names}
        for v, ref in sorted(self.ports):
            out[ref.switch].append(v)
        return {n: tuple(vs) for n, vs in out.items()}

    def local_vports(self, switch: str) -> tuple[int, ...]:
        """Virtual ports mapped onto ``switch``, ascending."""
        return self._local[switch]

    @cached_property
    def ingress_switches(self) -> tuple[str, ...]:
        """Switches where virtual traffic can enter: those with virtual ports, and the
        host, whose LOCAL port is the virtual switch's LOCAL port."""
        host = self.host
        return tuple(n for n in self.switch_names if self._local[n] or n == host)

    @cached_property
    def physical_to_virtual(self) -> dict[PortRef, int]:
        return {ref: v for v, ref in self.ports}

    def link_ports(self, switch: str) -> tuple[int, ...]:
        return tuple(sorted(l.end_on(switch)[0].port for l in self.links if switch in (l.a.switch, l.b.switch)))

    def _neighbors(self, switch: str) -> list[tuple[str, int]]:
        out = []
        for l in self.links:
            if switch in (l.a.switch, l.b.switch):
                mine, far = l.end_on(switch)
                out.append((far.switch, mine.port))
        return sorted(out)

    def _bfs(self, root: str) -> dict[str, tuple[str, int] | None]:
        """Parent pointers toward ``root``: node -> (next switch toward root, out port)."""
        parent: dict[str, tuple[str, int] | None] = {root: None}
        q = deque([root])
        while q:
            cur = q.popleft()
            for nb, _ in self._neighbors(cur):
                if nb not in parent:
                    # nb reaches root via cur: its out port is nb's end of the link to cur
                    port = next(p for s, p in self._neighbors(nb) if s == cur)
                    parent[nb] = (cur, port)
                    q.append(nb)
        return parent

    @cached_property
    def _toward(self) -> dict[str, dict[str, tuple[str, int] | None]]:
        return {dst: self._bfs(dst) for dst in self.switch_names}

    def next_hop(self, src: str, dst: str) -> tuple[str, int]:
        """(next switch, out port on ``src``) on a shortest path from src to dst (src != dst)."""
        hop = self._toward[dst].get(src)
        if hop is None:
            raise TopologyError(f"no path from {src!r} to {dst!r}")
        return hop

    def path(self, src: str, dst: str) -> list[str]:
        """Switches from src to dst inclusive along the shortest path."""
        out = [src]
        while out[-1] != dst:
            out.append(self.next_hop(out[-1], dst)[0])
        return out


# ---------------------------------------------------------------- loading
#
# The file format is a small pydantic model of the same schema family as the
# scenario (``extra="forbid"``, bounded numbers), validated with the scenario
# loader's error translation (``tandem.model.load.translate``) and converted
# into the ``Topology`` dataclass; the cross-checks that need the whole
# topology (known switches, ports used once, one host, connected) are
# ``Topology.validate``.


def _plain(msg: str) -> PydanticCustomError:
    return PydanticCustomError("plain", "{m}", {"m": msg})


def _port_problem(text: object) -> str | None:
    """Why ``text`` is not a "switch:port" physical port (None if it is one)."""
    if not isinstance(text, str) or text.count(":") != 1:
        return f"expected \"switch:port\", got {text!r}"
    sw, _, num = text.partition(":")
    if not sw or not (num.strip().isascii() and num.strip().isdigit()):
        return f"expected \"switch:port\" with a decimal port number, got {text!r}"
    if not 1 <= int(num) <= MAX_PHYSICAL_PORT:
        return f"physical port {int(num)} outside 1..{MAX_PHYSICAL_PORT}"
    return None


def _port_ref(v: Any) -> PortRef:
    problem = _port_problem(v)
    if problem:
        raise _plain(problem)
    return PortRef.parse(v)


def _switch_name(v: Any) -> str:
    if not isinstance(v, str) or not v or ":" in v:
        raise _plain("a switch name must be a non-empty string without ':'")
    return v


def _switch_kind(v: Any) -> str:
    if v not in ("host", "snic"):
        raise _plain(f"expected host or snic, got {v!r}")
    return v


def _virtual_port(v: Any) -> int:
    if isinstance(v, str) and v.isdigit():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise _plain("a virtual port must be an integer")
    if not 1 <= v <= MAX_VIRTUAL_PORT:
        raise _plain(f"virtual port number outside 1..{MAX_VIRTUAL_PORT:#x}")
    return v


PortText = Annotated[Any, AfterValidator(_port_ref)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class SwitchSpec(_Strict):
    kind: Annotated[Any, AfterValidator(_switch_kind)]


class LinkSpec(_Strict):
    """One PCIe port pair: ``{a: "sw:port", b: "sw:port"}``."""

    a: PortText
    b: PortText


class TopologyFile(_Strict):
    """A stand-alone OneSwitch topology file (docs/oneswitch.md)."""

    switches: dict[Annotated[Any, AfterValidator(_switch_name)], SwitchSpec] = Field(min_length=1)
    links: Optional[list[LinkSpec]] = None
    ports: Optional[dict[Annotated[Any, AfterValidator(_virtual_port)], PortText]] = None

    def to_topology(self) -> Topology:
        """The ``Topology`` (checked with ``Topology.validate``)."""
        topo = Topology(tuple((n, s.kind) for n, s in self.switches.items()),
                        tuple(Link(l.a, l.b) for l in self.links or []),
                        tuple(sorted((self.ports or {}).items())))
        topo.validate()
        return topo


def _non_text_key(data: dict) -> tuple | None:
    """The first key that is not text where the file expects field names."""
    def first(m: Any, at: tuple) -> tuple | None:
        if isinstance(m, dict):
            for k in m:
                if not isinstance(k, str):
                    return at + (k,)
        return None

    hit = first(data, ())
    sw = data.get("switches")
    if hit is None and isinstance(sw, dict):
        hit = next((h for n, spec in sw.items() if (h := first(spec, ("switches", n))) is not None), None)
    links = data.get("links")
    if hit is None and isinstance(links, list):
        hit = next((h for i, l in enumerate(links) if (h := first(l, ("links", i))) is not None), None)
    return hit


def _validate(data: Any, file: str | None = None, values: Mapping | None = None, keys: Mapping | None = None) -> Topology:
    from tandem.model.load import Problem, _dotted, translate

    values, keys = values or {}, keys or {}

    def fail(problems: list) -> TopologyError:
        # ports is a mapping: its integer keys read ports.3, not a list's ports[3]
        problems = [replace(p, path=re.sub(r"^ports\[(\d+)\]", r"ports.\1", p.path)) for p in problems]
        if file is None:
            return TopologyError("\n".join(f"{p.path}: {p.message}" if p.path else p.message for p in problems))
        return TopologyError("\n".join(p.render(file) for p in problems))

    if not isinstance(data, dict):
        raise fail([Problem("top level", "expected a mapping with switches, links, ports", *(values.get(()) or (None, None)))])
    bad = _non_text_key(data)
    if bad is not None:
        mark = keys.get(bad) or values.get(bad[:-1]) or (None, None)
        where = _dotted(bad[:-1]) + ("." if len(bad) > 1 else "") + str(bad[-1])  # a key, not a list index
        raise fail([Problem(where, "unknown key", *mark)])
    try:
        spec = TopologyFile.model_validate(data)
    except ValidationError as e:
        raise fail(translate(e, values, keys, TopologyFile)) from None
    return spec.to_topology()


def from_dict(data: Any) -> Topology:
    """Validate a topology mapping (``TopologyFile``) into a ``Topology``;
    errors raise ``TopologyError`` as ``yaml.path: problem``."""
    return _validate(data)


def _path_tuple(ypath: str) -> tuple:
    """"links[1].b" -> ("links", 1, "b"); "ports.3" -> ("ports", 3)."""
    out: list = []
    for part in ypath.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("[") and part.endswith("]") and part[1:-1].isdigit():
            out.append(int(part[1:-1]))
        elif part.isdigit():
            out.append(int(part))
        else:
            out.append(part)
    return tuple(out)


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology YAML file with the scenario loader
    (``tandem.model.load.read_yaml``: YAML 1.2 booleans, duplicate keys are
    errors, every node's line and column); errors say
    ``file:line:col: yaml.path: problem``."""
    from tandem.model.load import ScenarioError, read_yaml

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TopologyError(f"{p}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        data, values, keys = read_yaml(text, str(p))
    except ScenarioError as e:
        raise TopologyError(str(e).replace("a scenario is a mapping with name, devices, …",
                                           "a topology is a mapping with switches, links, ports")) from None
    try:
        return _validate(data, str(p), values, keys)
    except TopologyError as e:
        msg = str(e)
        if msg.startswith(f"{p}:"):  # schema problems, already placed by the loader
            raise
        ypath = msg.split(":", 1)[0]
        loc = _path_tuple(ypath)
        mark = None
        if "unknown key" in msg and loc in keys:
            mark = keys[loc]
        while mark is None and loc:
            mark = values.get(loc) or values.get(tuple(str(x) for x in loc))
            loc = loc[:-1]
        mark = mark or values.get(())
        raise TopologyError(f"{p}:{mark[0]}:{mark[1]}: {msg}" if mark else f"{p}: {msg}") from None
