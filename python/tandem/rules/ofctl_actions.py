"""ovs-ofctl action/instruction text <-> IR, and add-group syntax <-> ``Group``.

Input: the text after ``actions=`` (or inside ``write_actions(...)`` or a group
bucket) plus the rule's match, which resolves context-dependent legacy names
(``mod_tp_dst`` is ``tcp_dst`` or ``udp_dst`` depending on ``ip_proto``).
Output: IR instructions/actions. Pure; errors are ``OfctlSyntaxError`` with the
column and token. POF actions use the Tandem extension syntax
``add_field:VALUE->pof[OFF:LEN]``, ``del_field:pof[OFF:LEN]`` and
``set_field:VALUE->pof[OFF:LEN]`` (see docs/rule-syntax.md).
"""

from __future__ import annotations

from typing import Sequence

from . import fields as F
from .ir import (
    FIELDS, GROUP_TYPES, OFPCML_NO_BUFFER, OFPG_ANY, OFPP_ANY, OFPP_CONTROLLER, RESERVED_PORT_NAMES, Action, ApplyActions,
    Bucket, ClearActions, DecTtl, GotoTable, Group, GroupAction, Instruction, IP_PROTO_TCP, IP_PROTO_UDP, Match,
    MeterInstruction, Output, PofAddField, PofDelField, PofField, PopVlan, PushVlan, RuleError, SetField, WriteActions, WriteMetadata,
    ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC, DecMplsTtl, IP_PROTO_SCTP, PopMpls, PushMpls, SetMplsTtl, SetNwTtl, SetQueue,
    REG_VIEWS, split_register,
)
from .prereq import FlowState
from .ofctl_lex import Loc, Token, colon_arg as _colon_arg, split_top, suggest
from .ofctl_match import ALIASES, PRINT, format_value, parse_pof_field, parse_value
from .ofctl_nx import NX_ACTION_NAMES, format_load, format_nx_action, parse_nx_action, parse_output_reg
from .ir import Controller
from .nx_controller import format_controller, parse_controller
from .ofctl_ct import CT_ACTION_NAMES, ct_action_name, format_ct_action, parse_ct_action
from .ofctl_learn import LEARN_ACTION_NAMES, format_learn_action, is_learn, parse_learn_action
from .ofctl_clone import CLONE_ACTION_NAMES, format_clone_action, is_clone, parse_clone_action
from .ofctl_hash import HASH_ACTION_NAMES, format_hash_action, hash_action_name, parse_hash_action
from .nx_fin_timeout import format_fin_timeout, is_fin_timeout, parse_fin_timeout
from .ofctl_trunc import format_output_trunc, parse_output_trunc
from .encap import form_problem, has_encap
from . import encap_set as ENCSET
from . import decap as DEC
from . import decap_set as DECSET
from . import nsh_check_larger as NCL
from .tun_metadata import format_delete_field, is_delete_field, parse_delete_field
from .tun_metadata import any_text_problem, format_any

_PORT_BY_NAME = {name: num for num, name in RESERVED_PORT_NAMES.items() if name not in ("ANY",)}
OFPP_MAX = 0xFFFFFF00

_ACTION_NAMES = [
    "output", "drop", "push_vlan", "pop_vlan", "set_field", "dec_ttl", "group", "goto_table", "write_metadata",
    "clear_actions", "write_actions", "controller", "mod_dl_src", "mod_dl_dst", "mod_nw_src", "mod_nw_dst",
    "mod_tp_src", "mod_tp_dst", "mod_vlan_vid", "mod_vlan_pcp", "mod_nw_tos", "mod_nw_ecn", "strip_vlan",
    "add_field", "del_field", "meter", "push_mpls", "pop_mpls", "set_mpls_ttl", "dec_mpls_ttl", "mod_nw_ttl",
    "set_nw_ttl", "set_queue", *NX_ACTION_NAMES, *CT_ACTION_NAMES, *LEARN_ACTION_NAMES, *CLONE_ACTION_NAMES, *HASH_ACTION_NAMES, *[n.lower() for n in _PORT_BY_NAME],
]
_ACTION_NAMES.append("fin_timeout")
_ACTION_NAMES.append("delete_field")  # (tun_metadata)


# ---------------------------------------------------------------- parsing

