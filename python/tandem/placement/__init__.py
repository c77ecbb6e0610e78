"""tandem.placement — where NFs run (host or sNIC), as pure functions.

Engines: UNO (`uno`, methods in `uno_milp`, `uno_fast`, `uno_brute`),
SmartChain (`smartchain*`), POF offload (`pof*`); all return
`result.PlacementResult`. `solver` is the shared HiGHS adapter, `migration`
plans safe move orders with hysteresis, `cli` adds `tandem place`.
See docs/placement.md.
"""
