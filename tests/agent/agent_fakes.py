"""A scenario and a fake machine for the agent's tests: the SD-WAN chain (SECGW pinned to
the sNIC by its crypto engine, L7FW free) with a chosen sNIC capacity D, and a machine
whose counters follow a load profile (Gbps over simulated time)."""

from __future__ import annotations

from typing import Callable

from tandem.model.load import parse_scenario_text

PKT = 1280


def sdwan(d_cores: int = 16, gbps: float = 1.0, agent: str = "{period: 100ms}"):
    text = f"""
name: agent-sdwan
devices:
  host: {{kind: host, cores: 24, clock: 2.7GHz}}
  snic0:
    kind: snic
    cores: 36
    clock: 1.2GHz
    accelerators: {{mica: {{kind: crypto, throughput: 40Gbps}}}}
    ports: {{eth0: {{rate: 40Gbps}}, eth1: {{rate: 40Gbps}}}}
links:
  pcie0: {{snic: snic0, bandwidth: 32Gbps}}
nf_types:
  secgw:
    cost:
      host: {{cycles_per_byte: 26.6, cores_per_gbps: 1.231}}
      snic: {{cycles_per_packet: 11342, accelerator: {{kind: crypto, bytes_fraction: 1.0}}, cores_per_gbps: 0.923}}
  l7fw:
    cost:
      host: {{cycles_per_byte: 5.8, cores_per_gbps: 0.269}}
      snic: {{cycles_per_byte: 10.3, cores_per_gbps: 1.077}}
instances:
  secgw1: {{kind: nf, type: secgw}}
  l7fw1: {{kind: nf, type: l7fw}}
  vm1: {{kind: vm, ports: [eth0]}}
chains:
  sdwan: {{nfs: [secgw1, l7fw1], ingress: snic0.eth0, egress: vm1.eth0}}
traffic:
  wan-in: {{target: sdwan, bandwidth: {gbps}Gbps, packet_size: {PKT}B, flows: 10000}}
placement:
  uno: {{snic_capacity_cores: {{snic0: {d_cores}}}}}
run:
  duration: 2s
  agent: {agent}
"""
    return parse_scenario_text(text)


class FakeMachine:
    """Counters of the chain at `load(t)` Gbps: both NFs process every packet (none
    dropped unless `drop_share` of l7fw1's offered packets are dropped at it)."""

    def __init__(self, load: Callable[[float], float], placement: dict[str, str], dt: float = 0.01,
                 drop_share: float = 0.0, migration_s: float | None = None):
        self.load, self.dt, self.drop_share, self.migration_s = load, dt, drop_share, migration_s
        self.placement = dict(placement)
        self.t = 0.0
        self.bits = 0.0
        self.advanced: list[float] = []
        self.migrations: list[tuple[str, str, float]] = []

    def advance(self, until_s: float) -> None:
        assert until_s > self.t, (until_s, self.t)
        while self.t < until_s - 1e-12:
            step = min(self.dt, until_s - self.t)
            self.bits += self.load(self.t) * 1e9 * step
            self.t += step
        self.advanced.append(until_s)

    def metrics(self) -> dict:
        pk = int(self.bits / (8 * PKT))
        dropped = int(pk * self.drop_share)
        return {"duration_s": self.t, "flows": {"wan-in": {"tx_packets": pk, "tx_bytes": pk * PKT}},
                "nfs": {"secgw1": {"packets": pk, "device": self.placement["secgw1"]},
                        "l7fw1": {"packets": pk - dropped, "device": self.placement["l7fw1"]}},
                "drops_by_place": {"nf:l7fw1": {"core_queue_full": dropped}} if dropped else {}}

    def migrate(self, nf: str, to_device: str, at_s: float):
        assert self.placement[nf] != to_device, f"{nf} already on {to_device}"
        self.placement[nf] = to_device
        self.migrations.append((nf, to_device, at_s))
        return None if self.migration_s is None else at_s + self.migration_s