def parse_instructions(text: str, column: int, loc: Loc, match: Match, check: bool = True) -> tuple[Instruction, ...]:
    """The whole ``actions=`` value -> instructions (empty or ``drop`` -> ()).
    Actions are checked against what the match guarantees, as OVS does (prereq.py)."""
    state = FlowState.of(match)
    toks = split_top(text, column, loc)
    if len(toks) == 1 and toks[0].text.lower() == "drop":
        return ()
    apply: list[Action] = []
    instrs: list[Instruction] = []
    for tok in toks:
        name = tok.text.split(":", 1)[0].split("(", 1)[0].strip().lower()
        ins = _parse_instruction(tok, name, loc, match, state, check)
        if isinstance(ins, MeterInstruction):
            if any(isinstance(i, MeterInstruction) for i in instrs):
                raise loc.error("instruction meter given twice", tok.column, tok.text)
            if apply or instrs:
                raise loc.error("meter:N must come first in actions= (OpenFlow runs the meter before any action)",
                                tok.column, tok.text)
            instrs.append(ins)
            continue
        if ins is None:
            if any(not isinstance(i, MeterInstruction) for i in instrs):
                raise loc.error(f"action {tok.text!r} after instruction {_ins_name(instrs[-1])}: "
                                "apply actions must come first (OpenFlow 1.1+ order)", tok.column, tok.text)
            if name == "drop":
                raise loc.error("'drop' must be the only action", tok.column, tok.text)
            apply += _checked(tok, loc, match, state, nested=False, check=check)
            continue
        if any(type(i) is type(ins) for i in instrs):
            raise loc.error(f"instruction {name} given twice", tok.column, tok.text)
        if instrs and _ORDER[type(ins)] < _ORDER[type(instrs[-1])]:
            raise loc.error(f"instruction {name} must come before {_ins_name(instrs[-1])} "
                            "(order: actions, clear_actions, write_actions, write_metadata, goto_table)",
                            tok.column, tok.text)
        instrs.append(ins)
    meter = tuple(i for i in instrs if isinstance(i, MeterInstruction))
    rest = tuple(i for i in instrs if not isinstance(i, MeterInstruction))
    why = form_problem(apply) if check and has_encap(apply) else None  # (encap.py)
    why = ENCSET.problem(apply, instrs) if check and (why or ENCSET.written_encap(_written(instrs))) else why
    if why:
        raise loc.error(why, column, text)
    why = DEC.form_problem(apply) or DEC.match_problem(match, apply) if check and DEC.has_decap(apply) else None
    why = DECSET.problem(apply, instrs, format_action) or DEC.match_problem(match, apply) if check and (
        DECSET.written_decap(_written(instrs)) or why and DECSET.open_at_end(apply)) else why  # (decap_set.py)
    if why:  # (decap.py)
        raise loc.error(why, column, text)
    why = NCL.match_problem(match, apply) if check else None  # (nsh_check_larger.py)
    if why:
        raise loc.error(why, column, text)
    return meter + ((ApplyActions(tuple(apply)),) if apply else ()) + rest


def _written(instrs) -> tuple:
    """The actions of the write_actions among ``instrs`` (none: ())."""
    return next((i.actions for i in instrs if isinstance(i, WriteActions)), ())


_ORDER = {MeterInstruction: -1, ClearActions: 1, WriteActions: 2, WriteMetadata: 3, GotoTable: 4}


def _ins_name(ins: Instruction) -> str:
    return {MeterInstruction: "meter", ClearActions: "clear_actions", WriteActions: "write_actions", WriteMetadata: "write_metadata",
            GotoTable: "goto_table"}[type(ins)]


def _parse_instruction(tok: Token, name: str, loc: Loc, match: Match, state: FlowState,
                       check: bool) -> Instruction | None:
    if name == "clear_actions":
        if tok.text.lower() != "clear_actions":
            raise loc.error("clear_actions takes no argument", tok.column, tok.text)
        return ClearActions()
    if name == "write_actions":
        inner = _paren_arg(tok, loc)
        return WriteActions(tuple(a for t in split_top(inner.text, inner.column, loc)
                                  for a in _checked(t, loc, match, state, nested=True, check=check)))
    if name == "goto_table":
        arg = _colon_arg(tok, loc)
        return GotoTable(_int(arg, loc, "goto_table", 8))
    if name == "meter":
        arg = _colon_arg(tok, loc)
        mid = _int(arg, loc, "meter", 32)
        try:
            return MeterInstruction(mid)
        except RuleError as e:
            raise loc.error(str(e), arg.column, arg.text) from None
    if name == "write_metadata":
        arg = _colon_arg(tok, loc)
        v, m = arg.split("/")
        value = _int(v, loc, "write_metadata value", 64)
        mask = _int(m, loc, "write_metadata mask", 64) if m is not None else 0xFFFF_FFFF_FFFF_FFFF
        if value & ~mask:
            raise loc.error(f"write_metadata value {value:#x} has bits outside mask {mask:#x}", arg.column, arg.text)
        return WriteMetadata(value, mask)
    return None


