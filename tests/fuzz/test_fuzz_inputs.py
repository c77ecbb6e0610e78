"""Property: every damaged input of every kind - scenario, rules, groups, topology,
the four placement problems, pcap - ends in success or clean error lines with a
documented exit code (README "Exit codes") within 2 s, never a traceback.

The cases come from tandem.testing.fuzz (shared with `tandem bench fuzz`, which
runs 100,000 of them); hypothesis drives the mutations through its Random. The
budget is bounded for `make test`: EXAMPLES_PER_KIND cases per kind.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.testing.fuzz import KINDS, TIME_LIMIT_S, make_case, run_case, verdict

EXAMPLES_PER_KIND = 80


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=EXAMPLES_PER_KIND, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_damaged_input_ends_in_success_or_one_clean_error(kind, rng):
    case = make_case(kind, rng)
    with tempfile.TemporaryDirectory() as d:
        outcomes = run_case(case, Path(d))
    for o in outcomes:
        problem = verdict(o)
        assert problem is None, (problem, {k: v[:3000] for k, v in case.files.items()}, o.stderr[-1500:])


def test_the_verdict_catches_what_it_must():
    from tandem.testing.fuzz import Outcome

    assert verdict(Outcome(0, "OK", "", 0.1)) is None
    assert verdict(Outcome(1, "", "f.yaml:1:1: x: bad\n", 0.1)) is None
    assert "exit code 4" in verdict(Outcome(4, "", "internal error: KeyError: 1\n", 0.1))
    assert "traceback" in verdict(Outcome(1, "", "Traceback (most recent call last):\n  File \"x\"\n", 0.1))
    assert "no message" in verdict(Outcome(1, "", "", 0.1))
    assert "took" in verdict(Outcome(0, "", "", TIME_LIMIT_S + 0.1))
    assert "exception escaped" in verdict(Outcome(1, "", "x", 0.1, exception="ValueError: x"))


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_reaches_both_success_and_errors(kind):
    """The mutations are neither too weak (all inputs stay valid) nor too strong (nothing is ever read):
    some cases succeed (0), some are refused as bad input (2)."""
    import random

    codes = set()
    rng = random.Random(11)
    for _ in range(150):
        case = make_case(kind, rng, run_valid=False)
        with tempfile.TemporaryDirectory() as d:
            codes |= {o.code for o in run_case(case, Path(d))}
        if {0, 2} <= codes:
            break
    assert {0, 2} <= codes, codes
