"""The OneSwitch oracle for rules that use connection tracking.

Open vSwitch's userspace datapath keeps one connection tracker per datapath, and
all bridges of one ``ovs-vswitchd`` (``datapath_type=dummy``) share that datapath:
a connection the reference bridge commits would be found by the physical bridges
too. ``SplitSandbox`` therefore runs the reference bridges (``Oracle``'s ``vref*``)
in a second sandbox, its own ``ovs-vswitchd`` with its own tracker, and looks like
one ``OvsSandbox`` to ``Oracle`` (each call goes to the sandbox that holds the
bridge it names). ``run_traces`` injects connection traces round by round
(``generate_ct.ct_traces``): each round's packets go in, both sides settle, and
outputs are compared, so every connection is replayed in order on both trackers.

``dp_core_vs_ovs`` checks the emulator's switch (dp-core's tracker) the same way
against one bridge. Used by tests/oneswitch/test_ct_oracle.py,
tests/dataplane/test_ct_dp_oracle.py and ``tandem bench ct_oracle``.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Sequence

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ir import Group, Rule
from tandem.testing.oneswitch_oracle import Oracle, OracleReport

if TYPE_CHECKING:
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology

_REF_PREFIX = "vref"
_bridges = itertools.count()


class SplitSandbox:
    """Two sandboxes behind ``OvsSandbox``'s interface: reference bridges in ``ref``."""

    def __init__(self) -> None:
        self.main = OvsSandbox()
        try:
            self.ref = OvsSandbox()
        except BaseException:
            self.main.close()
            raise

    def _of(self, bridge: str) -> OvsSandbox:
        return self.ref if bridge.startswith(_REF_PREFIX) else self.main

    def __getattr__(self, name: str):
        if name in ("settle", "appctl", "vsctl"):
            def both(*a, **k):
                out = getattr(self.main, name)(*a, **k)
                getattr(self.ref, name)(*a, **k)
                return out
            return both

        def one(bridge: str, *a, **k):
            return getattr(self._of(bridge), name)(bridge, *a, **k)
        return one

    @property
    def bridges(self) -> dict:
        return {**self.main.bridges, **self.ref.bridges}

    def add_patch(self, a_bridge: str, a_port: int, b_bridge: str, b_port: int) -> None:
        self.main.add_patch(a_bridge, a_port, b_bridge, b_port)

    def take_all_output(self) -> dict:
        return {**self.main.take_all_output(), **self.ref.take_all_output()}

    def close(self) -> None:
        try:
            self.main.close()
        finally:
            self.ref.close()

    def __enter__(self) -> "SplitSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_traces(o: Oracle, rounds: Sequence[Sequence[tuple[int, bytes]]]) -> OracleReport:
    """Inject ``rounds`` one after the other into both sides; the reports summed."""
    total = OracleReport()
    for packets in rounds:
        r = o.compare(list(packets))
        total.packets += r.packets
        total.outputs += r.outputs
        total.mismatches += r.mismatches
        total.expected_by_port.update(r.expected_by_port)
    return total


def dp_core_vs_ovs(sb: OvsSandbox, rules: Sequence[Rule], rounds: Sequence[Sequence[tuple[int, bytes]]],
                   ports: Sequence[int], n_tables: int = 3, groups: Sequence[Group] = (),
                   counters: dict | None = None) -> tuple[int, int, list[str]]:
    """The emulator's switch (dp-core, ``Switch``) against one OVS bridge of ``sb`` (a
    sandbox of its own: its tracker must start empty), both with ``rules`` (and ``groups``), on the
    connection traces ``rounds`` replayed round by round. Each frame gets a 4-byte id
    after its end, so every output is charged to the packet that caused it. Returns
    (packets, frames compared, one line per packet whose outputs differ)."""
    from collections import Counter

    from tandem.dataplane.switch import Switch
    from tandem.testing.ovs_flows import add_rules

    br = f"brct{next(_bridges)}"
    sb.add_bridge(br, list(ports))
    if groups:  # (groups first: a rule's group must exist)
        from tandem.rules.ofctl import format_group

        sb.add_groups(br, [format_group(g) for g in groups])
    add_rules(sb, br, rules)
    sw = Switch(ports, n_tables, drop_malformed=False)
    sw.add_groups(groups)
    sw.add_rules(rules)
    uid = 0
    n = frames = 0
    bad: list[str] = []
    for packets in rounds:
        ours: dict[bytes, Counter] = {}
        by_port: dict[int, list[bytes]] = {}  # OVS takes each port's frames in one go, port after port:
        for port, frame in packets:           # dp-core runs them in that order too
            uid += 1
            by_port.setdefault(port, []).append(frame + uid.to_bytes(4, "big"))
        for port, fs in by_port.items():
            for f in fs:
                ours[f[-4:]] = Counter((p, out) for p, out in sw.process(port, f))
            sb.inject(br, port, fs)
        sb.settle(quiet_s=0.05, timeout_s=60)
        theirs: dict[bytes, Counter] = {t: Counter() for t in ours}
        for p in ports:
            for f in sb.take_output(br, p):
                if f[-4:] in theirs:
                    theirs[f[-4:]][(p, f)] += 1
        n += len(packets)
        for (port, frame), tag in zip([(p, f[:-4]) for p, fs in by_port.items() for f in fs], ours):
            frames += sum(ours[tag].values())
            if ours[tag] != theirs[tag]:
                bad.append(f"in_port {port} frame {frame.hex()}: dp-core {sorted((p, len(f)) for p, f in ours[tag].elements())} "
                           f"OVS {sorted((p, len(f)) for p, f in theirs[tag].elements())}; dp-core only "
                           f"{sorted((p, f.hex()) for p, f in (ours[tag] - theirs[tag]).elements())}, OVS only "
                           f"{sorted((p, f.hex()) for p, f in (theirs[tag] - ours[tag]).elements())}")
    sb.del_bridge(br)
    if counters is not None:  # (dp-core's own counters, e.g. ct.alg.*, summed in)
        for k, v in sw.counters().items():
            counters[k] = counters.get(k, 0) + v
    return n, frames, bad


