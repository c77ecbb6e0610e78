"""tandem.placement — where NFs run (host or sNIC), as pure functions.

One subpackage per engine, each with the same inner shape (`model`, `io`, an
exact method, the paper's baseline, and `engine` with `solve`/`solve_file`):
`uno` (UNO §3.2.1), `smartchain` (SmartChain), `pof` (OVS-POF-TC offload).
Beside them: `solver` (the one HiGHS adapter), `result` (`PlacementResult`,
every engine's answer), `errors` (the exception hierarchy the CLI maps to exit
codes), `migration` (safe move orders with hysteresis), `cli` (`tandem place`).
See docs/placement.md.
"""
