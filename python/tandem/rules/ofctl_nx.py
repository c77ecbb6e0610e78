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
from .ir import (
    OFPCML_NO_BUFFER, OFPP_IN_PORT, REG_VIEWS, RESERVED_PORT_NAMES, Action, Exit, MoveField, Note, OutputReg, Resubmit,
    RuleError, SetField, StackPop, StackPush, Subfield, split_register,
)
from .ir import OFPP_NONE_16, SAMPLE_DIRECTIONS, CheckPktLarger, Conjunction, PopQueue, Sample
from .ir import DecNshTtl
from . import encap as ENC
from . import decap as DEC
from .ofctl_lex import Loc, Token, colon_arg, suggest
from .nsh_ttl_load import nsh_ttl_load

NX_ACTION_NAMES = ("load", "move", "push", "pop", "note", "exit", "pop_queue", "sample", "set_tunnel", "set_tunnel64",
                   "check_pkt_larger", "conjunction", "resubmit")
NX_ACTION_NAMES = NX_ACTION_NAMES + ("dec_nsh_ttl",)
NX_ACTION_NAMES = NX_ACTION_NAMES + ("encap",)
NX_ACTION_NAMES = NX_ACTION_NAMES + ("decap",)
_PORT_NAMES = {name: num for num, name in RESERVED_PORT_NAMES.items() if name != "ANY"}


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
    if lname in ("exit", "pop_queue"):
        if text.lower() != lname:
            raise loc.error(f"{lname} takes no argument", tok.column, text)
        return [Exit() if lname == "exit" else PopQueue()]
    if lname == "encap":
        return [_parse_encap(tok, loc)]
    if lname == "decap":
        return [_parse_decap(tok, loc)]
    if lname == "dec_nsh_ttl":
        if text.lower() != lname:
            raise loc.error(f"{lname} takes no argument", tok.column, text)
        return [DecNshTtl()]
    if lname == "resubmit":
        return [_parse_resubmit(tok, loc)]
    if lname == "sample":
        return [_parse_sample(tok, loc)]
    if lname == "check_pkt_larger":
        return [_parse_check_pkt_larger(tok, loc)]
    if lname in ("set_tunnel", "set_tunnel64"):  # Open vSwitch's names for a write of tunnel_id (64 bits, both)
        arg = colon_arg(tok, loc)
        try:
            return [SetField("tunnel_id", F.parse_int(arg.text, 64))]
        except ValueError as e:
            raise loc.error(f"{lname}: {e}", arg.column, arg.text) from None
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


def _parse_resubmit(tok: Token, loc: Loc) -> Resubmit:
    """``resubmit:PORT``, ``resubmit(PORT)``, ``resubmit(PORT,TABLE)``, ``resubmit(,TABLE)``
    (as ovs-ofctl: an empty part keeps the packet's in_port / the rule's table)."""
    text = tok.text.strip()
    rest = text[len("resubmit"):]
    if rest.startswith(":"):
        parts = [rest[1:]]
    elif rest.startswith("(") and rest.endswith(")"):
        parts = rest[1:-1].split(",")
    else:
        raise loc.error("resubmit needs :PORT or (PORT,TABLE)", tok.column, text)
    if len(parts) > 3 or len(parts) == 3 and parts[2].strip() != "ct":
        raise loc.error(f"{text}: expected resubmit(PORT,TABLE)", tok.column, text)
    if len(parts) == 3:
        raise loc.error("resubmit(...,ct) (the connection's original direction) is not supported by OneSwitch: "
                        "no connection tracking (docs/endpoint.md)", tok.column, text)
    port_s = parts[0].strip()
    table_s = parts[1].strip() if len(parts) > 1 else ""
    try:
        port = OFPP_IN_PORT if not port_s else _PORT_NAMES.get(port_s.upper())
        if port is None:
            port = F.parse_int(port_s, 16)
            if port > 0xFEFF:
                raise ValueError(f"port {port:#x} is reserved; write its name")
        table = 255 if not table_s else F.parse_int(table_s, 8)
        if table == 255 and table_s:
            raise ValueError("table 255 is not a table")
        return Resubmit(port, table)
    except (ValueError, RuleError) as e:
        raise loc.error(f"{text}: {e}", tok.column, text) from None


def parse_output_reg(arg: Token, loc: Loc, max_len: int = OFPCML_NO_BUFFER) -> OutputReg:
    """``output:FIELD[a..b]`` (the port number a field holds)."""
    try:
        return OutputReg(parse_subfield(arg, loc), max_len)
    except RuleError as e:
        raise loc.error(str(e), arg.column, arg.text) from None


def format_resubmit(a: Resubmit) -> str:
    """As ovs-ofctl prints it."""
    port = "" if a.in_port == OFPP_IN_PORT else RESERVED_PORT_NAMES.get(a.in_port, str(a.in_port))
    if port and a.table == 255:
        return f"resubmit:{port}"
    return f"resubmit({port},{'' if a.table == 255 else a.table})"


def load_actions(dst: Subfield, value: int) -> list[Action]:
    """``load:value->dst`` as masked set_fields (one per register of a register view)."""
    v, m = value << dst.ofs, ((1 << dst.n_bits) - 1) << dst.ofs
    if dst.field == "nsh_ttl":  # (an 8-bit subfield over a 6-bit field: nsh_ttl_load.py)
        return nsh_ttl_load(value, dst.ofs, dst.n_bits)
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


_SAMPLE_KEYS = ("probability", "collector_set_id", "obs_domain_id", "obs_point_id", "sampling_port")


