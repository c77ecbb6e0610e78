"""ovs-ofctl text of Open vSwitch's hash-selection actions <-> IR:
``multipath(FIELDS,BASIS,ALGORITHM,N_LINKS,ARG,DST[..])``,
``bundle(FIELDS,BASIS,ALGORITHM,ofport,members:P1,P2,...)`` and
``bundle_load(FIELDS,BASIS,ALGORITHM,ofport,DST[..],members:P1,...)`` (``slaves:``
is read as ``members:``, as Open vSwitch 3.1 reads it), printed as ovs-ofctl 3.1
prints them. Numbers are decimal (OVS reads them with atoi); members are port
numbers or reserved ports, by name (any case) or by their OpenFlow 1.0 number
(65528 is IN_PORT; NONE and ANY are both 0xffff, printed ANY). Pure; errors are
``OfctlSyntaxError`` from ``Loc.error``.
"""

from __future__ import annotations

from .ir import BUNDLE_RESERVED_MEMBERS, OFPP_ANY, OFPP_CONTROLLER, RESERVED_PORT_NAMES, Action, Bundle, Multipath, RuleError
from .ofctl_lex import Loc, Token
from .ofctl_nx import format_subfield, parse_subfield

HASH_ACTION_NAMES = ("multipath", "bundle", "bundle_load")
_USAGE = {"multipath": "FIELDS,BASIS,ALGORITHM,N_LINKS,ARG,DST", "bundle": "FIELDS,BASIS,ALGORITHM,ofport,members:PORT,...",
          "bundle_load": "FIELDS,BASIS,ALGORITHM,ofport,DST,members:PORT,..."}


def hash_action_name(text: str) -> str | None:
    """The action's name if ``text`` is one of these actions, else None."""
    name = text.split("(", 1)[0].strip().lower()
    return name if name in HASH_ACTION_NAMES else None


def _args(tok: Token, loc: Loc, name: str) -> tuple[list[str], int]:
    text = tok.text.strip()
    if "(" not in text or not text.endswith(")"):
        raise loc.error(f"{name} needs ({_USAGE[name]})", tok.column, text)
    inner = text[text.index("(") + 1:-1]
    return [a.strip() for a in inner.split(",")], tok.column + text.index("(") + 1


def _int(s: str, what: str, tok: Token, loc: Loc) -> int:
    if not s.isdigit():
        raise loc.error(f"{what} {s!r} is not a decimal number", tok.column, tok.text)
    return int(s)


_MEMBER_NAMES = {RESERVED_PORT_NAMES[p]: p for p in BUNDLE_RESERVED_MEMBERS} | {"NONE": OFPP_ANY, "CONTROLLER": OFPP_CONTROLLER}


def _member(s: str, name: str, tok: Token, loc: Loc) -> int:
    """One member: a port number, or a reserved port by name or OpenFlow 1.0 number."""
    port = _MEMBER_NAMES.get(s.upper())
    if port is None:
        port = _int(s, f"{name} member (a port number or IN_PORT, TABLE, NORMAL, FLOOD, ALL, LOCAL, NONE)", tok, loc)
        if 0xFF00 <= port <= 0xFFFF:  # (an OpenFlow 1.0 number: the reserved ones map to OpenFlow 1.3's)
            port |= 0xFFFF0000
    if port > 0xFFFF and port not in BUNDLE_RESERVED_MEMBERS:  # (as Open vSwitch 3.1 refuses them)
        raise loc.error(f"{name} member {s} is not supported: members are port numbers 0..65279 or the reserved "
                        "ports IN_PORT, TABLE, NORMAL, FLOOD, ALL, LOCAL, NONE", tok.column, tok.text)
    return port


def parse_hash_action(tok: Token, loc: Loc) -> Action:
    name = hash_action_name(tok.text)
    assert name is not None
    args, col = _args(tok, loc, name)
    try:
        if name == "multipath":
            if len(args) != 6:
                raise loc.error(f"multipath needs 6 arguments ({_USAGE[name]}), got {len(args)}", tok.column, tok.text)
            fields, basis, alg, n_links, arg, dst = args
            return Multipath(fields.lower(), _int(basis, "multipath basis", tok, loc), alg.lower(),
                             _int(n_links, "multipath n_links", tok, loc), _int(arg, "multipath arg", tok, loc),
                             parse_subfield(Token(dst, col), loc))
        head = 5 if name == "bundle_load" else 4
        rest = ",".join(args[head:])
        delim, colon, first = rest.partition(":")
        if len(args) <= head or not colon or delim.strip().lower() not in ("members", "slaves"):
            raise loc.error(f"{name} needs ({_USAGE[name]})", tok.column, tok.text)
        fields, basis, alg, member_type = args[:4]
        if member_type.lower() != "ofport":
            raise loc.error(f"{name}: unknown member type `{member_type}' (ofport)", tok.column, tok.text)
        members = [m for m in first.replace("[", ",").replace("]", ",").split(",") if m.strip()]
        ports = tuple(_member(m.strip(), name, tok, loc) for m in members)
        dst = parse_subfield(Token(args[4], col), loc) if head == 5 else None
        return Bundle(fields.lower(), _int(basis, f"{name} basis", tok, loc), alg.lower(), ports, dst)
    except RuleError as e:
        raise loc.error(str(e), tok.column, tok.text) from None


def format_hash_action(a: Action) -> str | None:
    """Text of one of these actions (None if ``a`` is not one)."""
    if isinstance(a, Multipath):
        return (f"multipath({a.fields},{a.basis},{a.algorithm},{a.n_links},{a.arg},{format_subfield(a.dst)})")
    if isinstance(a, Bundle):
        members = ",".join(RESERVED_PORT_NAMES.get(m, str(m)) for m in a.members)
        if a.dst is None:
            return f"bundle({a.fields},{a.basis},{a.algorithm},ofport,members:{members})"
        return f"bundle_load({a.fields},{a.basis},{a.algorithm},ofport,{format_subfield(a.dst)},members:{members})"
    return None
