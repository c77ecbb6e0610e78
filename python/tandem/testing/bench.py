"""Small helpers shared by the benchmark programs in benches/."""

from __future__ import annotations

import os
from typing import Callable


def oracle_exit(t0: float, mismatches: list[str], show: int) -> int:
    """An oracle bench's last lines: the time and load, the first ``show`` mismatches
    in full; exit status 1 if there is any."""
    import time

    print(f"total {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}")
    for m in mismatches[:show]:
        print("---", m)
    return 1 if mismatches else 0


def run_restoring_affinity(main: Callable[[], int]) -> int:
    """Run ``main`` (which may pin itself to one core) and restore the process's
    CPU affinity afterwards, since `tandem bench all` runs every benchmark in one
    process."""
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        return main()
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)
