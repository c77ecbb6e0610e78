"""Random UNO placement graphs for tests and benchmarks (seeded, pure).

Shape: about 1/10 of the nodes are sNIC Ethernet ports, 1/4 VMs, the rest NFs of
the paper's types (DPI n/h = 2, L7FW 4, SECGW 0.75; some accelerated, pinned to
an sNIC). NFs are cut into chains of 1–3; each chain carries traffic from a port
(north–south) or a VM (east–west) to a VM. Budgets T and D are set to a fraction
of the traffic / sNIC demand so both constraints matter.
"""

from __future__ import annotations

import numpy as np

from tandem.placement.uno.model import Edge, Node, Snic, UnoProblem

# cores per Gbps on the host and on the sNIC (DPI: 5 host / 10 sNIC cores at 9 Gbps)
NF_TYPES = {
    "dpi": (5 / 9, 10 / 9),
    "l7fw": (0.4, 1.6),
    "secgw": (0.8, 0.6),
}


def random_problem(n_nodes: int, seed: int = 0, snics: int = 1, resources: tuple[str, ...] = ("cores",),
                   pcie: str = "duplex", t_frac: float = 0.35, d_frac: float = 0.4,
                   accel_frac: float = 0.05) -> UnoProblem:
    rng = np.random.default_rng(seed)
    n_ports = max(1, n_nodes // 10)
    n_vms = max(1, n_nodes // 4)
    n_nfs = max(1, n_nodes - n_ports - n_vms)
    snic_names = [f"snic{k}" for k in range(snics)]
    ports = [f"eth{i}" for i in range(n_ports)]
    vms = [f"vm{i}" for i in range(n_vms)]
    nfs = [f"nf{i}" for i in range(n_nfs)]
    port_pin = {p: snic_names[int(rng.integers(snics))] for p in ports}
    kinds = rng.choice(list(NF_TYPES), size=n_nfs)
    accel = rng.random(n_nfs) < accel_frac
    edges: dict[tuple[str, str], float] = {}
    order = rng.permutation(n_nfs)
    i = 0
    while i < n_nfs:
        L = int(rng.integers(1, 4))
        chain = [nfs[j] for j in order[i:i + L]]
        i += L
        src = ports[int(rng.integers(n_ports))] if rng.random() < 0.6 else vms[int(rng.integers(n_vms))]
        dst = vms[int(rng.integers(n_vms))]
        gbps = float(np.round(rng.uniform(0.1, 2.0), 3))
        path = [src, *chain, dst]
        for u, v in zip(path, path[1:]):
            edges[(u, v)] = edges.get((u, v), 0.0) + gbps
        if rng.random() < 0.3:  # some return traffic
            back = float(np.round(gbps * rng.uniform(0.1, 0.5), 3))
            for u, v in zip(path[::-1], path[::-1][1:]):
                edges[(u, v)] = edges.get((u, v), 0.0) + back
    inflow: dict[str, float] = {}
    outflow: dict[str, float] = {}
    for (u, v), g in edges.items():
        outflow[u] = outflow.get(u, 0.0) + g
        inflow[v] = inflow.get(v, 0.0) + g
    nodes: list[Node] = []
    total_nic = np.zeros(len(resources))
    for j, name in enumerate(nfs):
        load = max(inflow.get(name, 0.0), outflow.get(name, 0.0))
        rh, rn = NF_TYPES[str(kinds[j])]
        mem = rng.uniform(0.5, 2.0)
        host_use, nic_use = {}, {}
        for r in resources:
            if r == "cores":
                host_use[r], nic_use[r] = rh * load, (0.2 if accel[j] else rn) * load
            else:  # memory-like: GB, roughly independent of traffic
                host_use[r], nic_use[r] = mem, mem * 1.2
        total_nic += np.array([nic_use[r] for r in resources])
        pin = snic_names[int(rng.integers(snics))] if accel[j] else None
        nodes.append(Node(name, "nf", host_use, nic_use, pin))
    nodes += [Node(v, "vm", pin="host") for v in vms]
    nodes += [Node(p, "port", pin=port_pin[p]) for p in ports]
    total_t = sum(edges.values())
    sn = tuple(Snic(s, t_frac * total_t / snics, {r: d_frac * total_nic[q] / snics for q, r in enumerate(resources)})
               for s in snic_names)
    weights = {resources[0]: 1.0}
    return UnoProblem(tuple(nodes), tuple(Edge(u, v, g) for (u, v), g in edges.items()), sn, tuple(resources),
                      weights, pcie)


def random_graph_problem(n_nodes: int, seed: int = 0, snics: int = 1, degree: float = 2.0,
                         pcie: str = "duplex", t_frac: float = 0.35, d_frac: float = 0.4,
                         accel_frac: float = 0.05) -> UnoProblem:
    """A general sparse placement graph (the `random` family of `tandem bench uno`).

    Unlike `random_problem` (chains between a port/VM and a VM), NFs link to
    random NFs, VMs and ports, so the free nodes form one large connected
    component (no decomposition along pinned nodes helps). Shape: 1/10 ports
    (each pinned to a random sNIC), 1/5 VMs (host), the rest NFs of the paper's
    types; every NF sends to 1..2·`degree` random nodes (NF with probability
    0.6, else a VM or a port) and every port/VM sends to 1–2 random NFs; edge
    traffic U(0.1, 2) Gbps. Budgets as in `random_problem`.
    """
    rng = np.random.default_rng(seed)
    n_ports = max(1, n_nodes // 10)
    n_vms = max(1, n_nodes // 5)
    n_nfs = max(2, n_nodes - n_ports - n_vms)
    snic_names = [f"snic{k}" for k in range(snics)]
    ports = [f"eth{i}" for i in range(n_ports)]
    vms = [f"vm{i}" for i in range(n_vms)]
    nfs = [f"nf{i}" for i in range(n_nfs)]
    kinds = rng.choice(list(NF_TYPES), size=n_nfs)
    accel = rng.random(n_nfs) < accel_frac
    edges: dict[tuple[str, str], float] = {}

    def add(u: str, v: str) -> None:
        if u != v:
            edges[(u, v)] = edges.get((u, v), 0.0) + float(np.round(rng.uniform(0.1, 2.0), 3))

    ends = ports + vms
    for j in range(n_nfs):
        for _ in range(int(rng.integers(1, int(2 * degree) + 1))):
            if rng.random() < 0.6:
                add(nfs[j], nfs[int(rng.integers(n_nfs))])
            else:
                add(nfs[j], ends[int(rng.integers(len(ends)))])
    for u in ends:
        for _ in range(int(rng.integers(1, 3))):
            add(u, nfs[int(rng.integers(n_nfs))])
    inflow: dict[str, float] = {}
    outflow: dict[str, float] = {}
    for (u, v), g in edges.items():
        outflow[u] = outflow.get(u, 0.0) + g
        inflow[v] = inflow.get(v, 0.0) + g
    nodes: list[Node] = []
    total_nic = 0.0
    for j, name in enumerate(nfs):
        load = inflow.get(name, 0.0) or outflow.get(name, 0.0)
        rh, rn = NF_TYPES[str(kinds[j])]
        nic = (0.2 if accel[j] else rn) * load
        total_nic += nic
        pin = snic_names[int(rng.integers(snics))] if accel[j] else None
        nodes.append(Node(name, "nf", {"cores": rh * load}, {"cores": nic}, pin))
    nodes += [Node(v, "vm", pin="host") for v in vms]
    nodes += [Node(p, "port", pin=snic_names[int(rng.integers(snics))]) for p in ports]
    total_t = sum(edges.values())
    sn = tuple(Snic(s, t_frac * total_t / snics, {"cores": d_frac * total_nic / snics}) for s in snic_names)
    return UnoProblem(tuple(nodes), tuple(Edge(u, v, g) for (u, v), g in edges.items()), sn, ("cores",),
                      {"cores": 1.0}, pcie)
