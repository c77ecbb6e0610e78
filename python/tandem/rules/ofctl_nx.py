"""ovs-ofctl text of Open vSwitch's extension actions <-> IR: ``load``,
``move``, ``push``, ``pop``, ``note``, ``exit`` and subfields
(``NXM_NX_REG0[0..7]``, ``reg0[]``, ``OXM_OF_METADATA[3]``).

Subfields are named as Open vSwitch names them (its NXM/OXM names or field
names, ``nxm.SUBFIELD_NAMES``) and printed with the NXM/OXM name it prints.
Register views (``xreg1``, ``NXM_NX_XXREG0``) are kept as operands of move,
push and pop; a load into one becomes loads into its registers. Pure; errors
are ``OfctlSyntaxError`` from ``Loc.error``.
"""

from __future__ import annotations

from . import fields as F
from . import nxm as NXM
from .ir import REG_VIEWS, Action, Conjunction, Exit, MoveField, Note, RuleError, SetField, StackPop, StackPush, Subfield, split_register
from .ofctl_lex import Loc, Token, colon_arg, suggest

NX_ACTION_NAMES = ("load", "move", "push", "pop", "note", "exit", "conjunction")


def parse_subfield(tok: Token, loc: Loc) -> Subfield:
    """``NAME[]``, ``NAME[i]`` or ``NAME[a..b]`` (bits a through b, 0 = least significant)."""
    text = tok.text.strip()
    i = text.find("[")
    if i < 0 or not text.endswith("]"):
        raise loc.error(f"{text!r}: expected a subfield FIELD[], FIELD[bit] or FIELD[first..last]", tok.column, text)
    name, inside = text[:i], text[i + 1:-1]
    field = NXM.SUBFIELD_NAMES.get(name)
    if field is None:
        raise loc.error(f"unknown field {name!r}{suggest(name, sorted(NXM.SUBFIELD_NAMES))}", tok.column, name)
    width = NXM.NARROW_NAMES.get(name, NXM.OPERANDS[field].bits)
    try:
        if inside == "":
            ofs, n_bits = 0, width
        elif ".." in inside:
            a, b = inside.split("..", 1)
            first, last = F.parse_int(a, 16), F.parse_int(b, 16)
            ofs, n_bits = first, last - first + 1
        else:
            ofs, n_bits = F.parse_int(inside, 16), 1
    except ValueError as e:
        raise loc.error(f"bad subfield {text!r}: {e}", tok.column, text) from None
    if n_bits < 1 or ofs + n_bits > width:
        raise loc.error(f"{text}: bits {ofs}..{ofs + n_bits - 1} do not fit {name} ({width} bits)", tok.column, text)
    return Subfield(field, ofs, n_bits)


def format_subfield(sf: Subfield) -> str:
    name = NXM.OPERANDS[sf.field].name
    if sf.ofs == 0 and sf.n_bits == NXM.OPERANDS[sf.field].bits:
        return f"{name}[]"
    if sf.n_bits == 1:
        return f"{name}[{sf.ofs}]"
    return f"{name}[{sf.ofs}..{sf.ofs + sf.n_bits - 1}]"


def parse_nx_action(tok: Token, lname: str, loc: Loc) -> list[Action]:
    """One of ``NX_ACTION_NAMES`` -> IR actions (a load into a register view gives one per register)."""
    text = tok.text
    if lname == "conjunction":
        return [_conjunction(tok, loc)]
    if lname == "exit":
        if text.lower() != "exit":
            raise loc.error("exit takes no argument", tok.column, text)
        return [Exit()]
    arg = colon_arg(tok, loc)
    try:
        if lname == "note":
            return [Note(_note_bytes(arg, loc))]
        if lname in ("push", "pop"):
            sf = parse_subfield(arg, loc)
            return [StackPush(sf) if lname == "push" else StackPop(sf)]
        src, dst = arg.split("->")
        if dst is None:
            raise loc.error(f"{lname} needs {'VALUE' if lname == 'load' else 'SRC'}->DST", arg.column, arg.text)
        d = parse_subfield(dst, loc)
        if lname == "move":
            s = parse_subfield(src, loc)
            if s.n_bits != d.n_bits:
                raise loc.error(f"move: source is {s.n_bits} bits wide but destination is {d.n_bits} bits wide",
                                arg.column, arg.text)
            return [MoveField(s, d)]
        try:
            value = F.parse_int(src.text, d.n_bits)
        except ValueError as e:
            raise loc.error(f"load: value {src.text!r} does not fit {d.n_bits} bits: {e}", src.column, src.text) from None
        return load_actions(d, value)
    except RuleError as e:
        raise loc.error(f"{lname}: {e}", tok.column, text) from None


def load_actions(dst: Subfield, value: int) -> list[Action]:
    """``load:value->dst`` as masked set_fields (one per register of a register view)."""
    v, m = value << dst.ofs, ((1 << dst.n_bits) - 1) << dst.ofs
    if dst.field in REG_VIEWS and not dst.field.startswith("reg"):
        return [SetField(f, fv, fm) for f, fv, fm in split_register(dst.field, v, m)]
    return [SetField(dst.field, v, m)]


def _conjunction(tok: Token, loc: Loc) -> Conjunction:
    """``conjunction(id, k/n)``."""
    text = tok.text.strip()
    i = text.find("(")
    inner = text[i + 1:-1] if i >= 0 and text.endswith(")") else ""
    cid, _, kn = inner.partition(",")
    k, _, n = kn.partition("/")
    try:
        cid_k_n = F.parse_int(cid.strip(), 32), F.parse_int(k.strip(), 8), F.parse_int(n.strip(), 8)
    except ValueError:
        raise loc.error(f"{text!r}: expected conjunction(id, k/n)", tok.column, text) from None
    try:
        return Conjunction(*cid_k_n)
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def _note_bytes(arg: Token, loc: Loc) -> bytes:
    """``note:01.02.ab`` (hex bytes, periods optional between them)."""
    digits = arg.text.replace(".", "")
    if len(digits) % 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise loc.error(f"note:{arg.text}: expected hex bytes such as 01.02.ab", arg.column, arg.text)
    return bytes.fromhex(digits)


def format_nx_action(a: Action) -> str | None:
    """Text of an extension action (None if ``a`` is not one)."""
    if isinstance(a, MoveField):
        return f"move:{format_subfield(a.src)}->{format_subfield(a.dst)}"
    if isinstance(a, StackPush):
        return f"push:{format_subfield(a.src)}"
    if isinstance(a, StackPop):
        return f"pop:{format_subfield(a.dst)}"
    if isinstance(a, Note):
        return "note:" + ".".join(f"{b:02x}" for b in a.data)
    if isinstance(a, Exit):
        return "exit"
    if isinstance(a, Conjunction):
        return f"conjunction({a.id},{a.k}/{a.n})"
    return None


def format_load(a: SetField) -> str | None:
    """A masked set_field as ``load`` (None when the mask is not one run of bits)."""
    mask = a.mask
    if mask is None:
        return None
    ofs = (mask & -mask).bit_length() - 1
    n_bits = (mask >> ofs).bit_length()
    if mask != ((1 << n_bits) - 1) << ofs or ofs + n_bits > NXM.OPERANDS[str(a.field)].bits:
        return None
    return f"load:{a.value >> ofs:#x}->{format_subfield(Subfield(str(a.field), ofs, n_bits))}"
