"""The OneSwitch view of a scenario (pure): virtual ports, the derived topology
and the virtual rules.

Inputs: a validated ``Scenario`` and a placement (NF instance -> device).
Outputs:
- ``virtual_ports(sc)``: one virtual port per sNIC Ethernet port, per VM port
  and per NF port, numbered 1, 2, ... in that order (sNICs, then VMs, then
  NFs, each in file order). The numbering does not depend on the placement,
  so the controller's view stays the same when an NF moves.
- ``derive_topology(sc, placement)``: the OneSwitch ``Topology`` - one switch
  per device (kind host/snic), one PCIe port pair per link (port
  ``pcie_port`` on both ends of link i), and every virtual port ``v``
  on physical port ``v`` of the device it lives on (Ethernet ports on their
  sNIC, VM ports on the host, NF ports where the placement puts the NF).
- ``virtual_rules(sc)``: the controller's rules on the one virtual switch -
  the scenario's ``rules:`` when given, else ``chain_rules(sc)``.
- ``chain_rules_text(sc)``: the chains and element graphs compiled to the
  rules a controller would write (ovs-ofctl text), one direction, table 0:
  * each hop A -> B of a chain (ingress, NFs, egress) is
    ``priority=100,in_port=out(A),actions=output:in(B)``;
  * when two chains leave the same port for different next hops, their hops
    from that port match the IPv4 source prefix of the traffic sources that
    target each chain (``10.<i+1>.0.0/16``, the generator's addresses) at
    priority 200; a chain without such a source there is an error;
  * an element-graph node with several successors splits flows by the low 8
    bits of the TCP/UDP source port: successor k gets a share of the 256
    values proportional to its fraction (contiguous, written as masked
    matches, ``udp``/``tcp`` at priority 200); every second branching node
    (file order) reads those bits in reverse order, so a branch after a
    branch splits its flows independently of the first; other frames take
    the largest branch at priority 100;
  * a leaf node whose NF type drops gets ``actions=drop``; any other leaf
    goes to the graph's egress.
  Frames no rule matches are dropped as ``table_miss``.
State: none. Cost: linear in the ports, hops and rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from tandem.model.rules_text import RulesSourceError, rules_source
from tandem.rules.ir import Rule

from .topology import Topology

SPLIT_BITS = 8  # element-graph branches split the 256 values of tp_src's low byte


class ScenarioOneSwitchError(ValueError):
    """The scenario cannot be expressed as virtual ports and rules; names the part."""


@dataclass(frozen=True)
class VirtualPorts:
    number: dict[str, int]  # "snic0.eth0" / "vm1.eth0" / "fw1.in" -> virtual port
    kind: dict[str, str]  # name -> "eth" | "vm" | "nf"
    home: dict[str, str]  # name -> device for eth and VM ports (NF ports move with the NF)
    nf: dict[str, tuple[int, int]] = field(default_factory=dict)  # NF -> (in, out) virtual ports (equal for one-port NFs)

    def pcie_port(self, i: int) -> int:
        """The physical port of PCIe link i (file order) on both its ends."""
        return len(self.number) + 1 + i

    @property
    def name(self) -> dict[int, str]:
        return {v: n for n, v in self.number.items()}

    def external(self) -> list[int]:
        """Virtual ports where traffic enters or leaves the machine (sNIC Ethernet and VM ports)."""
        return [v for n, v in self.number.items() if self.kind[n] != "nf"]


def virtual_ports(sc) -> VirtualPorts:
    number: dict[str, int] = {}
    kind: dict[str, str] = {}
    home: dict[str, str] = {}
    nf: dict[str, tuple[int, int]] = {}

    def add(name: str, k: str) -> int:
        number[name] = len(number) + 1
        kind[name] = k
        return number[name]

    for sid, snic in sc.snics.items():
        for p in snic.ports:
            add(f"{sid}.{p}", "eth")
            home[f"{sid}.{p}"] = sid
    for vid, vm in sc.vms().items():
        for p in vm.ports:
            add(f"{vid}.{p}", "vm")
            home[f"{vid}.{p}"] = sc.host_id
    for nid, inst in sc.nfs().items():
        ports = [add(f"{nid}.{p}", "nf") for p in inst.ports[:2]]
        nf[nid] = (ports[0], ports[-1])
    return VirtualPorts(number, kind, home, nf)


def default_placement(sc) -> dict[str, str]:
    """Each NF on its pinned device, else on the host."""
    return {name: (inst.pin or sc.host_id) for name, inst in sc.nfs().items()}


def derive_topology(sc, placement: Optional[Mapping[str, str]] = None, vp: Optional[VirtualPorts] = None) -> Topology:
    """The OneSwitch topology of the scenario with its NFs where ``placement`` says."""
    vp = vp or virtual_ports(sc)
    place = dict(default_placement(sc), **(placement or {}))
    switches = {d: dev.kind for d, dev in sc.devices.items()}
    links = []
    for i, (lname, ln) in enumerate(sc.links.items()):
        links.append((f"{sc.host_id}:{vp.pcie_port(i)}", f"{ln.snic}:{vp.pcie_port(i)}"))
    ports: dict[int, str] = {}
    for name, v in vp.number.items():
        dev = vp.home.get(name) or place[name.split(".", 1)[0]]
        if dev not in switches:
            raise ScenarioOneSwitchError(f"NF {name.split('.', 1)[0]}: placed on unknown device {dev!r}")
        ports[v] = f"{dev}:{v}"
    return Topology.build(switches, links, ports)


# ---------------------------------------------------------------- chains -> virtual rules


def _endpoint_port(sc, vp: VirtualPorts, ref: Optional[str], default: Optional[str], what: str, into: bool) -> int:
    """The virtual port a chain enters (into=False: where frames come from) or leaves by."""
    ref = ref or default
    if ref is None:
        raise ScenarioOneSwitchError(f"{what}: no ingress/egress given and the scenario has no sNIC Ethernet port")
    head, _, port = ref.partition(".")
    if head in sc.devices:
        return vp.number[ref]
    if head in sc.vms():
        return vp.number[f"{head}.{port or sc.instances[head].ports[0]}"]
    if head in sc.nfs():
        i, o = vp.nf[head]
        return i if into else o
    raise ScenarioOneSwitchError(f"{what}: endpoint {ref!r} is not an sNIC port, VM or NF")


def _defaults(sc) -> tuple[Optional[str], Optional[str]]:
    first = next(iter(sc.snics), None)
    ports = list(sc.snics[first].ports) if first else []
    if not ports:
        return None, None
    return f"{first}.{ports[0]}", f"{first}.{ports[1 if len(ports) > 1 else 0]}"


def _source_prefixes(sc) -> dict[str, list[str]]:
    """target (chain/graph) -> IPv4 source prefixes of the generated sources aimed at it
    (source i of the file gets 10.<i+1>.0.0/16, as the emulator's generator does)."""
    out: dict[str, list[str]] = {}
    for i, (sname, src) in enumerate(sc.traffic.items()):
        if src.pattern != "replay":
            out.setdefault(src.target, []).append(f"10.{i + 1}.0.0/16")
    return out


def _split_masks(lo: int, hi: int, bits: int) -> list[tuple[int, int]]:
    """[lo, hi) of `bits`-bit values as (value, mask) prefixes."""
    out = []
    full = (1 << bits) - 1
    while lo < hi:
        size = lo & -lo if lo else 1 << bits
        while size > hi - lo:
            size >>= 1
        out.append((lo, full & ~(size - 1)))
        lo += size
    return out


def _reverse(x: int, bits: int) -> int:
    return int(format(x, f"0{bits}b")[::-1], 2)


def _shares(fractions: list[float], total: int) -> list[int]:
    """Whole shares of `total` proportional to `fractions` (largest remainder)."""
    s = sum(fractions)
    raw = [f / s * total for f in fractions]
    out = [int(x) for x in raw]
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)[: total - sum(out)]:
        out[i] += 1
    return out