def parse_actions(text: str, column: int = 1, loc: Loc = Loc(), match: Match = Match(),
                  check: bool = False) -> tuple[Action, ...]:
    """A comma-separated action list (no instructions) -> actions. With
    ``check``, actions OVS would refuse after ``match`` are errors."""
    toks = split_top(text, column, loc)
    if len(toks) == 1 and toks[0].text.lower() == "drop":
        return ()
    state = FlowState.of(match)
    return tuple(a for t in toks for a in _checked(t, loc, match, state, nested=False, check=check))


def _checked(tok: Token, loc: Loc, match: Match, state: FlowState, nested: bool, check: bool = True) -> list[Action]:
    """Parse one action token, expand OVS's implicit tag push, check prerequisites."""
    lname = tok.text.split(":", 1)[0].split("(", 1)[0].strip().lower()
    if lname in NX_ACTION_NAMES:
        acts: list[Action] = parse_nx_action(tok, lname, loc)
    elif ct_action_name(tok.text) is not None:
        acts = [parse_ct_action(tok, loc)]
    elif is_learn(tok.text):
        acts = [parse_learn_action(tok, loc)]
    elif is_clone(tok.text):
        acts = [parse_clone_action(tok, loc, state, lambda t, st: _checked(t, loc, match, st, nested, check))]
    elif hash_action_name(tok.text) is not None:
        acts = [parse_hash_action(tok, loc)]
    elif is_fin_timeout(tok.text):
        acts = [parse_fin_timeout(tok, loc)]
    elif is_delete_field(tok.text):
        acts = [parse_delete_field(tok, loc)]
    elif lname == "set_field" and _view_target(tok):
        acts = _parse_view_set(tok, loc)
    else:
        action = parse_action(tok, loc, match)
        # OVS's mod_vlan_vid/mod_vlan_pcp push a tag when none is known to be there.
        acts = [PushVlan(), action] if lname in ("mod_vlan_vid", "mod_vlan_pcp") and not state.vlans else [action]
    for a in acts:
        why = state.problem(a, nested) if check else None
        if why:
            raise loc.error(why, tok.column, tok.text)
        state.apply(a)
    return acts


def _view_target(tok: Token) -> bool:
    target = tok.text.rsplit("->", 1)[-1].strip()
    return target.startswith(("xreg", "xxreg")) and target in REG_VIEWS


def _parse_view_set(tok: Token, loc: Loc) -> list[Action]:
    """``set_field:V[/M]->xregN`` (or xxregN): one set_field per register."""
    arg = _colon_arg(tok, loc)
    vtok, ftok = arg.split("->")
    bits = 32 * REG_VIEWS[ftok.text][1]
    v, m = vtok.split("/")
    value = _int(v, loc, f"set_field {ftok.text}", bits)
    mask = _int(m, loc, f"set_field {ftok.text} mask", bits) if m is not None else None
    return [SetField(f, fv, fm) for f, fv, fm in split_register(ftok.text, value & (-1 if mask is None else mask), mask)]


