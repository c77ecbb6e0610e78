"""Every experiment `tandem reproduce` knows, in the order the report lists them.

An experiment is a function ``run(out_dir: Path, quick: bool = False) -> dict`` that
writes ``out_dir/data.csv`` and (usually) ``out_dir/figure.png``. What it returns is
compared with the paper's values in ``papers/<paper>.yaml`` (entry ``name``):

- ``"ours"``: {paper value key: our number (or None when not measured)}
- ``"trend"``: {"ok": bool, "says": one line on what we measured against the paper's claim}
- optional ``"reasons"``: {paper value key: why our number differs}, ``"notes"``: str.

A function that returns some other dict (e.g. one written for another caller) gets an
``adapt`` function ("module:function", dict -> dict of the form above); without one,
top-level numbers whose names are paper value keys are taken as ``ours`` and the trend
is reported as not checked. When ``figure.png`` is missing the runner draws the paper's
values beside ours as bars.

Adding an experiment is one entry below (and its paper values in the YAML).
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.errors import TandemError


@dataclass(frozen=True)
class Experiment:
    name: str
    paper: str  # papers/<paper>.yaml
    figure: str
    shows: str
    seconds: float  # expected run time, full size (measured on 2 shared cores)
    quick_seconds: float  # expected run time with --quick
    target: str  # "module:function"
    adapt: str | None = None  # "module:function" mapping the target's dict to ours/trend


def _e(name: str, paper: str, figure: str, shows: str, seconds: float, quick: float, target: str,
       adapt: str | None = None) -> Experiment:
    return Experiment(name, paper, figure, shows, seconds, quick, target, adapt)


U, S, P, F = "tandem.reproduce.exp_uno", "tandem.reproduce.exp_smartchain", "tandem.reproduce.exp_pof", \
    "tandem.reproduce.exp_fairnic"

EXPERIMENTS: tuple[Experiment, ...] = (
    _e("uno_fig2", "uno", "Fig. 2", "no offload vs full switch offload: chain throughput and latency vs chained NFs",
       5, 4, f"{U}:fig2"),
    _e("uno_fig8", "uno", "Fig. 8", "host CPU of the hypervisor switch with 64K rules on host / half / sNIC",
       2, 2, f"{U}:fig8"),
    _e("uno_fig9", "uno", "Fig. 9", "PCIe bytes of SECGW on the sNIC vs the host with AES-NI vs the host with QAT",
       2, 3, f"{U}:fig9"),
    _e("uno_fig10", "uno", "Fig. 10", "SD-WAN: x86 cores host-only vs with the agent offloading to the sNIC, 1-10 Gb/s",
       8, 4, "tandem.experiments.uno_fig10:run", adapt=f"{U}:fig10_adapt"),
    _e("uno_fig11", "uno", "Fig. 11", "power increase vs traffic of L7FW and SECGW on host vs sNIC cores",
       2, 3, f"{U}:fig11"),
    _e("uno_fig13", "uno", "Fig. 13", "NF migration: time, state bytes and added latency vs flows moved",
       10, 4, "tandem.experiments.uno_fig13:run", adapt=f"{U}:fig13_adapt"),
    _e("uno_fig14", "uno", "Fig. 14", "latency of SECGW > L7FW > SECGW: host, switch offload, UNO Full / Partial",
       5, 4, f"{U}:fig14"),
    _e("uno_fig16", "uno", "Fig. 16", "UNO ILP on the Fig. 15 DPI graph: host/sNIC cores and PCIe vs PCIe budget T",
       2, 3, f"{U}:fig16"),
    _e("uno_rules", "uno", "§5.4", "OneSwitch: physical rules per virtual rule on one host + two sNIC switches",
       5, 5, f"{U}:rules"),
    _e("smartchain_fig5", "smartchain", "Fig. 5", "placement of a 5-element chain: sequential, greedy, SmartChain",
       1, 1, f"{S}:fig5"),
    _e("smartchain_fig8", "smartchain", "Fig. 8", "latency benefit of SmartChain vs the strawmen on the Fig. 7 topologies",
       180, 15, f"{S}:fig8"),
    _e("smartchain_fig9", "smartchain", "Fig. 9", "placement computation time per topology and for graphs x servers",
       5, 10, f"{S}:fig9"),
    _e("smartchain_fig10", "smartchain", "Fig. 10", "optimality ratio under inaccurate suitability and capacity",
       20, 8, f"{S}:fig10"),
    _e("smartchain_fig11", "smartchain", "Fig. 11", "emulated latency of element graphs #1/#2 vs packet size",
       15, 4, f"{S}:fig11"),
    _e("smartchain_fig12", "smartchain", "Fig. 12", "emulated throughput of element graphs #1/#2 vs packet size",
       10, 3, f"{S}:fig12"),
    _e("smartchain_fig13", "smartchain", "Fig. 13", "element graph latency and throughput with a CAIDA-like size mix",
       5, 2, f"{S}:fig13"),
    _e("smartchain_eq9", "smartchain", "eq. (9)", "capacity of Payload Analyzer => Monitor on one sNIC",
       1, 3, f"{S}:eq9"),
    _e("pof_fig5", "pof", "Fig. 5", "packets out of the offloaded POF-FTs: SetField rewrites, AddField inserts 4 bytes",
       2, 1, f"{P}:fig5"),
    _e("pof_fig6", "pof", "Fig. 6", "latency of offloaded vs kernel-path flows under the decision module",
       2, 2, f"{P}:fig6"),
    _e("pof_fig7", "pof", "Fig. 7", "throughput while a POF-FT is updated at run time",
       10, 6, f"{P}:fig7"),
    _e("pof_fig8", "pof", "Fig. 8", "time to offload / remove a batch of POF-FTs vs batch size",
       3, 2, f"{P}:fig8"),
    _e("pof_fig9", "pof", "Fig. 9", "throughput vs number of SetField/AddField actions, offload on vs off",
       2, 1, f"{P}:fig9"),
    _e("pof_fig10", "pof", "Fig. 10", "kernel path (offload off): throughput and latency vs offered rate",
       5, 10, f"{P}:fig10"),
    _e("pof_table2", "pof", "Table II", "flow placement: MILP-FP vs heuristic vs exact, objective and time",
       70, 15, f"{P}:table2"),
    _e("pof_table3", "pof", "Table III", "flow replacement: MILP-FR vs heuristic vs exact, objective and time",
       120, 15, f"{P}:table3"),
    _e("fairnic_fig10", "fairnic", "Fig. 10", "core isolation: two OVS tenants, throughput vs packet size",
       10, 10, f"{F}:fig10"),
    _e("fairnic_fig11", "fairnic", "Fig. 11", "cache striping: KVS beside a cache thrasher, latency and Gb/s",
       5, 6, f"{F}:fig11"),
    _e("fairnic_fig12", "fairnic", "Fig. 12", "coprocessor rate limiting: two OVS tenants sharing a ZIP engine",
       20, 10, f"{F}:fig12"),
)


def by_name() -> dict[str, Experiment]:
    return {e.name: e for e in EXPERIMENTS}


def select(names: list[str]) -> list[Experiment]:
    """The experiments named (``all`` = every one), in registry order; unknown names
    are one error naming them and the known ones."""
    known = by_name()
    if not names or "all" in names:
        return list(EXPERIMENTS)
    bad = [n for n in names if n not in known]
    if bad:
        raise TandemError(f"unknown experiment(s) {', '.join(bad)}; `tandem reproduce --list` shows the "
                          f"{len(known)} known ones")
    want = set(names)
    return [e for e in EXPERIMENTS if e.name in want]
