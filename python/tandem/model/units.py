"""Physical units for scenario files.

Inputs: strings such as ``"32Gbps"``, ``"26us"``, ``"4µs"``, ``"2.7GHz"``,
``"2KiB"``, ``"1.5Mpps"``, ``"95W"``. Output: one canonical SI number per kind
(bps, seconds, Hz, bytes, packets/s, watts). A bare number is refused for a
quantity ("ambiguous: write 10Gbps"), because the reader cannot know whether
``10`` meant Gbps or Mbps. Fields whose *name* carries the unit
(``cycles_per_packet``, ``cores``, ``entries``) are plain numbers and do not use
this module.

The pydantic types at the bottom (``Bandwidth``, ``Duration`` ...) parse on
validation and serialise back to an exact base-unit string (``"3.2e+10bps"``
style via ``repr``), so ``Scenario.model_dump()`` round-trips. ``human()``
gives the short display form used in summaries. Pure functions, no state.
"""

from __future__ import annotations

import math
from decimal import Decimal
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema
from pydantic_core import PydanticCustomError


class UnitError(ValueError):
    """A quantity string that cannot be read; the message says what to write instead."""


@dataclass(frozen=True)
class Kind:
    """One physical kind: its base unit, accepted suffixes (with scale) and an example."""

    name: str  # "bandwidth"
    base: str  # "bps"
    units: dict[str, float]
    example: str  # "10Gbps"
    integral: bool = False  # sizes are whole bytes
    display: tuple[str, ...] = ()  # units used by human(), largest first
    limit: float = math.inf  # the largest value the models handle (bounds keep validate and run in step)


BANDWIDTH = Kind(
    "bandwidth",
    "bps",
    {"bps": 1.0, "Kbps": 1e3, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12},
    "10Gbps",
    display=("Tbps", "Gbps", "Mbps", "Kbps", "bps"),
    limit=1e15,  # 1000 Tbps
)
DURATION = Kind(
    "time",
    "s",
    {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0},
    "26us",
    display=("s", "ms", "µs", "ns"),
    limit=1e7,  # ~116 days; the emulator's picosecond clock reaches ~213 days
)
FREQUENCY = Kind(
    "frequency",
    "Hz",
    {"Hz": 1.0, "kHz": 1e3, "KHz": 1e3, "MHz": 1e6, "GHz": 1e9},
    "2.7GHz",
    display=("GHz", "MHz", "kHz", "Hz"),
    limit=1e12,
)
SIZE = Kind(
    "size",
    "B",
    {
        "B": 1,
        "KB": 1000,
        "kB": 1000,
        "MB": 1000**2,
        "GB": 1000**3,
        "TB": 1000**4,
        "KiB": 1024,
        "MiB": 1024**2,
        "GiB": 1024**3,
        "TiB": 1024**4,
    },
    "2KiB",
    integral=True,
    display=("TiB", "GiB", "MiB", "KiB", "B"),
    limit=1024**5,  # 1 PiB
)
PACKET_RATE = Kind(
    "packet rate",
    "pps",
    {"pps": 1.0, "Kpps": 1e3, "kpps": 1e3, "Mpps": 1e6, "Gpps": 1e9},
    "1.5Mpps",
    display=("Gpps", "Mpps", "Kpps", "pps"),
    limit=1e12,
)
POWER = Kind("power", "W", {"mW": 1e-3, "W": 1.0, "kW": 1e3}, "95W", display=("kW", "W", "mW"), limit=1e6)

KINDS: tuple[Kind, ...] = (BANDWIDTH, DURATION, FREQUENCY, SIZE, PACKET_RATE, POWER)

# number, optional spaces, unit letters (µ and μ are the two micro signs)
_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-zµμ]+)\s*$")


def _kind_of_unit(unit: str) -> Kind | None:
    for k in KINDS:
        if unit in k.units:
            return k
    return None


