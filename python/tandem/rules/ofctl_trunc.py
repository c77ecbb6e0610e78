"""ovs-ofctl text of Open vSwitch's ``output(port=P,max_len=N)`` (NXAST_OUTPUT_TRUNC)
<-> IR ``OutputTrunc``. ``P`` is a port number or a reserved port's name; as
ovs-ofctl 3.1, FLOOD, ALL, CONTROLLER, TABLE and NORMAL are refused in text
(the wire takes them; they send nothing), and N is at least 14 (the Ethernet
header). Pure; errors are ``OfctlSyntaxError`` from ``Loc.error``.
"""

from __future__ import annotations

from typing import Callable

from . import fields as F
from .ir import OFPP_ALL, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_NORMAL, OFPP_TABLE, RESERVED_PORT_NAMES, OutputTrunc, RuleError
from .ofctl_lex import Loc, Token, split_top

_NO_TRUNC = frozenset({OFPP_FLOOD, OFPP_ALL, OFPP_CONTROLLER, OFPP_TABLE, OFPP_NORMAL})


def parse_output_trunc(tok: Token, loc: Loc, port_of: Callable[[Token, Loc], int]) -> OutputTrunc:
    """``output(port=P,max_len=N)``; ``port_of`` reads a port (number or name) as ``output:P`` does."""
    text = tok.text.strip()
    inner = Token(text[len("output("):-1], tok.column + len("output("))
    args: dict[str, int] = {}
    for kv in split_top(inner.text, inner.column, loc):
        k, v = kv.split("=")
        key = k.text.strip()
        if key not in ("port", "max_len") or v is None or key in args:
            raise loc.error(f"output option {kv.text!r}: expected port=P and max_len=N, once each", kv.column, kv.text)
        if key == "port":
            args[key] = port_of(Token(v.text.strip(), v.column), loc)
        else:
            try:
                args[key] = F.parse_int(v.text.strip(), 32)
            except ValueError as e:
                raise loc.error(f"bad max_len: {e}", v.column, v.text) from None
    if set(args) != {"port", "max_len"}:
        raise loc.error("output(...) needs port=P and max_len=N", tok.column, text)
    if args["port"] in _NO_TRUNC:
        raise loc.error(f"output to unsupported truncate port: {RESERVED_PORT_NAMES[args['port']]}", tok.column, text)
    try:
        return OutputTrunc(args["port"], args["max_len"])
    except RuleError as e:
        raise loc.error(str(e), tok.column, text) from None


def format_output_trunc(a: object) -> str | None:
    """``output(port=P,max_len=N)`` as ovs-ofctl 3.1 prints it, else None."""
    if not isinstance(a, OutputTrunc):
        return None
    return f"output(port={RESERVED_PORT_NAMES.get(a.port, a.port)},max_len={a.max_len})"
