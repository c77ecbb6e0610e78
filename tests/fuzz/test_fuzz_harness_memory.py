"""The fuzz harness runs the CLI in-process thousands of times per worker
(`tandem bench fuzz`): a run must leave nothing behind that the next one keeps."""

from __future__ import annotations

import gc
from pathlib import Path

from tandem.testing.fuzz import run_argv


def _captured_streams() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o).__name__ == "_NamedTextIOWrapper")


def test_repeated_runs_leave_no_captured_streams_behind(tmp_path: Path):
    (tmp_path / "bad.flows").write_text("priority=oops,actions=drop\n")
    argv = ["rules", "check", "{dir}/bad.flows"]  # an error: typer.echo to stderr, as most fuzz cases
    assert run_argv(argv, tmp_path).code == 2
    before = _captured_streams()
    for _ in range(40):
        assert run_argv(argv, tmp_path).code == 2
    assert _captured_streams() - before <= 2  # one run's stdout and stderr at most (was one more per run)
