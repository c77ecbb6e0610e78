"""The emulator backend the NF agent runs on: a scenario's machine whose switches
declare every port an NF may occupy.

``ScenarioEmuBackend`` builds the scenario's devices, PCIe links, NFs and traffic
sources with empty pipelines whose ports are the derived topology's. The agent
creates NFs and moves them between devices at run time, always on the NF's own
virtual port numbers, so here every device's pipeline is rebuilt (still empty)
with those port numbers declared too (``extra_ports``). State and cost: as
``ScenarioEmuBackend``, plus one empty pipeline per device at start.
"""

from __future__ import annotations

from typing import Iterable

from tandem.backends.base import PhysicalLayout
from tandem.backends.emu_scenario import ScenarioEmuBackend


class AgentEmuBackend(ScenarioEmuBackend):
    def __init__(self, sc, placement: dict[str, str], extra_ports: Iterable[int] = (), **kw) -> None:
        super().__init__(sc, placement, **kw)
        self.extra_ports = sorted(set(extra_ports))

    async def start(self, layout: PhysicalLayout) -> None:
        from tandem.emu.scenario import N_TABLES

        await super().start(layout)
        m = self.machine
        for sw in layout.switches:
            ports = sorted(set(layout.all_ports(sw)) | set(self.extra_ports))
            m.emu.use_openflow(m.devices[sw], N_TABLES, ports, drop_malformed=False)
