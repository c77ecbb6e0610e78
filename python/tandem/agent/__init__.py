"""The NF agent (UNO §3.2): telemetry -> NF-level traffic matrix -> incremental UNO
re-placement with hysteresis -> ordered moves (``telemetry``, ``core``, pure), and the
loop that drives an emulated machine with it (``emu_loop``)."""
