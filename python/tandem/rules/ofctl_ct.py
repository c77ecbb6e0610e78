"""ovs-ofctl text of Open vSwitch's connection-tracking actions <-> IR:
``ct(commit,force,table=T,zone=N|zone=FIELD[a..b],exec(set_field:V[/M]->ct_mark,
load:V->NXM_NX_CT_LABEL[a..b]),alg=ftp|tftp)`` and ``ct_clear``, in the order and spelling
ovs-ofctl 3.1 prints them. Pure; errors are ``OfctlSyntaxError`` from ``Loc.error``.
"""

from __future__ import annotations

from . import fields as F
from .ct_nat import format_nat, parse_nat
from .ir import CT_ALGS, CT_EXEC_FIELDS, ct_alg_number, Action, Ct, CtClear, FIELDS, RuleError
from .ofctl_lex import Loc, Token, split_top
from .ofctl_match import format_value, parse_value
from .ofctl_nx import format_subfield, parse_subfield

CT_ACTION_NAMES = ("ct", "ct_clear")


def ct_action_name(text: str) -> str | None:
    """``ct`` or ``ct_clear`` when ``text`` is one of those actions, else None."""
    name = text.split(":", 1)[0].split("(", 1)[0].strip().lower()
    return name if name in CT_ACTION_NAMES else None


def parse_ct_action(tok: Token, loc: Loc) -> Action:
    text = tok.text.strip()
    name = ct_action_name(text)
    if name == "ct_clear":
        if text.lower() != "ct_clear":
            raise loc.error("ct_clear takes no argument", tok.column, text)
        return CtClear()
    if text.lower() == "ct":
        return Ct()
    if not (text[:3].lower() == "ct(" and text.endswith(")")):
        raise loc.error(f"{text!r}: expected ct or ct(ARG,...)", tok.column, text)
    args = dict(commit=False, force=False, zone=0, zone_src=None, table=None, exec=(), nat=None, alg=None)
    for arg in split_top(text[3:-1], tok.column + 3, loc) if text[3:-1].strip() else []:
        key, _, val = arg.text.partition("=")
        key = key.strip().lower()
        try:
            if key in ("commit", "force") and not val:
                args[key] = True
            elif key == "table":
                args["table"] = F.parse_int(val, 8)
            elif key == "zone":
                if "[" in val:
                    args["zone_src"] = parse_subfield(Token(val, arg.column + 5), loc)
                else:
                    args["zone"] = F.parse_int(val, 16)
            elif arg.text.strip() == "nat" or arg.text.strip().startswith("nat("):
                args["nat"] = parse_nat(arg.text.strip())
            elif key.startswith("exec(") and arg.text.endswith(")"):
                args["exec"] = tuple(_parse_exec(Token(arg.text[5:-1], arg.column + 5), loc))
            elif key == "alg":
                if (val.strip() not in CT_ALGS or not val.strip()) and ct_alg_number(val.strip()) is None:
                    raise loc.error(f'invalid conntrack helper "{val.strip()}" (ftp, tftp, or a number 1..65535 but 21 and 69)',
                                    arg.column, arg.text)
                args["alg"] = val.strip()
            else:
                raise loc.error(f"ct: unknown argument {arg.text!r} (commit, force, table=T, zone=Z, exec(...))",
                                arg.column, arg.text)
        except ValueError as e:
            if isinstance(e, RuleError) or type(e) is ValueError:
                raise loc.error(f"ct: {arg.text}: {e}", arg.column, arg.text) from None
            raise
    try:
        return Ct(**args)
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def _parse_exec(tok: Token, loc: Loc) -> list[tuple[str, int, int | None]]:
    out = []
    for a in split_top(tok.text, tok.column, loc) if tok.text.strip() else []:
        name, _, rest = a.text.partition(":")
        src, arrow, dst = rest.rpartition("->")
        if not arrow:
            raise loc.error(f"ct exec: {a.text!r}: expected set_field:V->ct_mark or load:V->FIELD[..]", a.column, a.text)
        if name == "set_field":
            field = dst.strip()
            if field not in CT_EXEC_FIELDS:
                raise loc.error(f"ct action doesn't support nested modification of {field}", a.column, a.text)
            value, mask = parse_value(Token(src, a.column + 10), field, loc, True)
            out.append((field, value, mask))
        elif name == "load":
            sf = parse_subfield(Token(dst, a.column + len(name) + len(src) + 3), loc)
            if sf.field not in CT_EXEC_FIELDS:
                raise loc.error(f"ct action doesn't support nested modification of {sf.field}", a.column, a.text)
            value = F.parse_int(src, sf.n_bits)
            m = ((1 << sf.n_bits) - 1) << sf.ofs
            out.append((sf.field, value << sf.ofs, None if m == (1 << FIELDS[sf.field].bits) - 1 else m))
        else:
            raise loc.error(f"ct exec: {name!r}: only set_field / load of ct_mark or ct_label", a.column, a.text)
    return out


def format_ct_action(a: Action) -> str | None:
    """Text of a ct / ct_clear action as ovs-ofctl prints it (None if ``a`` is neither)."""
    if isinstance(a, CtClear):
        return "ct_clear"
    if not isinstance(a, Ct):
        return None
    parts = []
    if a.commit:
        parts.append("commit")
    if a.force:
        parts.append("force")
    if a.table is not None:
        parts.append(f"table={a.table}")
    if a.zone_src is not None:
        parts.append(f"zone={format_subfield(a.zone_src)}")
    elif a.zone:
        parts.append(f"zone={a.zone}")
    if a.nat is not None:
        parts.append(format_nat(a.nat))
    if a.exec:
        parts.append("exec(" + ",".join(f"set_field:{format_value(f, v, m)}->{f}" for f, v, m in a.exec) + ")")
    if a.alg is not None:
        parts.append(f"alg={a.alg}")
    return f"ct({','.join(parts)})" if parts else "ct"