def chain_rules_text(sc) -> list[str]:
    """The virtual rules the chains and element graphs imply, as ovs-ofctl lines
    (with ``#`` comments naming the hop)."""
    vp = virtual_ports(sc)
    d_in, d_out = _defaults(sc)
    prefixes = _source_prefixes(sc)
    hops: dict[int, dict[str, tuple[int, str]]] = {}  # in_port -> owner -> (out_port, comment)
    lines: list[str] = []
    name = vp.name

    def hop(owner: str, a: int, z: int) -> None:
        hops.setdefault(a, {})
        prev = hops[a].get(owner)
        if prev is not None and prev[0] != z:
            raise ScenarioOneSwitchError(f"{owner}: leaves port {name[a]} twice for different next hops")
        hops[a][owner] = (z, f"{owner}: {name[a]} -> {name[z]}")

    for cname, ch in sc.chains.items():
        owner = f"chains.{cname}"
        path = [_endpoint_port(sc, vp, ch.ingress, d_in, owner, into=False)]
        for n in ch.nfs:
            path += list(vp.nf[n])
        path.append(_endpoint_port(sc, vp, ch.egress, d_out, owner, into=True))
        for a, z in zip(path[0::2], path[1::2]):
            hop(owner, a, z)
    graph_lines: list[str] = []
    n_branch = 0
    for gname, g in sc.element_graphs.items():
        owner = f"element_graphs.{gname}"
        ing = _endpoint_port(sc, vp, g.ingress, d_in, owner, into=False)
        eg = _endpoint_port(sc, vp, g.egress, d_out, owner, into=True)
        hop(owner, ing, vp.nf[g.root][0])
        for n in g.nodes:
            out = vp.nf[n][1]
            succ = g.successors(n)
            if len(succ) == 1:
                hop(owner, out, vp.nf[succ[0].dst][0])
            elif not succ and "drop" in sc.nf_types[sc.instances[n].type].effective_actions:
                graph_lines.append(f"priority=100,in_port={out},actions=drop  # {owner}: {n} drops what it emits")
            elif not succ:
                hop(owner, out, eg)
            else:
                shares = _shares([e.fraction for e in succ], 1 << SPLIT_BITS)
                lo = 0
                flip = n_branch % 2 == 1  # alternate the bit order so successive splits are independent
                n_branch += 1
                for e, k in zip(succ, shares):
                    dst = vp.nf[e.dst][0]
                    for value, mask in _split_masks(lo, lo + k, SPLIT_BITS):
                        if flip:
                            value, mask = _reverse(value, SPLIT_BITS), _reverse(mask, SPLIT_BITS)
                        for proto in ("udp", "tcp"):
                            graph_lines.append(f"priority=200,{proto},in_port={out},tp_src={value:#x}/{mask:#x},"
                                               f"actions=output:{dst}  # {owner}: {n} -> {e.dst} ({k}/256 of flows)")
                    lo += k
                big = max(zip(shares, succ), key=lambda x: x[0])[1]
                graph_lines.append(f"priority=100,in_port={out},actions=output:{vp.nf[big.dst][0]}"
                                   f"  # {owner}: {n} -> {big.dst} (frames without TCP/UDP ports)")
    for a in sorted(hops):
        owners = hops[a]
        outs = {z for z, _ in owners.values()}
        if len(outs) == 1:
            z, comment = next(iter(owners.values()))
            lines.append(f"priority=100,in_port={a},actions=output:{z}  # {comment}")
            continue
        for owner, (z, comment) in owners.items():
            target = owner.split(".", 1)[1]
            pfx = prefixes.get(target)
            if not pfx:
                others = ", ".join(o for o in owners if o != owner)
                raise ScenarioOneSwitchError(
                    f"{owner}: shares port {name[a]} with {others} but goes elsewhere, and no generated traffic"
                    f" source targets it to tell its frames apart; give them distinct NF instances or write rules:")
            for p in pfx:
                lines.append(f"priority=200,ip,in_port={a},nw_src={p},actions=output:{z}  # {comment}")
    return lines + graph_lines


