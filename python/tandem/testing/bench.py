"""Small helpers shared by the benchmark programs in benches/."""

from __future__ import annotations

import os
from typing import Callable


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
