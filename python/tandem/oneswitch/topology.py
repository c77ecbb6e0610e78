"""OneSwitch topology: the physical switches behind the one virtual switch.

Inputs: a YAML file (or dict) with ``switches`` (name -> {kind: host|snic}),
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
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Mapping


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
        if not isinstance(text, str) or text.count(":") != 1:
            raise TopologyError(f"{where}: expected \"switch:port\", got {text!r}")
        sw, _, num = text.partition(":")
        if not sw or not num.strip().isdigit():
            raise TopologyError(f"{where}: expected \"switch:port\" with a decimal port number, got {text!r}")
        port = int(num)
        if not 1 <= port <= MAX_PHYSICAL_PORT:
            raise TopologyError(f"{where}: physical port {port} outside 1..{MAX_PHYSICAL_PORT}")
        return cls(sw.strip(), port)

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
        """Switches where virtual traffic can enter (those with virtual ports)."""
        return tuple(n for n in self.switch_names if self._local[n])

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


def from_dict(data: Any) -> Topology:
    if not isinstance(data, dict):
        raise TopologyError("top level: expected a mapping with switches, links, ports")
    unknown = set(data) - {"switches", "links", "ports"}
    if unknown:
        raise TopologyError(f"{sorted(unknown, key=str)[0]}: unknown key (expected switches, links, ports)")
    sw = data.get("switches")
    if not isinstance(sw, dict) or not sw:
        raise TopologyError("switches: expected a non-empty mapping of switch name -> {kind: host|snic}")
    switches = []
    for name, spec in sw.items():
        if not isinstance(name, str) or not name or ":" in name:
            raise TopologyError(f"switches.{name}: a switch name must be a non-empty string without ':'")
        kind = spec.get("kind") if isinstance(spec, dict) else None
        if kind not in ("host", "snic"):
            raise TopologyError(f"switches.{name}.kind: expected host or snic, got {kind!r}")
        if set(spec) - {"kind"}:
            raise TopologyError(f"switches.{name}.{sorted(set(spec) - {'kind'}, key=str)[0]}: unknown key (expected kind)")
        switches.append((name, kind))
    raw_links = data.get("links") or []
    if not isinstance(raw_links, list):
        raise TopologyError("links: expected a list of {a: \"sw:port\", b: \"sw:port\"}")
    links = []
    for i, l in enumerate(raw_links):
        if not isinstance(l, dict) or set(l) != {"a", "b"}:
            raise TopologyError(f"links[{i}]: expected {{a: \"sw:port\", b: \"sw:port\"}}")
        links.append(Link(PortRef.parse(l["a"], f"links[{i}].a"), PortRef.parse(l["b"], f"links[{i}].b")))
    raw_ports = data.get("ports") or {}
    if not isinstance(raw_ports, dict):
        raise TopologyError("ports: expected a mapping of virtual port number -> \"sw:port\"")
    ports = []
    for v, ref in raw_ports.items():
        if isinstance(v, str) and v.isdigit():
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool):
            raise TopologyError(f"ports.{v}: a virtual port must be an integer")
        ports.append((v, PortRef.parse(ref, f"ports.{v}")))
    topo = Topology(tuple(switches), tuple(links), tuple(sorted(ports)))
    topo.validate()
    return topo


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
        return from_dict(data)
    except TopologyError as e:
        msg = str(e)
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