def ct_topologies() -> dict[str, "Topology"]:
    """The oracle's topologies: a host + 2 sNICs (a port on the host, one on snic0, two
    on snic1) and a chain (snic1 reaches the host through snic0)."""
    from tandem.oneswitch.topology import Topology

    return {
        "k3": Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                             [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                             {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1", 5: "snic1:2"}),
        "chain": Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:10", "s0:10"), ("s0:11", "s1:10")],
                                {1: "h:1", 2: "s0:1", 3: "s1:1", 4: "s1:2"}),
    }


def cross_pairs(topo: "Topology") -> list[tuple[int, int]]:
    """(client, server) virtual port pairs on different switches, and one pair on one sNIC."""
    pm = topo.port_map
    out = [(a, b) for a in pm for b in pm if pm[a].switch != pm[b].switch]
    same = [(a, b) for a in pm for b in pm if a != b and pm[a].switch == pm[b].switch != topo.host]
    return out + same[:1]


def translate_as_endpoint(topo: "Topology", rules: Sequence[Rule],
                          groups: Sequence[Group] = (), down: Sequence[int] = ()) -> tuple["OneSwitchState", list]:
    """``groups`` (first the extension plans a group with ct in a bucket needs), then
    ``rules`` added one by one the way the endpoint adds them: first the extension
    plans a ct rule needs (every sNIC port to the host), then the rule. Returns the
    state and every plan step in order."""
    from tandem.oneswitch.extension import extend, ports_to_extend
    from tandem.oneswitch.state import OneSwitchState
    from tandem.rules.ir import FlowMod

    state = OneSwitchState(topo)
    steps: list = []
    for v in down:  # (``down``: virtual ports set not live first, as port status tells the endpoint)
        steps += state.set_port_live(v, False).steps
    if groups:
        for plan in extend(state, ports_to_extend(state, None, groups)):
            steps += plan.steps
        steps += state.set_groups(groups).steps
    for r in rules:
        for plan in extend(state, ports_to_extend(state, r)):
            steps += plan.steps
        steps += state.apply(FlowMod("add", r)).steps
    return state, steps


def translation_vs_ovs(topo: "Topology", rules: Sequence[Rule], rounds: Sequence[Sequence[tuple[int, bytes]]],
                       groups: Sequence[Group] = (), megaflows: bool = True) -> tuple["OneSwitchState", OracleReport]:
    """OneSwitch's translation of ``rules`` and ``groups`` (``translate_as_endpoint``) on
    one OVS bridge per physical switch against one bridge with the virtual rules and
    groups (in a vswitchd of its own), on the connection traces ``rounds``
    (``megaflows=False``: exact datapath flows)."""
    from tandem.oneswitch.state import OneSwitchState

    state, steps = translate_as_endpoint(topo, rules, groups)
    with SplitSandbox() as sb, Oracle(sb, topo) as o:  # type: ignore[arg-type]
        if not megaflows:
            sb.appctl("upcall/disable-megaflows")
        o.load_virtual(rules, groups)
        o.load_translation(OneSwitchState(topo).translation())
        for step in steps:
            o.apply_step(step)
        for v, e in state.extensions.items():  # type: ignore[attr-defined]
            o.remap(v, e.hosted)
        return state, run_traces(o, rounds)
