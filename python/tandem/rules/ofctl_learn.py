"""ovs-ofctl text of Open vSwitch's ``learn`` action <-> IR:
``learn(table=T,idle_timeout=N,hard_timeout=N,fin_idle_timeout=N,fin_hard_timeout=N,
priority=N,send_flow_rem,delete_learned,cookie=N,limit=N,result_dst=FIELD[i],SPEC...)``
with specs ``FIELD[a..b]`` (match the packet's own bits), ``DST[..]=SRC[..]``,
``DST=VALUE`` (``eth_type=0x800``, ``reg0[0..7]=0x12``), ``load:SRC[..]->DST[..]``,
``load:VALUE->DST[..]`` and ``output:SRC[..]``, in the order and spelling ovs-ofctl
3.1 prints them. Pure; errors are ``OfctlSyntaxError`` from ``Loc.error``.
"""

from __future__ import annotations

from . import fields as F
from . import nxm as NXM
from .ir import FIELDS, LEARN_LOAD, LEARN_MATCH, LEARN_OUTPUT, OPERANDS, Action, Learn, LearnSpec, RuleError, Subfield
from .ofctl_lex import Loc, Token, split_top
from .ofctl_match import ALIASES, PRINT, format_value, parse_value
from .ofctl_nx import format_subfield, parse_subfield

LEARN_ACTION_NAMES = ("learn",)
_INTS = {"table": 8, "priority": 16, "idle_timeout": 16, "hard_timeout": 16, "fin_idle_timeout": 16,
         "fin_hard_timeout": 16, "cookie": 64, "limit": 32}
_FLAGS = ("send_flow_rem", "delete_learned")
_PLAIN_KINDS = ("mac", "ipv4", "ipv6", "hex", "int", "port")


def is_learn(text: str) -> bool:
    return text.split("(", 1)[0].strip().lower() == "learn"


def parse_learn_action(tok: Token, loc: Loc) -> Action:
    text = tok.text.strip()
    if not (text[:6].lower() == "learn(" and text.endswith(")")):
        raise loc.error(f"{text!r}: expected learn(ARG,...)", tok.column, text)
    args: dict = {}
    specs: list[LearnSpec] = []
    inner = text[6:-1]
    for arg in split_top(inner, tok.column + 6, loc) if inner.strip() else []:
        key, eq, val = arg.text.partition("=")
        key = key.strip()
        try:
            if key in _INTS and eq:
                args[key] = F.parse_int(val, _INTS[key])
            elif key in _FLAGS and not eq:
                args[key] = True
            elif key == "result_dst" and eq:
                args[key] = parse_subfield(Token(val, arg.column + 11), loc)
            else:
                specs.append(_parse_spec(arg, loc))
        except ValueError as e:
            if isinstance(e, RuleError) or type(e) is ValueError:
                raise loc.error(f"{arg.text}: {e}" if str(e).startswith("learn") else f"learn: {arg.text}: {e}", arg.column, arg.text) from None
            raise
    try:
        return Learn(specs=tuple(specs), **args)
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def _field_token(tok: Token, loc: Loc) -> Subfield:
    """``NAME[..]`` or a bare field name (the whole field)."""
    text = tok.text.strip()
    if "[" not in text:
        text += "[]"
    return parse_subfield(Token(text, tok.column), loc)


def _is_field(text: str) -> bool:
    text = text.strip()
    return "[" in text or text in NXM.SUBFIELD_NAMES


def _parse_spec(arg: Token, loc: Loc) -> LearnSpec:
    text = arg.text
    low = text.lower()
    if low.startswith("output:"):
        return LearnSpec(LEARN_OUTPUT, src=_field_token(Token(text[7:], arg.column + 7), loc))
    if low.startswith("load:"):
        src, arrow, dst = text[5:].rpartition("->")
        if not arrow:
            raise loc.error(f"learn: {text!r}: expected load:SRC->DST", arg.column, text)
        d = _field_token(Token(dst, arg.column + 7 + len(src)), loc)
        if _is_field(src):
            return LearnSpec(LEARN_LOAD, src=_field_token(Token(src, arg.column + 5), loc), dst=d)
        return LearnSpec(LEARN_LOAD, value=F.parse_int(src, d.n_bits), dst=d)
    dst, eq, src = text.partition("=")
    if not eq:  # FIELD[..]: the learned flow matches these bits of the packet
        sf = _field_token(arg, loc)
        return LearnSpec(LEARN_MATCH, src=sf, dst=sf)
    field = ALIASES.get(dst.strip()) if "[" not in dst else None
    d = Subfield.whole(field) if field is not None and field in OPERANDS else _field_token(Token(dst, arg.column), loc)
    if _is_field(src):
        return LearnSpec(LEARN_MATCH, src=_field_token(Token(src, arg.column + len(dst) + 1), loc), dst=d)
    if _whole_plain(d):  # the field's own notation: eth_type=0x800, nw_src=10.0.0.1, in_port=5
        value, _ = parse_value(Token(src, arg.column + len(dst) + 1), d.field, loc, False)
        return LearnSpec(LEARN_MATCH, value=value, dst=d)
    return LearnSpec(LEARN_MATCH, value=F.parse_int(src, d.n_bits), dst=d)


def _whole_plain(sf: Subfield) -> bool:
    """Is ``sf`` a whole IR field whose value Open vSwitch writes in the field's notation?"""
    f = sf.field
    return (f in FIELDS and sf.ofs == 0 and sf.n_bits == FIELDS[f].bits == OPERANDS[f]
            and PRINT[f][1] in _PLAIN_KINDS)


def _format_spec(s: LearnSpec) -> str:
    if s.kind == LEARN_OUTPUT:
        return f"output:{format_subfield(s.src)}"  # type: ignore[arg-type]
    dst = format_subfield(s.dst)  # type: ignore[arg-type]
    if s.kind == LEARN_LOAD:
        src = format_subfield(s.src) if s.src is not None else f"{s.value:#x}"
        return f"load:{src}->{dst}"
    if s.src is None:
        if _whole_plain(s.dst):  # type: ignore[arg-type]
            return f"{PRINT[s.dst.field][0]}={format_value(s.dst.field, s.value)}"  # type: ignore[union-attr]
        return f"{dst}={s.value:#x}"
    if s.src == s.dst:
        return dst
    return f"{dst}={format_subfield(s.src)}"


def format_learn_action(a: Action) -> str | None:
    """Text of a learn action as ovs-ofctl prints it (None if ``a`` is not one)."""
    if not isinstance(a, Learn):
        return None
    parts = [f"table={a.table}"]
    for name in ("idle_timeout", "hard_timeout", "fin_idle_timeout", "fin_hard_timeout"):
        if getattr(a, name):
            parts.append(f"{name}={getattr(a, name)}")
    if a.priority != Learn.priority:
        parts.append(f"priority={a.priority}")
    parts += [f for f in _FLAGS if getattr(a, f)]
    if a.cookie:
        parts.append(f"cookie={a.cookie:#x}")
    if a.limit:
        parts.append(f"limit={a.limit}")
    if a.result_dst is not None:
        parts.append(f"result_dst={format_subfield(a.result_dst)}")
    parts += [_format_spec(s) for s in a.specs]
    return f"learn({','.join(parts)})"