def parse_action(tok: Token, loc: Loc, match: Match) -> Action:
    text = tok.text
    if text.isdigit():
        return Output(_port(tok, loc))
    name = text.split(":", 1)[0].split("(", 1)[0].strip()
    lname = name.lower()
    if name.upper() in _PORT_BY_NAME and ":" not in text and "(" not in text:
        return Output(_PORT_BY_NAME[name.upper()])
    if lname == "controller":
        return _parse_controller(tok, loc)
    if lname == "output" and "(" in text.split(":", 1)[0]:
        return _parse_output_paren(tok, loc)
    if lname == "output":
        arg = _colon_arg(tok, loc)
        if "[" in arg.text:  # a port number held in a field (Open vSwitch's output_reg)
            return parse_output_reg(arg, loc)
        if arg.text.upper() == "CONTROLLER":
            return Output(OFPP_CONTROLLER, OFPCML_NO_BUFFER)
        return Output(_port(arg, loc))
    if lname == "drop":
        raise loc.error("'drop' must be the only action", tok.column, text)
    if lname == "dec_ttl" and "(" in text:
        return _parse_dec_ttl_ids(tok, loc)
    if lname in ("pop_vlan", "strip_vlan", "dec_ttl"):
        if text.lower() != lname:
            raise loc.error(f"{lname} takes no argument", tok.column, text)
        return DecTtl() if lname == "dec_ttl" else PopVlan()
    if lname == "push_vlan":
        arg = _colon_arg(tok, loc)
        tpid = _int(arg, loc, "push_vlan ethertype", 16)
        if tpid not in (0x8100, 0x88A8):
            raise loc.error(f"push_vlan ethertype {tpid:#x} must be 0x8100 or 0x88a8", arg.column, arg.text)
        return PushVlan(tpid)
    if lname == "group":
        return GroupAction(_int(_colon_arg(tok, loc), loc, "group id", 32))
    if lname == "dec_mpls_ttl":
        if text.lower() != lname:
            raise loc.error("dec_mpls_ttl takes no argument", tok.column, text)
        return DecMplsTtl()
    if lname in ("push_mpls", "pop_mpls"):
        arg = _colon_arg(tok, loc)
        etype = _int(arg, loc, f"{lname} ethertype", 16)
        if lname == "push_mpls":
            if etype not in (ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC):
                raise loc.error(f"push_mpls ethertype {etype:#x} must be 0x8847 or 0x8848", arg.column, arg.text)
            return PushMpls(etype)
        return PopMpls(etype)
    if lname in ("set_mpls_ttl", "mod_nw_ttl", "set_nw_ttl", "set_queue"):
        arg = _paren_arg(tok, loc) if "(" in text and ":" not in text else _colon_arg(tok, loc)
        if lname == "set_queue":
            return SetQueue(_int(arg, loc, "set_queue queue id", 32))
        ttl = _int(arg, loc, f"{lname} TTL", 8)
        return SetMplsTtl(ttl) if lname == "set_mpls_ttl" else SetNwTtl(ttl)
    if lname in ("set_field", "load_field", "add_field"):
        return _parse_set_field(tok, loc, lname)
    if lname == "del_field":
        f = parse_pof_field(_colon_arg(tok, loc), loc)
        return PofDelField(f.offset, f.length)
    if lname in _LEGACY:
        return _parse_legacy(tok, lname, loc, match)
    if lname in ("clear_actions", "write_actions", "goto_table", "write_metadata"):
        raise loc.error(f"{lname} is an instruction and is not allowed here", tok.column, text)
    raise loc.error(f"unknown action {name!r}{suggest(lname, _ACTION_NAMES)}", tok.column, text)


def _parse_output_paren(tok: Token, loc: Loc) -> Action:
    """``output(port=FIELD[a..b],max_len=N)``, as ovs-ofctl prints an output_reg with a max_len."""
    inner = tok.text.strip()[len("output("):]
    if not inner.endswith(")"):
        raise loc.error("expected output(port=FIELD[a..b],max_len=N)", tok.column, tok.text)
    parts = dict(p.split("=", 1) for p in inner[:-1].split(",") if "=" in p)
    if "[" not in parts.get("port", "["):  # a port, not a field: Open vSwitch's output_trunc
        return parse_output_trunc(tok, loc, _port)
    if set(parts) != {"port", "max_len"} or "[" not in parts["port"]:
        raise loc.error("expected output(port=FIELD[a..b],max_len=N)", tok.column, tok.text)
    col = tok.column + tok.text.find("port=") + 5
    return parse_output_reg(Token(parts["port"], col), loc, _int(Token(parts["max_len"], col), loc, "max_len", 16))