def chain_rules(sc) -> list[Rule]:
    from tandem.rules.ofctl import parse_rule

    return [parse_rule(line.split("#", 1)[0], "<chains>", i) for i, line in enumerate(chain_rules_text(sc), start=1)]


def virtual_rules(sc) -> list[Rule]:
    """The controller's rules on the virtual switch: ``rules:`` if given, else the chains compiled."""
    if not sc.rules:
        return chain_rules(sc)
    from tandem.rules.ofctl import parse_flows

    try:
        text, source = rules_source(sc)
    except RulesSourceError as e:
        raise ScenarioOneSwitchError(str(e)) from None
    return parse_flows(text, source)


def port_table(sc) -> list[tuple[int, str, str]]:
    """(virtual port, name, kind) for printing."""
    vp = virtual_ports(sc)
    return [(v, n, vp.kind[n]) for n, v in vp.number.items()]


# ---------------------------------------------------------------- untagged single-destination links


def untag_single_destination(per_switch: Mapping[str, list[Rule]], groups: Mapping[str, list], topo: Topology
                             ) -> tuple[dict[str, list[Rule]], int]:
    """OneSwitch marks every frame it sends over PCIe with its destination's flow
    id (``pkt_mark``). When everything switch A sends over one link direction
    carries the *same* id T and switch B delivers T by ``output:P`` to a local
    port, the mark says nothing: A may send the frame unmarked and B output what
    arrives on that link straight to P. This rewrites such directions:
    - on A, each ``set_field:T->pkt_mark, output:pA`` becomes ``output:pA``;
    - B gets ``table=0,priority=65535,in_port=pB -> output:P`` (its delivery rule
      for T stays, unused).
    A direction is left alone when any output to pA is not that exact marked
    form (groups, transit, several ids), B does anything else with T, or a
    table-0 copy on B without an in_port has priority 65535 (it would tie with
    the new rule for the unmarked frames).
    Pure; returns the new rule lists and how many directions were untagged."""
    from tandem.rules.ir import ApplyActions, Match, Output, SetField

    from .ids import DELIVERY_TABLE, INFRA_COOKIE, TAG_FIELD, WIRE_PRIORITY, is_delivery_key

    out = {s: list(rs) for s, rs in per_switch.items()}
    done = 0
    for link in topo.links:
        for a_end, b_end in ((link.a, link.b), (link.b, link.a)):
            a, pa, b, pb = a_end.switch, a_end.port, b_end.switch, b_end.port
            if any(Output(pa) in bk.actions for g in groups.get(a, ()) for bk in g.buckets):
                continue
            tags, ok, hits = set(), True, []
            for i, r in enumerate(out[a]):
                for ins in r.instructions:
                    acts = getattr(ins, "actions", ())
                    for j, act in enumerate(acts):
                        if act != Output(pa):
                            continue
                        mark = acts[j - 1] if j >= 1 else None
                        if isinstance(ins, ApplyActions) and isinstance(mark, SetField) and mark.field == TAG_FIELD:
                            tags.add(mark.value)
                            hits.append(i)
                        else:
                            ok = False
            if not ok or len(tags) != 1:
                continue
            tag = tags.pop()
            deliver = [r for r in out[b] if is_delivery_key((r.table, r.priority, r.match))
                       and r.match.get(TAG_FIELD).value == tag]
            if len(deliver) != 1 or any(r.table == DELIVERY_TABLE and r.priority == WIRE_PRIORITY
                                        and r.match.get("in_port") is None for r in out[b]):
                continue
            d_ins = deliver[0].instructions
            if not (len(d_ins) == 1 and isinstance(d_ins[0], ApplyActions) and len(d_ins[0].actions) == 1
                    and isinstance(d_ins[0].actions[0], Output)):
                continue
            port = d_ins[0].actions[0].port
            if port in topo.link_ports(b):
                continue
            out[b].insert(0, Rule(Match.of(in_port=pb), (ApplyActions((Output(port),)),), DELIVERY_TABLE, WIRE_PRIORITY,
                                  INFRA_COOKIE))
            for i in sorted(set(hits)):
                r = out[a][i]
                new_ins = []
                for ins in r.instructions:
                    if isinstance(ins, ApplyActions):
                        acts = ins.actions
                        res = [x for k, x in enumerate(acts)
                               if not (k + 1 < len(acts) and acts[k + 1] == Output(pa) and isinstance(x, SetField)
                                       and x.field == TAG_FIELD)]
                        ins = ApplyActions(tuple(res))
                    new_ins.append(ins)
                out[a][i] = Rule(r.match, tuple(new_ins), r.table, r.priority, r.cookie, r.idle_timeout, r.hard_timeout)
            done += 1
    return out, done