def _parse_sample(tok: Token, loc: Loc) -> Sample:
    """``sample(probability=N,collector_set_id=N,obs_domain_id=N,obs_point_id=N[,sampling_port=P][,ingress|egress])``."""
    i = tok.text.find("(")
    if i < 0 or not tok.text.endswith(")"):
        raise loc.error("sample needs (probability=N,...)", tok.column, tok.text)
    args: dict[str, int] = {"sampling_port": OFPP_NONE_16, "direction": 0}
    col = tok.column + i + 1
    for part in tok.text[i + 1:-1].split(","):
        key, _, value = part.strip().partition("=")
        if key in SAMPLE_DIRECTIONS[1:] and not value:
            args["direction"] = SAMPLE_DIRECTIONS.index(key)
        elif key in _SAMPLE_KEYS and value:
            try:
                args[key] = F.parse_int(value, 16 if key in ("probability", "sampling_port") else 32)
            except ValueError as e:
                raise loc.error(f"sample {key}: {e}", col, part) from None
        else:
            raise loc.error(f"sample: unknown argument {part!r}{suggest(key, list(_SAMPLE_KEYS) + ['ingress', 'egress'])}",
                            col, part)
        col += len(part) + 1
    if "probability" not in args:
        raise loc.error("sample needs probability=N (1..65535)", tok.column, tok.text)
    try:
        return Sample(**args)
    except RuleError as e:
        raise loc.error(str(e), tok.column, tok.text) from None


def _parse_check_pkt_larger(tok: Token, loc: Loc) -> CheckPktLarger:
    """``check_pkt_larger(N)->DST[bit]``."""
    text = tok.text
    close = text.find(")")
    if not text.lower().startswith("check_pkt_larger(") or close < 0 or not text[close + 1:].startswith("->"):
        raise loc.error("check_pkt_larger needs (LENGTH)->FIELD[bit]", tok.column, text)
    try:
        n = F.parse_int(text[len("check_pkt_larger("):close], 16)
    except ValueError as e:
        raise loc.error(f"check_pkt_larger length: {e}", tok.column, text) from None
    dst = parse_subfield(Token(text[close + 3:], tok.column + close + 3), loc)
    try:
        return CheckPktLarger(n, dst)
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def _format_sample(a: Sample) -> str:
    parts = [f"probability={a.probability}", f"collector_set_id={a.collector_set_id}",
             f"obs_domain_id={a.obs_domain_id}", f"obs_point_id={a.obs_point_id}"]
    if a.sampling_port != OFPP_NONE_16:
        parts.append(f"sampling_port={a.sampling_port}")
    if a.direction:
        parts.append(SAMPLE_DIRECTIONS[a.direction])
    return f"sample({','.join(parts)})"


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
    if isinstance(a, PopQueue):
        return "pop_queue"
    if isinstance(a, DecNshTtl):
        return "dec_nsh_ttl"
    if isinstance(a, ENC.ENCAP_TYPES):
        return ENC.format_encap(a)
    if isinstance(a, DEC.Decap):
        return DEC.format_decap(a)
    if isinstance(a, Sample):
        return _format_sample(a)
    if isinstance(a, CheckPktLarger):
        return f"check_pkt_larger({a.pkt_len})->{format_subfield(a.dst)}"
    if isinstance(a, Conjunction):
        return f"conjunction({a.id},{a.k}/{a.n})"
    if isinstance(a, Resubmit):
        return format_resubmit(a)
    if isinstance(a, OutputReg):
        if a.max_len == OFPCML_NO_BUFFER:
            return f"output:{format_subfield(a.src)}"
        return f"output(port={format_subfield(a.src)},max_len={a.max_len})"
    return None


def format_load(a: SetField) -> str | None:
    """A masked set_field as ``load`` (None when the mask is not one run of bits)."""
    mask = a.mask
    if mask is None or str(a.field) not in NXM.OPERANDS:  # (NSH fields are no load operand: set_field text)
        return None
    ofs = (mask & -mask).bit_length() - 1
    n_bits = (mask >> ofs).bit_length()
    if mask != ((1 << n_bits) - 1) << ofs or ofs + n_bits > NXM.OPERANDS[str(a.field)].bits:
        return None
    return f"load:{a.value >> ofs:#x}->{format_subfield(Subfield(str(a.field), ofs, n_bits))}"


def _parse_encap(tok: Token, loc: Loc) -> Action:
    """``encap(ARG)`` (encap.py: the forms OneSwitch runs)."""
    return _parse_call(tok, loc, "encap", "encap needs a header in parentheses, e.g. encap(nsh(md_type=1)) or "
                       "encap(ethernet)", ENC.parse_encap)


def _parse_decap(tok: Token, loc: Loc) -> Action:
    """``decap()`` or ``decap(packet_type(ns=N,type=T))`` (decap.py: the forms OneSwitch runs)."""
    return _parse_call(tok, loc, "decap", "decap needs parentheses: decap() or decap(packet_type(ns=N,type=T))",
                       DEC.parse_decap)


def _parse_call(tok: Token, loc: Loc, name: str, usage: str, parse) -> Action:
    """``NAME(ARG)`` parsed by ``parse(ARG)``; its EncapError (encap.py, decap.py) as a syntax error."""
    t = tok.text.strip()
    if not (t.lower().startswith(f"{name}(") and t.endswith(")")):
        raise loc.error(usage, tok.column, tok.text)
    try:
        return parse(t[len(name) + 1:-1])
    except ENC.EncapError as e:
        raise loc.error(str(e), tok.column, tok.text) from None