def _parse_set_field(tok: Token, loc: Loc, lname: str) -> Action:
    arg = _colon_arg(tok, loc)
    vtok, ftok = arg.split("->")
    if ftok is None:
        raise loc.error(f"{lname} needs VALUE->FIELD", arg.column, tok.text)
    if ftok.text.startswith("pof["):
        key = parse_pof_field(ftok, loc)
        value, mask = parse_value(vtok, key, loc, allow_mask=False)
        if lname == "add_field":
            return PofAddField(key.offset, key.length, value)
        return SetField(key, value)
    if lname == "add_field":
        raise loc.error("add_field needs a POF field target: add_field:VALUE->pof[OFF:LEN]", ftok.column, ftok.text)
    fname = ftok.text.lower()
    if fname == "nw_tos":  # the whole TOS byte, as OVS prints it
        tos = _int(vtok, loc, "nw_tos", 8)
        if tos & 3:
            raise loc.error(f"set_field nw_tos {tos}: the two ECN bits must be zero", vtok.column, vtok.text)
        return SetField("ip_dscp", tos >> 2)
    field = _SET_ALIASES.get(fname)
    if field is None:
        raise loc.error(f"unknown field {ftok.text!r}{suggest(fname, sorted(_SET_ALIASES))}", ftok.column, ftok.text)
    if not FIELDS[field].settable:
        raise loc.error(f"field {ftok.text} cannot be set", ftok.column, ftok.text)
    if (why := any_text_problem(vtok.text, ftok.text)) is not None:  # (tun_metadata: set_field:ANY)
        raise loc.error(why, vtok.column, vtok.text)
    value, mask = parse_value(vtok, field, loc, allow_mask=FIELDS[field].maskable, shown=ftok.text)
    try:
        return SetField(field, value, mask)
    except RuleError as e:
        raise loc.error(str(e), vtok.column, vtok.text) from None


_SET_ALIASES = dict(ALIASES, nw_src="ipv4_src", nw_dst="ipv4_dst", icmp_type="icmpv4_type", icmp_code="icmpv4_code")

# legacy name -> (IR field or None for tp/context, value kind converter)
_LEGACY = {
    "mod_dl_src": "eth_src", "mod_dl_dst": "eth_dst", "mod_nw_src": "ipv4_src", "mod_nw_dst": "ipv4_dst",
    "mod_tp_src": "tp_src", "mod_tp_dst": "tp_dst", "mod_vlan_vid": "vlan_vid", "mod_vlan_pcp": "vlan_pcp",
    "mod_nw_tos": "ip_dscp", "mod_nw_ecn": "ip_ecn",
}


def _parse_legacy(tok: Token, lname: str, loc: Loc, match: Match) -> Action:
    arg = _colon_arg(tok, loc)
    field = _LEGACY[lname]
    if field in ("tp_src", "tp_dst"):
        proto = match.get("ip_proto")
        which = {IP_PROTO_TCP: "tcp", IP_PROTO_UDP: "udp", IP_PROTO_SCTP: "sctp"}.get(proto.value if proto else -1)
        if which is None:
            raise loc.error(f"{lname} needs a tcp or udp match (e.g. tcp,...,actions={tok.text})", tok.column, tok.text)
        field = f"{which}_{field[3:]}"
    if lname == "mod_vlan_vid":
        vid = _int(arg, loc, "mod_vlan_vid", 12)
        return SetField("vlan_vid", 0x1000 | vid)
    if lname == "mod_nw_tos":
        tos = _int(arg, loc, "mod_nw_tos", 8)
        if tos & 3:
            raise loc.error(f"mod_nw_tos:{tos}: the two ECN bits must be zero (use a multiple of 4)", arg.column, arg.text)
        return SetField("ip_dscp", tos >> 2)
    value, _ = parse_value(arg, field, loc, allow_mask=False, shown=lname)
    return SetField(field, value)


def _parse_dec_ttl_ids(tok: Token, loc: Loc) -> DecTtl:
    """``dec_ttl(id,id,...)``: packet-ins to those controller ids; ``dec_ttl()`` is plain dec_ttl (as ovs-ofctl reads it)."""
    inner = _paren_arg(tok, loc)
    if not inner.text.strip():
        return DecTtl()
    ids = [_int(t, loc, "dec_ttl controller id", 16) for t in split_top(inner.text, inner.column, loc, seps=", ")]
    return DecTtl(tuple(ids))


def _parse_controller(tok: Token, loc: Loc) -> Output | Controller:
    text = tok.text
    if text.lower() == "controller":
        return Output(OFPP_CONTROLLER, OFPCML_NO_BUFFER)
    if "(" in text:
        return parse_controller(tok, loc)
    return Output(OFPP_CONTROLLER, _int(_colon_arg(tok, loc), loc, "controller max_len", 16))


def _paren_arg(tok: Token, loc: Loc) -> Token:
    i = tok.text.find("(")
    if i < 0 or not tok.text.endswith(")"):
        raise loc.error(f"{tok.text} needs (...)", tok.column, tok.text)
    return Token(tok.text[i + 1:-1], tok.column + i + 1)


