"""Unit parsing: canonical SI values, exact round trips, precise refusals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tandem.model import units as u
from tandem.model.units import UnitError, canonical, human, parse

KINDS = [u.BANDWIDTH, u.DURATION, u.FREQUENCY, u.SIZE, u.PACKET_RATE, u.POWER]


@pytest.mark.parametrize(
    "text,kind,expected",
    [
        ("32Gbps", u.BANDWIDTH, 32e9),
        ("100Mbps", u.BANDWIDTH, 100e6),
        ("1.5Tbps", u.BANDWIDTH, 1.5e12),
        ("800bps", u.BANDWIDTH, 800.0),
        ("10 Gbps", u.BANDWIDTH, 10e9),
        ("26us", u.DURATION, 26e-6),
        ("4µs", u.DURATION, 4e-6),  # U+00B5 micro sign
        ("4μs", u.DURATION, 4e-6),  # U+03BC Greek mu
        ("7ms", u.DURATION, 7e-3),
        ("1s", u.DURATION, 1.0),
        ("250ns", u.DURATION, 250e-9),
        ("2.7GHz", u.FREQUENCY, 2.7e9),
        ("1200MHz", u.FREQUENCY, 1.2e9),
        ("64B", u.SIZE, 64),
        ("2KiB", u.SIZE, 2048),
        ("16MiB", u.SIZE, 16 * 1024 * 1024),
        ("1.5KB", u.SIZE, 1500),
        ("1.5Mpps", u.PACKET_RATE, 1.5e6),
        ("0.534Mpps", u.PACKET_RATE, 534e3),
        ("95W", u.POWER, 95.0),
    ],
)
def test_parses_to_canonical_si(text, kind, expected):
    got = parse(text, kind)
    assert got == pytest.approx(expected, rel=1e-15)
    if kind is u.SIZE:
        assert isinstance(got, int)


@pytest.mark.parametrize("bare", [10, 10.5, "10", " 2.5 "])
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_bare_number_is_ambiguous_and_suggests_the_unit(bare, kind):
    with pytest.raises(UnitError) as e:
        parse(bare, kind)
    unit = kind.example.lstrip("0123456789.")
    assert str(e.value).startswith(f"ambiguous: write {str(bare).strip()}{unit}")


@pytest.mark.parametrize(
    "text,kind,needle",
    [
        ("7ms", u.BANDWIDTH, "a time, expected a bandwidth"),
        ("10Gbps", u.DURATION, "a bandwidth, expected a time"),
        ("64B", u.FREQUENCY, "a size, expected a frequency"),
        ("10Gbs", u.BANDWIDTH, "unknown bandwidth unit 'Gbs'"),
        ("-4us", u.DURATION, "negative"),
        ("1.5B", u.SIZE, "whole number of bytes"),
        ("fast", u.BANDWIDTH, "not a bandwidth"),
        ("inf Gbps", u.BANDWIDTH, "not a bandwidth"),
        ("", u.DURATION, "not a time"),
    ],
)
def test_refusals_name_the_problem(text, kind, needle):
    with pytest.raises(UnitError, match=needle):
        parse(text, kind)


@pytest.mark.parametrize("bad", [True, None, [1], {"a": 1}])
def test_non_strings_are_refused(bad):
    with pytest.raises(UnitError):
        parse(bad, u.BANDWIDTH)


finite = st.floats(min_value=0, max_value=1e18, allow_nan=False, allow_infinity=False)


@given(kind=st.sampled_from([k for k in KINDS if not k.integral]), x=finite)
def test_canonical_text_round_trips_exactly(kind, x):
    if x > kind.limit:  # above what the models handle: refused, saying the bound
        with pytest.raises(UnitError, match="too large"):
            parse(canonical(x, kind), kind)
        return
    assert parse(canonical(x, kind), kind) == x


@given(n=st.integers(min_value=0, max_value=u.SIZE.limit))
def test_sizes_round_trip_exactly(n):
    assert parse(canonical(n, u.SIZE), u.SIZE) == n


@settings(max_examples=150)
@given(
    kind=st.sampled_from(KINDS),
    mantissa=st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False, allow_infinity=False),
    data=st.data(),
)
def test_every_unit_scales_by_its_factor(kind, mantissa, data):
    unit = data.draw(st.sampled_from(sorted(kind.units)))
    text = f"{mantissa}{unit}"
    scale = kind.units[unit]
    exact = float(mantissa) * scale
    if kind.integral and (mantissa * int(scale)) != int(mantissa * int(scale)):
        with pytest.raises(UnitError):
            parse(text, kind)
        return
    if exact > kind.limit * (1 + 1e-12):
        with pytest.raises(UnitError, match="too large"):
            parse(text, kind)
        return
    got = parse(text, kind)
    assert math.isclose(got, exact, rel_tol=1e-12, abs_tol=1e-30)


@given(kind=st.sampled_from(KINDS), x=st.floats(min_value=1e-9, max_value=1e15))
def test_human_text_parses_back_close(kind, x):
    if kind.integral:
        x = int(x)
    x = min(x, kind.limit)
    text = human(x, kind, digits=12).replace(" ", "")
    assert math.isclose(parse(text, kind), x, rel_tol=1e-9)


@pytest.mark.parametrize("text,kind", [("1e300Gbps", u.BANDWIDTH), ("2000TiB", u.SIZE), ("1e8s", u.DURATION),
                                        ("1e13Hz", u.FREQUENCY), ("1e13pps", u.PACKET_RATE), ("2e6kW", u.POWER)])
def test_every_kind_has_an_upper_bound(text, kind):
    with pytest.raises(UnitError, match="too large; a .* here must be ≤"):
        parse(text, kind)
