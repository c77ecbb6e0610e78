"""tandem.emu — the timed emulator from Python.

``Machine`` (machine.py) builds an emulated host + sNICs by name on top of the
Rust ``tandem._dp.Emulator`` and runs it; ``build_from_scenario`` (scenario.py)
turns a ``tandem.model.Scenario`` into a Machine; ``run_scenario`` (run.py)
runs one and writes metrics.json; ``cli.py`` adds ``tandem run``.
"""

from tandem.emu.machine import EmuError, Machine, Place

__all__ = ["EmuError", "Machine", "Place"]
