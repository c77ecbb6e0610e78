"""The ``emu`` backend over a whole scenario (``tandem serve --scenario``).

Inputs: a Scenario and a placement. ``start`` builds the scenario's machine
(``emu.scenario.build_from_scenario``: devices, PCIe, NFs with their costs,
tenants, traffic sources) with every device's dp-core pipeline empty, ports
numbered as the OneSwitch topology derived for that placement numbers them;
the layout OneSwitch hands in must be that topology's. From then on it is the
``EmuBackend``: a ``PairOp`` (a port extension's pair) becomes one more port
pair on the scenario's PCIe link between the two devices; FLOW_MODs and groups land in those pipelines, ``run_for``
advances simulated time (the sources send, NFs process) and emits
packet-ins. No port captures (sinks and Ethernet ports count what arrives;
``metrics`` returns the emulator's metrics). State: the machine and the
EmuBackend registries. Cost: one build at start, then as EmuBackend.
"""

from __future__ import annotations

from tandem.backends.base import BackendError, PhysicalLayout
from tandem.backends.emu import EmuBackend


class ScenarioEmuBackend(EmuBackend):
    name = "emu"

    def __init__(self, sc, placement: dict[str, str], *, settle_s: float = 1e-3) -> None:
        super().__init__(capture=False, settle_s=settle_s,
                         table_capacity={d: getattr(dev, "flow_table_entries", 1_000_000) for d, dev in sc.devices.items()})
        self.sc, self.placement = sc, dict(placement)
        self.build = None

    async def start(self, layout: PhysicalLayout) -> None:
        from tandem.emu.machine import EmuError
        from tandem.emu.scenario import build_from_scenario

        try:
            m, b = build_from_scenario(self.sc, placement=self.placement, install=False)
        except EmuError as e:
            raise BackendError(f"scenario {self.sc.name}: {e}") from None
        self.machine, self.layout, self.build = m, layout, b
        # every scenario PCIe link joins the host (its first device) and one sNIC
        self.link_names = {frozenset((self.sc.host_id, ln.snic)): (name, self.sc.host_id) for name, ln in self.sc.links.items()}
        for sw in layout.switches:
            if sw not in m.devices:
                raise BackendError(f"layout switch {sw!r} is not a device of scenario {self.sc.name}", sw)
            self.rules[sw], self.group_tables[sw] = {}, {}
        m.emu.set_horizon(1e30)

    def metrics(self) -> dict:
        out = self.machine.metrics() if self.machine is not None else {}
        out["placement"] = dict(sorted(self.placement.items()))
        out["simulated_s"] = self.now_s
        return out
