"""`tandem translate` pauses the collector (tandem.batchgc); run in-process again
and again it must leave the collector able to free each run's garbage."""

import gc
import tempfile
import weakref
from pathlib import Path

from typer.testing import CliRunner

from tandem.batchgc import FREEZE_FROM, paused_gc
from tandem.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "oneswitch"


class _Node:
    pass


def _with_collector_off(check):
    was = gc.isenabled()
    gc.disable()
    try:
        check()
    finally:
        if was:
            gc.enable()


def test_a_large_batch_is_frozen_and_the_collection_counts_are_put_back():
    def check():
        gc.collect()
        gc.collect(1)
        gc.collect(1)
        gc.collect(0)  # one young collection since the last middle one, two middle ones since the last full one
        with paused_gc():
            kept = [[] for _ in range(FREEZE_FROM + 1_000)]
        assert gc.get_count()[1:] == (1, 3)  # the batch's promotion counts as one more middle-generation collection
        assert not gc.isenabled() and len(kept) == FREEZE_FROM + 1_000

    _with_collector_off(check)


def test_a_small_batchs_cyclic_garbage_goes_with_the_next_young_collection():
    def check():
        gc.collect()
        with paused_gc():
            cycle = _Node()
            cycle.me = cycle
            gone = weakref.ref(cycle)
            del cycle
        assert gone() is not None
        gc.collect(0)
        assert gone() is None

    _with_collector_off(check)


def test_repeated_in_process_translations_keep_the_object_count_bounded():
    # gc.freeze() zeroed the counts each run, so no full collection ever ran and every run's
    # garbage (~590 objects here, ~1,250 in a fuzz case) stayed: 2.7 GB per fuzz bench worker.
    runner, out = CliRunner(), tempfile.mkdtemp()
    good = ["translate", "--topology", str(EXAMPLES / "topology.yaml"), "--rules", str(EXAMPLES / "rules.flows"),
            "--out", out]
    bad = good[:2] + [str(EXAMPLES / "rules.flows")] + good[3:]  # an error exit, as most fuzz cases take
    for i in range(10):
        runner.invoke(app, bad if i % 2 else good)
    before = len(gc.get_objects())  # no gc.collect(): the automatic collector must keep up
    runs = 60
    for i in range(runs):
        assert runner.invoke(app, bad if i % 2 else good).exit_code == (2 if i % 2 else 0)
    assert (len(gc.get_objects()) - before) / runs < 60
