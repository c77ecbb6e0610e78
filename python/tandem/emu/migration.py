"""NF migration in an emulated machine built from a scenario: the shell that
provisions the destination instance and re-points OneSwitch at it.

Input: the scenario, its ``Machine`` and ``Build``, the virtual ports and the
``OneSwitchState`` whose physical rules the switches run (``build_from_scenario(...,
migratable=True)`` makes them). Output, per move of NF ``nf`` to device ``dev``:
a new NF instance on ``dev`` (same type and configuration, the type's cost
profile for that device, fresh state) joined to the switch ports that carry
the NF's virtual port numbers there; the consistent update plan of the remap
(``OneSwitchState.remap_ports``), whose adds and modifies are applied at the
switch-over and whose deletes (what only the old location used) when the
emulator says the move has ended. The timed protocol itself
(buffer, drain, state transfer, release, retire) lives in the Rust emulator
(``dp_emu::migration``); ``Machine`` sequences the two.

State: which device each NF is on now. Cost: a remap re-translates every
virtual rule (O(rules)).
"""

from __future__ import annotations

from typing import Sequence

from tandem.emu.costs import nf_cycles
from tandem.emu.machine import EmuError, Machine
from tandem.nf.config import nf_config_json


def apply_ops(m: Machine, ops: Sequence) -> None:
    """Apply OneSwitch ``PhysicalOp``s to the emulated switches (rules and groups)."""
    from tandem.dataplane.convert import group_args, rule_args

    for op in ops:
        dev = m.devices[op.switch]
        if op.group is not None:
            if op.op in ("delete_group", "modify_group"):
                m.emu.switch_remove_group(dev, op.group.group_id)
            if op.op in ("add_group", "modify_group"):
                m._call(f"switch {op.switch}: group {op.group.group_id}", m.emu.switch_add_group, dev,
                        *group_args(op.group))
            continue
        r = op.rule
        m._call(f"switch {op.switch}: {op.op} table {r.table} priority {r.priority}", m.emu.switch_flow_mod, dev,
                {"command": op.op, **rule_args(r)})


class ScenarioMover:
    """Provisions destination instances and remaps an NF's virtual ports (see the module doc)."""

    def __init__(self, sc, m: Machine, b, vp, state, accel_names: dict[tuple[str, str], str]) -> None:
        self.sc, self.m, self.b, self.vp, self.state = sc, m, b, vp, state
        self.accel_names = accel_names
        self.where = dict(b.placement)  # NF -> device it runs on now
        self.moves = 0

    def check(self, nf: str, dev: str) -> None:
        """EmuError if ``nf`` cannot move to ``dev`` (the caller checked both names exist)."""
        if self.where.get(nf) == dev:
            raise EmuError(f"NF {nf}: already on {dev}")
        ntype = self.sc.nf_types[self.sc.instances[nf].type]
        if ntype.profile_for(dev, self.sc.devices[dev].kind) is None:
            raise EmuError(f"NF {nf}: type {self.sc.instances[nf].type} has no cost profile for {dev}")

    def provision(self, nf: str, dev: str) -> str:
        """Make the destination instance of ``nf`` on ``dev`` and wire its ports; returns its name."""
        self.check(nf, dev)
        sc, m = self.sc, self.m
        inst = sc.instances[nf]
        ntype = sc.nf_types[inst.type]
        d = sc.devices[dev]
        c = nf_cycles(ntype.profile_for(dev, d.kind), cores=d.cores, clock_hz=d.clock, speed=d.speed)
        accel = self.accel_names.get((dev, c.accelerator_kind)) if c.accelerator_kind else None
        ports = 1 if len(inst.ports) == 1 else 2
        self.moves += 1
        name = f"{nf}#{self.moves}"
        m.nf(name, dev, ntype.type or "fixed_cost", ports=ports, cycles_per_packet=c.cycles_per_packet,
             cycles_per_byte=c.cycles_per_byte, accelerator=accel, config=nf_config_json(ntype))
        for k, sp in enumerate(self.vp.nf[nf][:ports]):
            m.connect(m.sw(dev, sp), m.nf_port(name, k))
        return name

    def finish(self, cleanup: list) -> None:
        """The move has ended (the old instance drained and retired): apply the plan's deletes."""
        apply_ops(self.m, cleanup)

    def switch_over(self, nf: str, dev: str) -> list:
        """Remap ``nf``'s virtual ports to ``dev``: apply the plan up to the point where the
        old location stops receiving; returns the remaining (clean-up) operations."""
        from tandem.oneswitch.topology import PortRef
        from tandem.oneswitch.translate import TranslationError

        vports = sorted(set(self.vp.nf[nf]))
        try:
            plan = self.state.remap_ports({v: PortRef(dev, v) for v in vports})
        except (TranslationError, ValueError) as e:
            raise EmuError(f"NF {nf}: remap to {dev}: {e}") from None
        # Every add and modify now (the plan orders them before any delete): new packets
        # for the NF go to the new instance at once, including the old switch's own
        # traffic (its modifies, which the plan holds back until the old location stops
        # receiving: here the emulator buffers at the new one meanwhile). The deletes
        # wait until the old instance has drained (what it still emits needs its rules).
        deleting = ("delete_strict", "delete", "delete_group")
        cut = next((i for i, st in enumerate(plan.steps) if any(op.op in deleting for op in st)), len(plan.steps))
        for step in plan.steps[:cut]:
            apply_ops(self.m, step)
        self.where[nf] = dev
        self.b.placement[nf] = dev
        return [op for step in plan.steps[cut:] for op in step]
