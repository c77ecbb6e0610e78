"""The emulator backend the NF agent runs on: a scenario's machine whose switches
declare every port an NF may occupy, and which runs NF migrations to their end.

``ScenarioEmuBackend`` builds the scenario's devices, PCIe links, NFs and traffic
sources with empty pipelines whose ports are the derived topology's. The agent
creates NFs and moves them between devices at run time, always on the NF's own
virtual port numbers, so here every device's pipeline is rebuilt (still empty)
with those port numbers declared too (``extra_ports``).

Migrations: the agent starts one with ``emu.begin_migration`` (``dp_emu::migration``:
destination buffers, source drains, state crosses PCIe, buffer released, source
retired) and registers what to do at its end with ``on_migration_end``. The
emulator pauses its run at that instant; ``run_for`` then applies the
registered clean-up (the old location's rules) at once, before any later event,
and goes on to the requested time. A migration that fails without pausing (no
PCIe path for the state) is noticed after the run slice and handled the same way.
State and cost: as ``ScenarioEmuBackend``, plus one empty pipeline per device at
start and the pending migrations' end handlers.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from tandem.backends.base import Op, PhysicalLayout
from tandem.backends.emu_scenario import ScenarioEmuBackend


class AgentEmuBackend(ScenarioEmuBackend):
    def __init__(self, sc, placement: dict[str, str], extra_ports: Iterable[int] = (), **kw) -> None:
        super().__init__(sc, placement, **kw)
        self.extra_ports = sorted(set(extra_ports))
        self._mig_end: dict[int, Callable[[], None]] = {}  # emulator migration id -> its end handler

    async def start(self, layout: PhysicalLayout) -> None:
        from tandem.emu.scenario import N_TABLES

        await super().start(layout)
        m = self.machine
        for sw in layout.switches:
            ports = sorted(set(layout.all_ports(sw)) | set(self.extra_ports))
            m.emu.use_openflow(m.devices[sw], N_TABLES, ports, drop_malformed=False)

    def on_migration_end(self, mig: int, handler: Callable[[], None]) -> None:
        """Call ``handler`` (synchronously, inside ``run_for``) when migration ``mig`` ends."""
        self._mig_end[mig] = handler

    def forget_migration_end(self, mig: int) -> None:
        """Drop ``mig``'s end handler (the move was called off)."""
        self._mig_end.pop(mig, None)

    def apply_now(self, ops: Sequence[Op]) -> None:
        """``apply`` without yielding to the event loop (the emulator backend's apply never
        waits): used at a migration's end, where no other event may run first."""
        coro = self.apply(ops)
        try:
            coro.send(None)
        except StopIteration:
            return
        coro.close()
        raise RuntimeError("the emulator backend's apply suspended")

    def _run_until(self, until_ns: float) -> None:
        emu = self.machine.emu
        while True:
            emu.run_until(until_ns)
            ended = emu.take_migration_pauses()
            for mig in ended:
                self._end(mig)
            if not ended:
                break  # no pause on the way: the clock reached until_ns
        for mig in [g for g in self._mig_end if emu.migration_done(g)]:
            self._end(mig)  # ended without pausing (failed before the transfer)

    def _end(self, mig: int) -> None:
        handler = self._mig_end.pop(mig, None)
        if handler is not None:
            handler()
