"""Text forms of POF-FTs: parse the `tandem pof add` syntax and print the
`tc -s filter show`-like dump. Pure.

Match:   OFFSET/LENGTH=VALUE[,OFFSET/LENGTH=VALUE...]       e.g. 208/32=0x02020203
Actions: set_field:OFFSET/LENGTH=VALUE | add_field:OFFSET/LENGTH=VALUE | output:PORT, comma-separated
(offsets and lengths in bits from the first bit of the Ethernet header, as in POF).
"""

from __future__ import annotations

from tandem.rules.ir import Output, PofAddField, PofField, RuleError, SetField


class PofSyntaxError(ValueError):
    pass


def _int(s: str, what: str, where: str) -> int:
    try:
        return int(s.strip(), 0)
    except ValueError:
        raise PofSyntaxError(f"{where}: {what} {s.strip()!r} is not a number") from None


def _olv(text: str, where: str) -> tuple[int, int, int]:
    left, eq, value = text.partition("=")
    off, slash, length = left.partition("/")
    if not eq or not slash:
        raise PofSyntaxError(f"{where}: expected OFFSET/LENGTH=VALUE, got {text.strip()!r}")
    o, l, v = _int(off, "offset", where), _int(length, "length", where), _int(value, "value", where)
    if o < 0 or not 0 < l <= 128:
        raise PofSyntaxError(f"{where}: need offset >= 0 and 0 < length <= 128 bits, got <{o},{l}>")
    if v >> l:
        raise PofSyntaxError(f"{where}: value {v:#x} does not fit in {l} bits")
    return o, l, v


def parse_match(text: str, where: str = "match") -> tuple[tuple[int, int, int], ...]:
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise PofSyntaxError(f"{where}: empty; expected OFFSET/LENGTH=VALUE")
    return tuple(_olv(p, f"{where}[{i}]") for i, p in enumerate(parts))


def parse_actions(text: str, where: str = "actions") -> tuple:
    out = []
    for i, part in enumerate(p.strip() for p in text.split(",") if p.strip()):
        name, colon, arg = part.partition(":")
        w = f"{where}[{i}]"
        if not colon:
            raise PofSyntaxError(f"{w}: expected NAME:ARG, got {part!r}")
        name = name.strip().lower()
        try:
            if name == "output":
                out.append(Output(_int(arg, "port", w)))
            elif name in ("set_field", "setfield"):
                o, l, v = _olv(arg, w)
                out.append(SetField(PofField(o, l), v))
            elif name in ("add_field", "addfield"):
                o, l, v = _olv(arg, w)
                out.append(PofAddField(o, l, v))
            else:
                raise PofSyntaxError(f"{w}: unknown action {name!r}; known: set_field, add_field, output")
        except RuleError as e:
            raise PofSyntaxError(f"{w}: {e}") from None
    if not out:
        raise PofSyntaxError(f"{where}: no actions")
    return tuple(out)


def format_actions(actions) -> str:
    words = []
    for a in actions:
        if isinstance(a, Output):
            words.append(f"output:{a.port}")
        elif isinstance(a, SetField) and isinstance(a.field, PofField):
            words.append(f"set_field:{a.field.offset}/{a.field.length}={_hex(a.value, a.field.length)}")
        elif isinstance(a, PofAddField):
            words.append(f"add_field:{a.offset}/{a.length}={_hex(a.value, a.length)}")
        else:
            words.append(repr(a))
    return ",".join(words)


def _hex(v: int, bits: int) -> str:
    return f"{v:#0{2 + (bits + 3) // 4}x}"


def format_match(match) -> str:
    return " ".join(f"<{o},{l},{_hex(v, l)}>" for o, l, v in match)


def format_dump(system) -> str:
    lines = []
    for ft in sorted(system.fts.values(), key=lambda f: f.seq):
        st = system.stats(ft)
        flag = "in_hw" if ft.in_hw else "not_in_hw"
        pend = [p.kind for p in system.pending if ft.id in p.ids]
        lines.append(f"filter protocol all pref {ft.priority} pof chain 0 handle {ft.id}")
        lines.append(f"  match {format_match(ft.match)}")
        lines.append(f"  {flag}" + (f" (pending: {', '.join(pend)})" if pend else ""))
        lines.append(f"  action order 1: {format_actions(ft.actions)}")
        for path in ("hw", "kernel"):
            lines.append(f"   Sent {st[path][1]} bytes {st[path][0]} pkt ({'sNIC hardware' if path == 'hw' else 'kernel'} path)")
    return "\n".join(lines)