def _int(tok: Token, loc: Loc, what: str, bits: int) -> int:
    try:
        return F.parse_int(tok.text, bits)
    except ValueError as e:
        raise loc.error(f"bad {what}: {e}", tok.column, tok.text) from None


def _port(tok: Token, loc: Loc) -> int:
    if tok.text.upper() in _PORT_BY_NAME:
        return _PORT_BY_NAME[tok.text.upper()]
    port = _int(tok, loc, "port", 32)
    if port >= OFPP_MAX:
        raise loc.error(f"port {port:#x} is reserved; write its name (IN_PORT, FLOOD, ALL, CONTROLLER, LOCAL ...)",
                        tok.column, tok.text)
    return port


# ---------------------------------------------------------------- printing

def format_action(a: Action) -> str:
    if isinstance(a, Output):
        if a.port == OFPP_CONTROLLER:
            return f"CONTROLLER:{a.max_len}"
        if a.port in RESERVED_PORT_NAMES:
            return RESERVED_PORT_NAMES[a.port]
        return f"output:{a.port}"
    if isinstance(a, PushVlan):
        return f"push_vlan:{a.ethertype:#06x}"
    if isinstance(a, PopVlan):
        return "pop_vlan"
    if isinstance(a, DecTtl):
        return "dec_ttl" if a.ids is None else f"dec_ttl({','.join(map(str, a.ids))})"
    if isinstance(a, GroupAction):
        return f"group:{a.group_id}"
    if isinstance(a, SetField):
        target = a.field.name if isinstance(a.field, PofField) else PRINT[a.field][0]
        if (text := format_any(a)) is not None:  # (tun_metadata: a write of no bit, as Open vSwitch prints it)
            return text
        if a.mask is not None:  # a run of bits as load (ovs-ofctl misreads some IPv6 masks in set_field text)
            load = format_load(a)
            if load is not None:
                return load
        return f"set_field:{format_value(a.field, a.value, a.mask)}->{target}"
    if isinstance(a, PofAddField):
        return f"add_field:{a.value:#x}->pof[{a.offset}:{a.length}]"
    if isinstance(a, PofDelField):
        return f"del_field:pof[{a.offset}:{a.length}]"
    if isinstance(a, PushMpls):
        return f"push_mpls:{a.ethertype:#06x}"
    if isinstance(a, PopMpls):
        return f"pop_mpls:{a.ethertype:#06x}"
    if isinstance(a, SetMplsTtl):
        return f"set_mpls_ttl:{a.ttl}"
    if isinstance(a, DecMplsTtl):
        return "dec_mpls_ttl"
    if isinstance(a, SetNwTtl):
        return f"mod_nw_ttl:{a.ttl}"
    if isinstance(a, SetQueue):
        return f"set_queue:{a.queue_id}"
    nx = format_nx_action(a)
    if nx is not None:
        return nx
    if isinstance(a, Controller):
        return format_controller(a)
    ct = format_ct_action(a)
    if ct is not None:
        return ct
    learned = format_learn_action(a)
    if learned is not None:
        return learned
    cloned = format_clone_action(a, format_actions)
    if cloned is not None:
        return cloned
    hashed = format_hash_action(a)
    if hashed is not None:
        return hashed
    cut = format_output_trunc(a)
    if cut is not None:
        return cut
    fin = format_fin_timeout(a)
    if fin is not None:
        return fin
    deleted = format_delete_field(a)
    if deleted is not None:
        return deleted
    raise RuleError(f"cannot print action {a!r}")


def format_actions(actions: Sequence[Action]) -> str:
    """Comma-separated actions; ``drop`` when there are none."""
    return ",".join(format_action(a) for a in actions) if actions else "drop"


def format_instructions(instructions: Sequence[Instruction]) -> str:
    parts: list[str] = []
    for ins in instructions:
        if isinstance(ins, MeterInstruction):
            parts.append(f"meter:{ins.meter_id}")
        elif isinstance(ins, ApplyActions):
            parts += [format_action(a) for a in ins.actions]
        elif isinstance(ins, ClearActions):
            parts.append("clear_actions")
        elif isinstance(ins, WriteActions):
            parts.append(f"write_actions({','.join(format_action(a) for a in ins.actions)})")
        elif isinstance(ins, WriteMetadata):
            full = ins.mask == 0xFFFF_FFFF_FFFF_FFFF
            parts.append(f"write_metadata:{ins.value:#x}" + ("" if full else f"/{ins.mask:#x}"))
        elif isinstance(ins, GotoTable):
            parts.append(f"goto_table:{ins.table}")
        else:
            raise RuleError(f"cannot print instruction {ins!r}")
    return ",".join(parts) if parts else "drop"


