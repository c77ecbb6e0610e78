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

The command also runs in-process, again and again (tests, the fuzz bench's
workers: a translation every ninth case), and there the freeze starved the
collector: it zeroes every generation's collection count, and a full collection
waits for eleven middle-generation collections, so none ever ran, and the frozen
garbage does not count towards CPython's other trigger (objects promoted since
the last full collection, a quarter of the heap): every batch's garbage stayed
in the oldest generation for good (2.7 GB per fuzz bench worker after about
50,000 cases). So a batch that left fewer than ``FREEZE_FROM`` new objects skips
the freeze (the next young collection scans them in a few ms and frees their
garbage), and after a freeze the counts are put back as they were, plus one
middle-generation collection for the promotion, by collecting the then empty
young generations, which costs nothing. A large batch's own garbage still waits
for a full collection that its promotion does not bring closer; large batches
are one per process in practice (`tandem translate`; the translate bench runs five).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

FREEZE_FROM = 20_000  # young objects at the batch's end; a young collection of 35,000 took 7 ms


@contextmanager
def paused_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    _, gen0_runs, gen1_runs = gc.get_count()  # collections since the next older generation's last one
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0 and _young_objects_at_least(FREEZE_FROM):
            gc.freeze()
            gc.unfreeze()
            _restore_counts(gen0_runs, gen1_runs + 1)
        if was:
            gc.enable()


def _young_objects_at_least(n: int) -> bool:
    # The young count (allocations less deallocations, never below 0) can be far below the
    # young generation's size when the batch freed older objects (the previous translation):
    # then the generation itself is counted (34,570 objects: 1.5-3.6 ms at load 4, a young
    # collection of them 7 ms).
    return gc.get_count()[0] >= n or len(gc.get_objects(generation=0)) >= n


def _restore_counts(gen0_runs: int, gen1_runs: int) -> None:
    """Set gc.get_count()[1:] to (gen0_runs, gen1_runs) while the young generations are empty."""
    for _ in range(gen1_runs):
        gc.collect(1)  # counts one towards the next full collection
    for _ in range(gen0_runs):
        gc.collect(0)  # counts one towards the next middle-generation collection
