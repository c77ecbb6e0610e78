"""Pausing the cyclic garbage collector for a batch job that owns its process.

Only process entry points (CLI commands, benchmarks) call this; library code
(translation, placement, the endpoint) never touches the collector.

A translation builds long-lived state (thousands of rules, about six objects
each). With the collector running, young collections scan those objects over
and over; with it paused and then re-enabled, the next young collection scans
all of them once more just to promote them. ``gc.freeze()`` + ``gc.unfreeze()``
moves every tracked object into the oldest generation in O(1) instead. The
price: cyclic garbage still young when the batch ends waits for the next full
collection. Skipped if the process keeps objects frozen itself (``gc.freeze``
before fork), which unfreezing would undo.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()