# ---------------------------------------------------------------- groups

_GROUP_TYPE_ALIASES = {"all": "all", "select": "select", "indirect": "indirect", "fast_failover": "fast_failover",
                       "ff": "fast_failover"}


def parse_group_text(text: str, loc: Loc) -> Group:
    """``group_id=N,type=T,bucket=...,bucket=...`` (ovs-ofctl add-group syntax).
    A bucket is ``[weight:W,][watch_port:P,][watch_group:G,][bucket_id:I,][actions=]A,A...``."""
    stripped = text.strip()
    col0 = len(text) - len(text.lstrip()) + 1
    segments = _split_buckets(stripped, col0)
    head = segments[0]
    group_id, gtype = None, "all"
    for tok in split_top(head.text, head.column, loc, seps=", \t"):
        k, v = tok.split("=")
        if v is None:
            raise loc.error(f"{tok.text!r}: expected key=value", tok.column, tok.text)
        if k.text == "group_id":
            group_id = _int(v, loc, "group_id", 32)
        elif k.text == "type":
            if v.text not in _GROUP_TYPE_ALIASES:
                raise loc.error(f"group type {v.text!r} is not one of {', '.join(GROUP_TYPES)}", v.column, v.text)
            gtype = _GROUP_TYPE_ALIASES[v.text]
        else:
            raise loc.error(f"unknown group key {k.text!r}{suggest(k.text, ['group_id', 'type', 'bucket'])}",
                            k.column, k.text)
    if group_id is None:
        raise loc.error("group needs group_id=N", col0, stripped)
    buckets = tuple(_parse_bucket(seg, loc, gtype) for seg in segments[1:])
    try:
        return Group(group_id, gtype, buckets)
    except RuleError as e:
        raise loc.error(str(e), col0, stripped) from None


def _split_buckets(text: str, column: int) -> list[Token]:
    """Head then one token per ``bucket=`` (at top level, after a comma)."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and text.startswith("bucket=", i) and (i == 0 or text[i - 1] in ", \t"):
            pieces.append(Token(text[start:i].rstrip(", \t"), column + start))
            start = i + len("bucket=")
            i = start
            continue
        i += 1
    pieces.append(Token(text[start:], column + start))
    return pieces


def _parse_bucket(seg: Token, loc: Loc, gtype: str) -> Bucket:
    weight = 1 if gtype == "select" else 0
    watch, watch_group = OFPP_ANY, OFPG_ANY
    toks = split_top(seg.text, seg.column, loc)
    rest: list[Token] = []
    for n, tok in enumerate(toks):
        k, v = tok.split(":")
        if k.text in ("weight", "watch_port", "watch_group", "bucket_id") and v is not None and not rest:
            if k.text == "weight":
                weight = _int(v, loc, "bucket weight", 16)
            elif k.text == "watch_port":
                watch = _port(v, loc)
            elif k.text == "watch_group":
                watch_group = OFPG_ANY if v.text.upper() == "ANY" else _int(v, loc, "watch_group", 32)
            continue
        if tok.text.startswith("actions="):
            rest.append(Token(tok.text[len("actions="):], tok.column + len("actions=")))
            rest += toks[n + 1:]
            break
        rest.append(tok)
    state = FlowState()
    actions = () if len(rest) == 1 and rest[0].text == "drop" else \
        tuple(a for t in rest for a in _checked(t, loc, Match(), state, nested=True, check=False))
    return Bucket(actions, weight, watch, watch_group)


def format_group(g: Group) -> str:
    parts = [f"group_id={g.group_id}", f"type={g.type}"]
    for b in g.buckets:
        opts = []
        if g.type == "select":
            opts.append(f"weight:{b.weight}")
        if b.watch_port != OFPP_ANY:
            opts.append(f"watch_port:{format_value('in_port', b.watch_port)}")
        if b.watch_group != OFPG_ANY:
            opts.append(f"watch_group:{b.watch_group}")
        opts.append(f"actions={format_actions(b.actions)}")
        parts.append("bucket=" + ",".join(opts))
    return ",".join(parts)
