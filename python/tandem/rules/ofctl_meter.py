"""ovs-ofctl meter text (``add-meter``/``mod-meter`` syntax) <-> ``meters.Meter``.

``meter=1,kbps,burst,stats,bands=type=drop,rate=1000,burst_size=50`` and, with
several bands, ``bands=type=drop,rate=1000 type=dscp_remark,rate=500,prec_level=1``
(fields separated by commas or blanks; ``type=`` starts a band; bands come
last). A unit (``kbps`` or ``pktps``) is required, as ovs-ofctl requires it.
Pure; errors are ``OfctlSyntaxError`` with the column and token.
"""

from __future__ import annotations

import re

from .ir import RuleError
from .meters import BAND_TYPES, OFPM_ALL, OFPM_NAMES, Meter, MeterBand
from .ofctl_lex import Loc, OfctlSyntaxError, refuse_non_ascii, suggest

_TOKEN = re.compile(r"[^,\s]+")
_METER_KEYS = ["meter", "kbps", "pktps", "burst", "stats", "bands"]
_BAND_KEYS = ["type", "rate", "burst_size", "prec_level"]
_NAMED = {name: mid for mid, name in OFPM_NAMES.items()}


def parse_meter(text: str, source: str = "<string>", line: int = 1, *, need_bands: bool = True) -> Meter:
    """One meter description -> Meter. ``need_bands=False`` accepts a meter with
    no bands (what ``del-meter``/``dump-meters`` name)."""
    loc = Loc(source, line)
    refuse_non_ascii(text, loc)
    meter_id, unit, flags, bands = None, None, set(), []
    band: dict[str, tuple[int, str, int]] | None = None  # key -> (value, text, column)

    def close_band() -> None:
        if band is None:
            return
        kind, ktext, kcol = band["type"]
        if "rate" not in band:
            raise loc.error(f"meter band {ktext}: rate= is required", kcol, ktext)
        try:
            bands.append(MeterBand(BAND_TYPES[kind], band["rate"][0], band.get("burst_size", (0,))[0],
                                   band.get("prec_level", (0,))[0]))
        except RuleError as e:
            raise loc.error(f"meter band {ktext}: {e}", kcol, ktext) from None

    in_bands = False
    for m in _TOKEN.finditer(text):
        tok, col = m.group(), m.start() + 1
        key, _, val = tok.partition("=")
        key = key.lower()
        if key == "bands":
            if in_bands:
                raise loc.error("bands= given twice", col, tok)
            in_bands = True
            if not val:
                continue
            key, _, val = val.partition("=")
            col += len("bands=")
            tok = tok[len("bands="):]
        if in_bands:
            if key not in _BAND_KEYS:
                raise loc.error(f"unknown meter band field {key!r}{suggest(key, _BAND_KEYS)} "
                                "(meter fields must come before bands=)", col, tok)
            if key == "type":
                close_band()
                if val.lower() not in BAND_TYPES:
                    raise loc.error(f"meter band type {val!r} is not one of {', '.join(BAND_TYPES)}", col, tok)
                band = {"type": (BAND_TYPES.index(val.lower()), tok, col)}
                continue
            if band is None:
                raise loc.error(f"meter band field {key} before type=: each band starts with type=", col, tok)
            band[key] = (_number(val, key, loc, col, tok), tok, col)
            continue
        if key == "meter":
            if val.lower() == "all":
                meter_id = OFPM_ALL
            elif val in _NAMED:  # (ovs-ofctl: meter=slowpath, meter=controller; not their numbers)
                meter_id = _NAMED[val]
            else:
                meter_id = _number(val, "meter", loc, col, tok)
                if not 1 <= meter_id <= 0xFFFF0000:
                    raise loc.error(f"meter id {meter_id} outside 1..{0xFFFF0000:#x}", col, tok)
        elif key in ("kbps", "pktps"):
            if val:
                raise loc.error(f"{key} takes no value", col, tok)
            if unit is not None and unit != key:
                raise loc.error("kbps and pktps together: a meter has one unit", col, tok)
            unit = key
        elif key in ("burst", "stats"):
            if val:
                raise loc.error(f"{key} takes no value", col, tok)
            flags.add(key)
        else:
            raise loc.error(f"unknown meter field {key!r}{suggest(key, _METER_KEYS)}", col, tok)
    close_band()
    if meter_id is None:
        raise loc.error("meter=ID is required", 1, text)
    if need_bands:
        if unit is None:
            raise loc.error("a unit is required: kbps or pktps", 1, text)
        if not bands:
            raise loc.error("at least one band is required (bands=type=drop,rate=N)", len(text) + 1, "")
    if meter_id == OFPM_ALL:
        if need_bands:
            raise loc.error("meter=all only names meters to delete or dump", 1, text)
        return Meter(OFPM_ALL)
    return Meter(meter_id, tuple(bands), pktps=unit == "pktps", burst="burst" in flags, stats="stats" in flags)


def _number(val: str, what: str, loc: Loc, col: int, tok: str) -> int:
    try:
        n = int(val, 0)
    except ValueError:
        raise loc.error(f"{what}: {val!r} is not a number", col, tok) from None
    if not 0 <= n <= 0xFFFFFFFF:
        raise loc.error(f"{what} {n} outside 0..4294967295", col, tok)
    return n


def format_meter(m: Meter) -> str:
    """ovs-ofctl add-meter text (parse_meter reads it back to the same Meter)."""
    head = [f"meter={OFPM_NAMES.get(m.meter_id, m.meter_id)}", "pktps" if m.pktps else "kbps"]
    if m.burst:
        head.append("burst")
    if m.stats:
        head.append("stats")
    bands = []
    for b in m.bands:
        s = f"type={b.type},rate={b.rate}"
        if b.burst_size:
            s += f",burst_size={b.burst_size}"
        if b.type == "dscp_remark":
            s += f",prec_level={b.prec_level}"
        bands.append(s)
    return ",".join(head) + ",bands=" + " ".join(bands)


__all__ = ["parse_meter", "format_meter", "OfctlSyntaxError"]