def parse(value: Any, kind: Kind) -> float | int:
    """Read ``value`` as a quantity of ``kind`` and return it in the base unit.

    Raises UnitError with a message that names the expectation, e.g.
    ``ambiguous: write 10Gbps (a bare number has no unit)`` for a bare
    number or ``a time, expected a bandwidth such as 10Gbps`` for the wrong kind
    (the caller shows the offending value next to the message). Negative values are refused
    (no quantity in a scenario can be negative)."""
    if isinstance(value, bool):
        raise UnitError(f"expected a {kind.name} such as {kind.example}, got {value!r}")
    if isinstance(value, (int, float)):
        raise UnitError(f"ambiguous: write {_suggest(value, kind)} (a bare number has no unit)")
    if not isinstance(value, str):
        raise UnitError(f"expected a {kind.name} string such as {kind.example}, got {type(value).__name__}")
    m = _QUANTITY.match(value)
    if not m:
        try:
            float(value)
        except ValueError:
            raise UnitError(f"not a {kind.name}: write a number followed by a unit, such as {kind.example}") from None
        raise UnitError(f"ambiguous: write {_suggest(value, kind)} (a bare number has no unit)")
    number, unit = m.group(1), m.group(2)
    scale = kind.units.get(unit)
    if scale is None:
        other = _kind_of_unit(unit)
        if other is not None:
            raise UnitError(f"a {other.name}, expected a {kind.name} such as {kind.example}")
        raise UnitError(f"unknown {kind.name} unit {unit!r}; use one of {', '.join(kind.units)}")
    x = float(number)
    if not math.isfinite(x):
        raise UnitError(f"not a finite {kind.name}")
    if x < 0:
        raise UnitError(f"negative; a {kind.name} must be ≥ 0")
    exact = Decimal(number) * Decimal(repr(scale))  # exact decimal product, rounded once
    if exact > Decimal(repr(kind.limit)):
        raise UnitError(f"too large; a {kind.name} here must be ≤ {human(kind.limit, kind)}")
    if kind.integral:
        if exact != exact.to_integral_value():
            raise UnitError("not a whole number of bytes")
        return int(exact)
    return float(exact)


def _suggest(number: Any, kind: Kind) -> str:
    """``10`` -> ``10Gbps`` (the example's unit), used in 'ambiguous' messages."""
    unit = _QUANTITY.match(kind.example).group(2)  # type: ignore[union-attr]
    text = str(number).strip()
    return f"{text}{unit}"


def canonical(value: float | int, kind: Kind) -> str:
    """Exact base-unit text: ``parse(canonical(x, k), k) == x`` for every x ≥ 0."""
    if kind.integral:
        return f"{int(value)}{kind.base}"
    return f"{float(value)!r}{kind.base}"


def human(value: float | int | None, kind: Kind, digits: int = 4) -> str:
    """Short display text: 32e9 -> ``32 Gbps``, 2.6e-05 -> ``26 µs``, 1280 -> ``1280 B``,
    None -> ``-``."""
    if value is None:
        return "-"
    if value == 0:
        return f"0 {kind.base}"
    for unit in kind.display:
        scale = kind.units[unit]
        if kind.integral and int(value) % int(scale) != 0:
            continue  # sizes: the largest unit that divides exactly (1280 B, 2 KiB)
        if abs(value) >= scale or unit == kind.display[-1]:
            return f"{float(value) / scale:.{digits}g} {unit}"
    return f"{value} {kind.base}"  # pragma: no cover - display always ends with the base unit


def _annotated(kind: Kind, pytype: type) -> Any:
    def validate(v: Any) -> Any:
        try:
            return parse(v, kind)
        except UnitError as e:
            raise PydanticCustomError("unit", "{reason}", {"reason": str(e)}) from None

    def serialize(v: Any) -> str:
        return canonical(v, kind)

    return Annotated[
        pytype,
        BeforeValidator(validate),
        PlainSerializer(serialize, return_type=str),
        WithJsonSchema({"type": "string", "description": f"{kind.name}, e.g. {kind.example}"}),
    ]


Bandwidth = _annotated(BANDWIDTH, float)
"""Bits per second, written e.g. ``32Gbps``."""
Duration = _annotated(DURATION, float)
"""Seconds, written e.g. ``26us`` / ``4µs`` / ``7ms``."""
Frequency = _annotated(FREQUENCY, float)
"""Hertz, written e.g. ``2.7GHz``."""
Size = _annotated(SIZE, int)
"""Bytes, written e.g. ``64B`` / ``2KiB`` / ``16MiB``."""
PacketRate = _annotated(PACKET_RATE, float)
"""Packets per second, written e.g. ``1.5Mpps``."""
Power = _annotated(POWER, float)
"""Watts, written e.g. ``95W``."""
