"""Random Open vSwitch extension fields and actions for ``generate`` (opt-in
features ``NX_FEATURES``): registers and the packet mark matched and set
across tables (pipeline state, 0 on arrival), TCP flags, IP fragment bits,
IP and MPLS TTLs, masked loads, moves, stack push/pop, note and exit; and
(opt-in ``RESUBMIT_FEATURE`` and ``OUTPUT_REG_FEATURE``, not in ``NX_FEATURES``)
resubmits and outputs to a port a register holds.

Values come from small pools so rules written in one table meet rules that
match them in a later one. Every draw honours the prerequisites OVS checks
(``prereq.FlowState``). Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import (
    FIELDS, MOVE_TARGETS, OFPP_IN_PORT, OFPP_TABLE, OPERANDS, Output, Action, Exit, FieldMatch, Match, MoveField, Note, OutputReg, Resubmit,
    SetField, StackPop, StackPush, Subfield,
)
from .ir import NSH_FIELDS, TUNNEL_FIELDS, UNREADABLE_FIELDS
from .ir import CT_FIELDS, OFPP_NONE_16, CheckPktLarger, DecTtl, PopQueue, Sample, SetQueue
from .prereq import FlowState

NX_MATCH_FEATURES = frozenset({"nx_regs", "nx_pkt_mark", "nx_tcp_flags", "nx_ip_frag", "nx_ttl"})
NX_ACTION_FEATURES = frozenset({"nx_load", "nx_move", "nx_stack", "nx_note"})
NX_FEATURES = NX_MATCH_FEATURES | NX_ACTION_FEATURES
RESUBMIT_FEATURE = "nx_resubmit"
OUTPUT_REG_FEATURE = "nx_output_reg"
# OpenFlow 1.0 numbers of IN_PORT, FLOOD, ALL, CONTROLLER, LOCAL, and no port at all
_REG_PORTS = (0xFFF8, 0xFFFB, 0xFFFC, 0xFFFD, 0xFFFE, 77, 0x10005)
from .ir import TUN_METADATA_FIELDS
REGS = ("reg0", "reg1", "reg2", "reg3", "reg15")  # a few, so writes meet matches
VIEWS = ("xreg0", "xreg1", "xxreg0")
REG_VALUES = (0, 1, 2, 3, 0xFF, 0x8000_0000)
MARK_VALUES = (0, 0, 0, 1, 2, 3, 0x10000)  # mostly 0: what a packet that never set it has
TCP_FLAGS = (0x002, 0x012, 0x010, 0x011, 0x004, 0x018, 0x0C2)
TTLS = (0, 1, 2, 64, 255)
# (value, mask) of ip_frag as Open vSwitch names them: no, yes, first, later, not_later
FRAG_MATCHES = ((0, 1), (1, 1), (1, None), (3, None), (0, 2))
# set_field targets and the feature that allows them
NX_SET = {"pkt_mark": "nx_pkt_mark", "nw_ttl": "nx_ttl", "mpls_ttl": "nx_ttl", **{r: "nx_regs" for r in REGS}}
# move / push sources besides the settable fields (read-only ones)
_READ_ONLY = ("in_port", "eth_type", "ip_proto", "tcp_flags", "ip_frag", "vlan_vid", "mpls_bos")


def nx_value(rng: random.Random, field: str) -> int | None:
    """A pool value for an extension field (None if ``field`` is not one)."""
    if field.startswith("reg"):
        return rng.choice(REG_VALUES)
    if field == "pkt_mark":
        return rng.choice(MARK_VALUES)
    if field == "tcp_flags":
        return rng.choice(TCP_FLAGS)
    if field in ("nw_ttl", "mpls_ttl"):
        return rng.choice(TTLS)
    return None


def nx_mask(rng: random.Random, field: str) -> int:
    """A mask for an extension field that is neither empty nor full."""
    if field == "tcp_flags":
        return rng.choice((0x012, 0x002, 0x017, 0x0FF))
    return rng.choice((0xFF, 0xF, 0xFFFF_0000, 0x8000_0001))


def match_state(rng: random.Random, table: int, features: frozenset[str], put) -> None:
    """Registers and the packet mark (``put(field, value, maskable_p)``): mostly in
    later tables, where an earlier table may have written them."""
    p = 0.4 if table > 0 else 0.08
    if "nx_regs" in features and rng.random() < p:
        for f in rng.sample(REGS, rng.choice((1, 1, 2))):
            put(f, rng.choice(REG_VALUES), 0.3)
    if "nx_pkt_mark" in features and rng.random() < p:
        put("pkt_mark", rng.choice(MARK_VALUES), 0.3)


def match_ip(rng: random.Random, features: frozenset[str], fields: dict, put) -> None:
    """ip_frag and nw_ttl in an IPv4/IPv6 match. A rule that matches ip_frag names
    no transport protocol (the caller stops there): the fragments drawn are GRE or
    ESP, since Open vSwitch's rewrites of transport fields in fragments are partly
    quirks dp-core does not copy (docs/rule-syntax.md)."""
    if "nx_ip_frag" in features and rng.random() < 0.25:
        fields["ip_frag"] = FieldMatch(*rng.choice(FRAG_MATCHES))
    if "nx_ttl" in features and rng.random() < 0.2:
        put("nw_ttl", rng.choice(TTLS), 0.0)


def match_tcp(rng: random.Random, features: frozenset[str], put) -> None:
    if "nx_tcp_flags" in features and rng.random() < 0.4:
        put("tcp_flags", rng.choice(TCP_FLAGS), 0.6)


def match_mpls(rng: random.Random, features: frozenset[str], put) -> None:
    if "nx_ttl" in features and rng.random() < 0.3:
        put("mpls_ttl", rng.choice(TTLS), 0.0)


def _operand(rng: random.Random, flow: FlowState, names: list[str]) -> Subfield | None:
    names = [n for n in names if n in OPERANDS and flow.operand_problem(n) is None]
    names = [n for n in names if n not in NSH_FIELDS]  # (opt-in: generate_nsh.nsh_operand_actions)
    names = [n for n in names if n not in TUN_METADATA_FIELDS]  # (mapped ones only: generate_tun_metadata.py)
    if not names:
        return None
    field = rng.choice(names)
    width = OPERANDS[field]
    n_bits = rng.choice((width, width, min(width, 8), min(width, 16), 1, min(width, 4)))
    return Subfield(field, rng.randrange(width - n_bits + 1), n_bits)


def _targets(flow: FlowState, settable: list[str]) -> list[str]:
    # registers, the mark, and the frame fields a set_field may write here, but for
    # Open vSwitch quirks dp-core does not copy (docs/rule-syntax.md): not VLAN fields
    # (writing the VID of an untagged frame pushes a tag), not the ARP opcode (a move or
    # load may make it 0, and OVS then drops every ARP rewrite of that commit, reading
    # opcode 0 as "no ARP header"), not the ND fields (OVS still writes them after an
    # earlier action changed the ICMPv6 type)
    return [f for f in list(REGS) + list(VIEWS) + ["pkt_mark"] + settable
            if f in MOVE_TARGETS and f not in _NOT_TARGETS and flow.operand_problem(f) is None and f not in TUN_METADATA_FIELDS
            and f not in NSH_FIELDS]


_NOT_TARGETS = frozenset({"vlan_vid", "vlan_pcp", "arp_op", "ipv6_nd_target", "ipv6_nd_sll", "ipv6_nd_tll"})


def nx_actions(rng: random.Random, flow: FlowState, features: frozenset[str], settable: list[str]) -> list[Action]:
    """At most one extension action (a few for a push/pop pair) valid at this point."""
    r = rng.random()
    out: list[Action] = []
    if "nx_load" in features and r < 0.3:
        fields = [f for f in _targets(flow, settable) if f in FIELDS and f != "mpls_bos"]
        if fields:
            f = rng.choice(fields)
            bits = FIELDS[f].bits
            ofs = rng.randrange(bits)
            n = rng.randint(1, min(bits - ofs, 16))
            mask = ((1 << n) - 1) << ofs
            if f == "vlan_vid" or mask == (1 << bits) - 1:
                return out
            out.append(SetField(f, rng.getrandbits(bits) & mask, mask))
    elif "nx_move" in features and r < 0.6:
        dst = _operand(rng, flow, _targets(flow, settable))
        if dst is not None:
            srcs = [f for f in list(REGS) + list(VIEWS) + ["pkt_mark"] + [f for f in FIELDS if f not in CT_FIELDS] + list(_READ_ONLY)
                    if f != "conj_id" and f in OPERANDS and OPERANDS[f] >= dst.n_bits  # (conj_id reads 0: tests/dataplane)
                    and f not in UNREADABLE_FIELDS and (f not in TUNNEL_FIELDS or "nx_tunnel" in features)]
            if "nx_pkt_mark" in features and rng.random() < 0.3:  # the mark into what a later rule or frame shows
                srcs = ["pkt_mark"]
            src = _operand(rng, flow, sorted(set(srcs)))
            if src is not None:
                n = min(src.n_bits, dst.n_bits)
                out.append(MoveField(Subfield(src.field, src.ofs, n), Subfield(dst.field, dst.ofs, n)))
    elif "nx_stack" in features and r < 0.85:
        if rng.random() < 0.55:
            src = _operand(rng, flow, list(REGS) + list(VIEWS) + ["pkt_mark"] + settable + list(_READ_ONLY))
            if src is not None:
                out.append(StackPush(src))
        else:
            dst = _operand(rng, flow, _targets(flow, settable))
            if dst is not None:
                out.append(StackPop(dst))
    elif "nx_note" in features:
        out.append(Note(rng.randbytes(rng.choice((0, 2, 6, 9)))) if rng.random() < 0.8 else Exit())
    return out


def written_nx(rng: random.Random, flow: FlowState, features: frozenset[str], settable: list[str]) -> list[Action]:
    """Extension actions for write_actions (loads and moves: OVS takes no others there)."""
    acts = nx_actions(rng, flow, features & {"nx_load", "nx_move"}, settable)
    return [a for a in acts if isinstance(a, (SetField, MoveField))]


def ip_frag_frame_value(rng: random.Random) -> int:
    """An ``ip_frag`` for a drawn frame: mostly whole packets."""
    return rng.choice((0, 0, 0, 1, 3))



# Open vSwitch's simpler Nicira actions (opt-in: not in NX_FEATURES, so the draws
# of the features above stay as they were): pop_queue, sample (no IPFIX collector:
# does nothing), dec_ttl(ids) (packet-ins only to the ids that are 0) and
# check_pkt_larger (into a register bit, which later tables match).
NX_MORE_FEATURES = frozenset({"nx_pop_queue", "nx_sample", "nx_dec_ttl_ids", "nx_check_pkt_larger"})
# lengths around the drawn frames' (Open vSwitch counts an IP packet without its Ethernet padding)
PKT_LENS = (0, 42, 46, 50, 54, 59, 60, 62, 64, 70, 78, 86, 100, 128, 1500)
DEC_TTL_IDS = ((0,), (1,), (1, 2), (0, 3), (2, 0), (0, 0))


def more_nx_actions(rng: random.Random, flow: FlowState, features: frozenset[str], ports, nested: bool = False) -> list[Action]:
    """At most one of pop_queue, sample, dec_ttl(ids) valid at this point (``nested``:
    for write_actions, where Open vSwitch takes dec_ttl(ids) only)."""
    r = rng.random()
    if "nx_check_pkt_larger" in features and not nested and rng.random() < 0.5:
        return [CheckPktLarger(rng.choice(PKT_LENS), Subfield(rng.choice(REGS), rng.choice((0, 0, 1, 31)), 1))]
    if "nx_dec_ttl_ids" in features and r < 0.35 and (nested or flow.eth_type in (0x0800, 0x86DD)):
        return [DecTtl(rng.choice(DEC_TTL_IDS))]
    if nested:
        return []
    if "nx_pop_queue" in features and r < 0.6:
        return [SetQueue(rng.choice((1, 7))), PopQueue()] if rng.random() < 0.5 else [PopQueue()]
    if "nx_sample" in features:
        port = rng.choice(list(ports)) if rng.random() < 0.3 else OFPP_NONE_16
        return [Sample(rng.choice((1, 100, 65535)), rng.choice((0, 1, 9)), rng.randrange(4), rng.randrange(1 << 32),
                       port, rng.choice((0, 0, 1, 2)))]
    return []
# ---------------------------------------------------------------- conjunctive matches

CONJ_FEATURES = frozenset({"nx_conj"})
CONJ_SHARE = 0.25  # the chance a rule drawn with nx_conj starts a conjunctive block instead
_CONJ_BASE = (("eth_type", 0x0800), ("ip_proto", 6))
_CONJ_FIELDS = ("tcp_src", "tcp_dst", "ipv4_src", "ipv4_dst", "in_port")
_CONJ_ADDRS = (0x0A000001, 0x0A000002, 0x0A000003, 0x0A00000A)
# what a drawn rule's match may pin for its actions to stay valid in a block's TCP/IPv4 flows
_PROTO_FIELDS = ("eth_type", "ip_proto")


def _dim_values(rng: random.Random, field: str, ports, k: int, masks: bool) -> list[tuple[int, int | None]]:
    """``k`` distinct (value, mask) matches of ``field`` for a dimension."""
    if field == "in_port":
        pool = [(p, None) for p in ports]
    elif field.startswith("tcp_"):
        pool = [(p, None) for p in (22, 53, 80, 443, 1234, 4789, 8080)]
    else:
        pool = [(a, None) for a in _CONJ_ADDRS] + ([(0x0A000000, 0xFFFFFF00), (0x0A000000, 0xFFFF0000)] if masks else [])
    return rng.sample(pool, min(k, len(pool)))


def _borrowed(draw_rule, table: int, priority: int):
    """A drawn rule at (table, priority) whose actions stay valid in a TCP/IPv4 flow
    (its match names at most eth_type=IPv4 and ip_proto=TCP among protocol fields)."""
    for _ in range(50):
        r = draw_rule(table, priority)
        eth, proto = r.match.get("eth_type"), r.match.get("ip_proto")
        if (eth is None or eth.value == 0x0800) and (proto is None or proto.value == 6) and not any(
                k in ("vlan_vid", "ip_frag") for k, _ in r.match):
            return r
    return None


def conj_block(rng: random.Random, ports, table: int, level: int, fresh_prio, draw_rule) -> list:
    """A conjunctive match block (Open vSwitch's ``conjunction``, ovs-fields(7)) in
    ``table``: one or two ids whose soft flows all sit at priority ``level``, each with
    2 or 3 dimensions of 1-3 TCP/IPv4 flows; with two ids, dimension 1 is shared (a
    flow may carry both ids' actions, "several ids in one flow") and dimension 2 of
    each id matches the same field with disjoint values, so no packet completes both
    (OVS leaves two conjunctions complete at one priority undefined). Then, at fresh
    priorities (``fresh_prio(below=None)``): for most ids a ``conj_id`` flow with a
    drawn rule's actions (``draw_rule(table, priority)``), sometimes keeping the drawn
    match as an extra condition; sometimes an ordinary flow matching one whole
    combination (above or below the level: priority interplay) and one with the very
    match of a soft flow below the level (Open vSwitch hides it from the conj_id
    search). Returns the rules."""
    from .ir import ApplyActions, Conjunction, Match, Note, Rule

    masks = True
    fields = [f for f in _CONJ_FIELDS if f != "in_port" or ports]
    rng.shuffle(fields)
    ids = rng.sample(range(1, 1 << 16), rng.choice((1, 1, 2)))
    flows: dict = {}  # match -> [Conjunction]
    dims: dict[int, list[tuple[str, list]]] = {}  # id -> [(field, values)] in clause order

    def add(field: str, value, cid: int, k: int, n: int) -> None:
        m = Match.of(**dict(_CONJ_BASE), **{field: value if value[1] is not None else value[0]})
        flows.setdefault(m, []).append(Conjunction(cid, k, n))

    shared = _dim_values(rng, fields[0], ports, rng.choice((1, 2, 3)), masks)
    disc = _dim_values(rng, fields[1], ports, 2 * len(ids) * rng.choice((1, 1, 2)), masks and len(ids) == 1)
    for i, cid in enumerate(ids):
        n = rng.choice((2, 2, 3)) if len(fields) > 2 else 2
        mine = disc[i::len(ids)]
        spec = [(fields[0], [v for v in shared if len(ids) == 1 or rng.random() < 0.7] or shared[:1]), (fields[1], mine)]
        if n == 3:
            spec.append((fields[2], _dim_values(rng, fields[2], ports, rng.choice((1, 2)), masks)))
        order = list(range(1, n + 1))
        rng.shuffle(order)
        dims[cid] = []
        for (field, vals), k in zip(spec, order):
            for v in vals:
                add(field, v, cid, k, n)
            dims[cid].append((field, vals))
    out = []
    for m, conjs in flows.items():
        acts = tuple(conjs) + ((Note(b"cj"),) if rng.random() < 0.1 else ())
        out.append(Rule(m, (ApplyActions(acts),), table, level))
    for cid in ids:
        if rng.random() < 0.9:
            r = _borrowed(draw_rule, table, fresh_prio())
            if r is not None:
                keep = [kv for kv in r.match if rng.random() < 0.25 or kv[0] in _PROTO_FIELDS]
                out.append(Rule(Match(tuple(keep)).with_field("conj_id", cid), r.instructions, table, r.priority,
                                r.cookie, r.idle_timeout, r.hard_timeout))
        if rng.random() < 0.5:  # an ordinary flow matching one whole combination of this id
            r = _borrowed(draw_rule, table, fresh_prio())
            if r is not None:
                pick = {f: rng.choice(vals) for f, vals in dims[cid] if vals}
                m = Match.of(**dict(_CONJ_BASE), **{f: v if v[1] is not None else v[0] for f, v in pick.items()})
                out.append(Rule(m, r.instructions, table, r.priority, r.cookie, r.idle_timeout, r.hard_timeout))
    if rng.random() < 0.15 and level > 1:  # an ordinary flow behind a soft flow's very match
        r = _borrowed(draw_rule, table, fresh_prio(below=level))
        if r is not None:
            m = rng.choice(list(flows))
            out.append(Rule(m, r.instructions, table, r.priority, r.cookie, r.idle_timeout, r.hard_timeout))
    return out


# ---------------------------------------------------------------- NXM_OF_VLAN_TCI

TCI_FEATURES = frozenset({"nx_vlan_tci"})


def tci_pcp(rng: random.Random, pcp: int) -> FieldMatch:
    """A partly masked VLAN priority (Open vSwitch's ``vlan_tci=V/M`` with some PCP bits
    wildcarded; ``ir.TCI_MASKABLE``)."""
    mask = rng.choice((1, 2, 3, 4, 5, 6))
    return FieldMatch(pcp & mask, mask)


def conj_hints(rng: random.Random, rules, per_id: int = 10) -> list:
    """Rules (match only) that each meet one flow of every dimension of a conjunctive
    match in ``rules``: hints for packets that complete it (``random_frame`` builds a
    frame from one hint). Up to ``per_id`` per (table, priority, id)."""
    from .ir import Conjunction, Match, Rule

    dims: dict[tuple, dict[int, list]] = {}  # (table, priority, id, n) -> k -> matches
    for r in rules:
        for ins in r.instructions:
            for a in getattr(ins, "actions", ()):
                if type(a) is Conjunction:
                    dims.setdefault((r.table, r.priority, a.id, a.n), {}).setdefault(a.k, []).append(r.match)
    out = []
    for (table, prio, _, n), by_k in dims.items():
        if len(by_k) != n:
            continue
        for _ in range(per_id):
            merged: dict = {}
            ok = True
            for k in sorted(by_k):
                for key, fm in rng.choice(by_k[k]):
                    if merged.setdefault(key, fm) != fm:
                        ok = False
            if ok:
                out.append(Rule(Match(tuple(merged.items())), (), table, prio))
    return out
def resubmit_action(rng: random.Random, table: int, tables: int, ports, in_port: int | None) -> Resubmit | Output | None:
    """A resubmit from a rule in ``table`` (or None): mostly into a later table with
    the packet's own in_port (or, as often, the one the rule matches: ``in_port``);
    rarely into the same or an earlier table (a packet that meets such a rule again
    loops into Open vSwitch's limits, which drop it whole; an output:TABLE is such a
    lookup in table 0) or with another port."""
    later = table + 1 < tables and rng.random() < 0.9
    if not later and rng.random() < 0.96:
        return None
    if not later and rng.random() < 0.3:
        return Output(OFPP_TABLE)
    target = rng.randrange(table + 1, tables) if later else rng.randrange(tables)
    r = rng.random()
    if r < 0.6:
        port = OFPP_IN_PORT
    elif r < 0.85 and in_port is not None:
        port = in_port
    else:
        port = rng.choice(list(ports))
    if port != OFPP_IN_PORT and target == table and rng.random() < 0.5:
        return Resubmit(port)  # resubmit:PORT, the rule's own table
    return Resubmit(port, target)


def written_resubmit(rng: random.Random, tables: int, ports) -> Resubmit:
    """A resubmit for write_actions: it runs at the end of the pipeline (if nothing
    else written outputs), as if from table 0 (``resubmit:PORT`` goes there)."""
    port = OFPP_IN_PORT if rng.random() < 0.8 else rng.choice(list(ports))
    if port != OFPP_IN_PORT and rng.random() < 0.2:
        return Resubmit(port)
    return Resubmit(port, rng.randrange(1, tables) if tables > 1 and rng.random() < 0.9 else 0)


def output_reg_actions(rng: random.Random, ports, match: Match) -> list[Action]:
    """An output to the port a register holds: mostly after a load of it (a virtual
    port, a reserved one, a number no port has, or one above 0xffff: nothing), or from
    a register the match fixes; sometimes from one whose value the pipeline left
    there (only known at run time)."""
    port = rng.choice(list(ports)) if rng.random() < 0.6 else rng.choice(_REG_PORTS)
    reg = rng.choice(REGS)
    r = rng.random()
    matched = [k for k, fm in match if isinstance(k, str) and k.startswith("reg") and fm.mask is None]
    if r < 0.15 and matched:
        return [OutputReg(Subfield(rng.choice(matched), 0, 16))]
    if r < 0.85:
        ofs = rng.choice((0, 0, 8, 16)) if port <= 0xFFFF else 0
        n_bits = 32 - ofs if port > 0xFFFF or rng.random() < 0.3 else 16
        mask = ((1 << n_bits) - 1) << ofs
        return [SetField(reg, port << ofs, None if mask == 0xFFFF_FFFF else mask), OutputReg(Subfield(reg, ofs, n_bits))]
    return [OutputReg(Subfield(reg, 0, 16))]  # (a max_len other than 0xffff has no ovs-ofctl text)
