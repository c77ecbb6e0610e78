"""Action prerequisites, checked the way OVS checks them when a flow is added.

OVS walks a flow's actions with what the match guarantees about the packet
(eth_type, ip_proto, how many VLAN tags) and rejects, for OpenFlow 1.3:
``set_field`` on a field whose protocol the match does not pin (``nw_src``
without ``ip``; ``vlan_vid``/``vlan_pcp`` without a tag matched or pushed), a
third ``push_vlan``, and in apply-actions ``pop_vlan`` without a tag and
``dec_ttl`` without IP; ``pop_mpls``, ``set_mpls_ttl`` and ``dec_mpls_ttl`` without
MPLS and ``set_nw_ttl`` without IP (OFPBAC_MATCH_INCONSISTENT); and a ``set_field`` on ``vlan_vid`` whose value lacks
the OXM present bit 0x1000 (OVS cannot encode it). Write-actions continue from the state the apply-actions
left; there only the set_field and tag-depth checks apply (as in OVS 3.1).
``push_mpls`` makes the packet MPLS (the IP protocol is then unknown) and
``pop_mpls`` gives it the popped ethertype, as OVS's check walk does.

``FlowState`` is that walk; the ofctl parser uses it to point at the offending
action, ``rule_problems`` checks an IR rule built in code, and the generator
asks it what may be set. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .ir import Bundle, Multipath
from .ir import (
    ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC, FIELDS, OFPVID_PRESENT, Action,
    L4_HEADER_FIELDS, NOT_IN_ACTION_SET, OutputReg, later_fragment, ApplyActions, DecMplsTtl, DecTtl, Match, MoveField, PofField, PopMpls, PopVlan, PushMpls, PushVlan,
    Rule, SetField, SetMplsTtl, SetNwTtl, StackPop, StackPush, WriteActions, Ct, CT_INV, ct_valid,
    Learn, LEARN_MATCH, LEARN_OUTPUT,
)
from .ir import Clone
from .ir import DecNshTtl
from .ir import FinTimeout  # (fin_timeout)
from .ir import EncapEthernet, EncapNsh
from .ir import Decap
from .ir import CT_ALGS  # (ct alg)

MAX_VLAN_TAGS = 2
_IP = (ETH_TYPE_IPV4, ETH_TYPE_IPV6)
_MPLS_TYPES = (ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC)
_HINT = {ETH_TYPE_IPV4: "ip", ETH_TYPE_IPV6: "ipv6", ETH_TYPE_ARP: "arp", ETH_TYPE_MPLS: "mpls", 6: "tcp", 17: "udp",
         1: "icmp"}


@dataclass
class FlowState:
    """What is known about the packet at one point of the action list."""

    eth_type: int | None = None
    ip_proto: int | None = None
    vlans: int = 0
    # Other exact matches a set_field prerequisite may name (icmpv6_type, icmpv6_code).
    exact: tuple[tuple[str, int], ...] = ()
    # The match accepts only non-first fragments (no transport header to read or write).
    later: bool = False
    # The match pins a tracked, valid connection (ct_state +trk-inv): the ct tuple fields exist.
    ct_ok: bool = False
    # The match requires an invalid connection (ct_state +inv): OVS refuses ct(commit) then.
    ct_inv: bool = False

    @classmethod
    def of(cls, match: Match) -> "FlowState":
        eth, proto, vid = match.get("eth_type"), match.get("ip_proto"), match.get("vlan_vid")
        tagged = vid is not None and bool(vid.value & OFPVID_PRESENT)
        exact = tuple((k, fm.value) for k, fm in match.fields if k in ("icmpv6_type", "icmpv6_code") and fm.mask is None)
        return cls(eth.value if eth is not None and eth.mask is None else None,
                   proto.value if proto is not None and proto.mask is None else None, 1 if tagged else 0, exact,
                   later_fragment(match), ct_valid(match), _ct_inv(match))

    def _value(self, key: str) -> int | None:
        if key == "eth_type":
            return self.eth_type
        if key == "ip_proto":
            return self.ip_proto
        return dict(self.exact).get(key)

    def can_set(self, field: str) -> str | None:
        """None if ``set_field`` on ``field`` is allowed here, else what is missing."""
        if field in ("vlan_vid", "vlan_pcp"):
            return None if self.vlans else "a VLAN tag (match vlan_vid=0x1000/0x1000 or push_vlan first)"
        return self._protocol_problem(field)

    def operand_problem(self, field: str) -> str | None:
        """None if a move/push/pop may use ``field`` here (its protocol is in the
        match, as Open vSwitch checks it; a VLAN VID reads 0 without a tag), else
        what is missing."""
        if field not in FIELDS:  # a register view
            return None
        if field == "vlan_pcp" and not self.vlans:
            return "a VLAN tag (match vlan_vid=0x1000/0x1000 or push_vlan first)"
        return self._protocol_problem(field)

    def _protocol_problem(self, field: str) -> str | None:
        """What the packet lacks for ``field`` to exist (its FieldSpec's
        prerequisites, but a VLAN tag), or None."""
        if self.later and field in L4_HEADER_FIELDS:
            return "a transport header, which a non-first fragment (ip_frag) lacks,"
        spec = FIELDS[field]
        if spec.prereq_ct and not self.ct_ok:
            return "a tracked, valid connection (ct_state=+trk-inv)"
        for pkey, pval in spec.prereqs:
            if pkey != "vlan_vid" and self._value(pkey) != pval:
                return _HINT.get(pval, f"{pkey}={pval:#x}") if pkey in ("eth_type", "ip_proto") else f"{pkey}={pval}"
        if field.startswith("icmpv4") and self.eth_type != ETH_TYPE_IPV4:
            return "icmp"
        if field.startswith(("tcp_", "udp_", "sctp_")) and self.eth_type not in _IP:
            return "ip or ipv6"
        for pkey, vals in spec.prereq_any:
            if self._value(pkey) not in vals:
                if pkey == "eth_type":
                    return "ip or ipv6" if ETH_TYPE_IPV4 in vals else "mpls"
                return f"{pkey} in {{{', '.join(map(str, vals))}}}"
        for pkey in spec.prereq_zero:
            if self._value(pkey) not in (None, 0):
                return f"{pkey}=0 (or {pkey} not matched)"
        return None

    def settable_fields(self) -> list[str]:
        return [f for f, spec in FIELDS.items() if spec.settable and self.can_set(f) is None]

    def problem(self, action: Action, nested: bool = False) -> str | None:
        """Why OVS would reject ``action`` at this point (None if it would not)."""
        if isinstance(action, SetField) and not isinstance(action.field, PofField):
            missing = self.can_set(action.field)
            if missing:
                return f"set_field on {action.field} needs {missing} in the match"
            if action.field == "vlan_vid" and not action.value & OFPVID_PRESENT:
                return f"set_field on vlan_vid needs the present bit: write {action.value | OFPVID_PRESENT:#x} for VLAN {action.value}"
        elif isinstance(action, (MoveField, StackPush, StackPop)):
            operands = [action.src, action.dst] if isinstance(action, MoveField) else \
                [action.src if isinstance(action, StackPush) else action.dst]
            for sf in operands:
                missing = self.operand_problem(sf.field)
                if missing:
                    return f"{sf.field} needs {missing} in the match"
            if nested and type(action) in NOT_IN_ACTION_SET:
                return f"{'push' if isinstance(action, StackPush) else 'pop'} cannot be written to the action set"
        elif nested and type(action) in NOT_IN_ACTION_SET:
            return f"{type(action).__name__.lower()} cannot be written to the action set"
        elif isinstance(action, Clone):  # (Open vSwitch checks the nested actions on a copy of the flow)
            return self.clone_problem(action)
        elif isinstance(action, (Multipath, Bundle)) and action.dst is not None \
                and self.operand_problem(action.dst.field):
            return f"{action.dst.field} needs {self.operand_problem(action.dst.field)} in the match"
        elif isinstance(action, OutputReg):
            missing = self.operand_problem(action.src.field)
            if missing:
                return f"{action.src.field} needs {missing} in the match"
        elif isinstance(action, PushVlan) and self.vlans >= MAX_VLAN_TAGS:
            return f"push_vlan: at most {MAX_VLAN_TAGS} VLAN tags"
        elif isinstance(action, PopVlan) and not nested and not self.vlans:
            return "pop_vlan needs a VLAN tag (match vlan_vid=0x1000/0x1000 or push_vlan first)"
        elif isinstance(action, DecTtl) and not nested and self.eth_type not in _IP:
            return "dec_ttl needs ip or ipv6 in the match"
        elif isinstance(action, Learn):
            return self.learn_problem(action)
        elif isinstance(action, Ct) and self.eth_type not in _IP:
            return "ct needs ip or ipv6 in the match"
        elif isinstance(action, Ct) and action.nat is not None and action.nat.addr_min is not None \
                and self.eth_type != (ETH_TYPE_IPV6 if action.nat.v6 else ETH_TYPE_IPV4):
            return f"ct nat: an IPv{6 if action.nat.v6 else 4} range needs {'ipv6' if action.nat.v6 else 'ip'} in the match"
        elif isinstance(action, Ct) and action.alg in ("ftp", "tftp") and self.ip_proto != CT_ALGS[action.alg][1]:
            return f"ct alg={action.alg} needs {('tcp', 'udp')[action.alg == 'tftp']} in the match"
        elif isinstance(action, Ct) and action.commit and self.ct_inv:
            return "ct(commit) cannot commit an invalid connection (the match has ct_state +inv)"
        elif nested and isinstance(action, EncapEthernet):  # (encap_set.py: the split pair, checked per rule)
            return None
        elif nested and isinstance(action, (EncapNsh, EncapEthernet)):  # (encap.py)
            return "encap is supported in a flow's apply_actions only"
        elif nested and isinstance(action, Decap):  # (decap_set.py: the split pair, checked per rule)
            return None
        elif nested and isinstance(action, Decap):  # (decap.py)
            return "decap is supported in a flow's apply_actions only"
        elif isinstance(action, DecNshTtl):  # (nsh)
            return None if nested or self.eth_type == 0x894F else "dec_nsh_ttl needs eth_type=0x894f in the match"
        elif isinstance(action, SetNwTtl) and not nested and self.eth_type not in _IP:
            return "set_nw_ttl needs ip or ipv6 in the match"
        elif isinstance(action, (PopMpls, SetMplsTtl, DecMplsTtl)) and not nested and self.eth_type not in _MPLS_TYPES:
            name = {PopMpls: "pop_mpls", SetMplsTtl: "set_mpls_ttl", DecMplsTtl: "dec_mpls_ttl"}[type(action)]
            return f"{name} needs mpls in the match (or push_mpls first)"
        elif isinstance(action, FinTimeout) and self.ip_proto != 6:  # (fin_timeout: OVS's check_FIN_TIMEOUT)
            return "fin_timeout needs tcp in the match"
        return None

    def clone_problem(self, a: Clone) -> str | None:
        inside = replace(self)
        for b in a.actions:
            why = inside.problem(b)
            if why:
                return f"clone: {why}"
            inside.apply(b)
        return None

    def learn_problem(self, a: Learn) -> str | None:
        """Open vSwitch's learn_check: every source field's protocol is in the learning
        rule's match; every destination's is in the learned flow's match as the
        immediate values of the specs before it make it (a field copied from the
        packet pins nothing: ``eth_type=0x800,NXM_OF_IP_SRC[]``, not
        ``NXM_OF_ETH_TYPE[],NXM_OF_IP_SRC[]``)."""
        learned = FlowState()
        for s in a.specs:
            if s.src is not None:
                missing = self.operand_problem(s.src.field)
                if missing:
                    return f"learn: {s.src.field} needs {missing} in the match"
            if s.kind == LEARN_OUTPUT:
                continue
            missing = learned.operand_problem(s.dst.field)
            if missing:
                return f"learn: the learned flow's {s.dst.field} needs {missing} in the specs before it"
            if s.kind == LEARN_MATCH and s.src is None and s.dst.ofs == 0 and s.dst.n_bits == FIELDS.get(s.dst.field, _NO_FIELD).bits:
                if s.dst.field == "eth_type":
                    learned.eth_type = s.value
                elif s.dst.field == "ip_proto":
                    learned.ip_proto = s.value
                elif s.dst.field in ("icmpv6_type", "icmpv6_code"):
                    learned.exact += ((s.dst.field, s.value),)
        if a.result_dst is not None:
            return self.operand_problem(a.result_dst.field)
        return None

    def apply(self, action: Action) -> None:
        if isinstance(action, PushVlan):
            self.vlans = min(MAX_VLAN_TAGS, self.vlans + 1)
        elif isinstance(action, PopVlan):
            self.vlans = max(0, self.vlans - 1)
        elif isinstance(action, PushMpls):
            self.eth_type, self.ip_proto, self.exact = action.ethertype, None, ()
        elif isinstance(action, PopMpls):
            self.eth_type, self.exact = action.ethertype, ()
        elif isinstance(action, (EncapNsh, EncapEthernet)):  # (encap.py: NSH, no L3; Open vSwitch's check keeps the VLAN count)
            self.eth_type, self.ip_proto, self.exact = 0x894F, None, ()
        elif isinstance(action, Decap):  # (decap.py: as Open vSwitch's check, NSH is still NSH after the first
            # decap (its Ethernet header popped: marked in ``exact``), and the packet type is unknown after the second)
            first = self.eth_type == 0x894F and ("decap", 1) not in self.exact
            self.eth_type, self.ip_proto, self.exact = (0x894F, None, (("decap", 1),)) if first else (0xFFFF, None, ())


class _NoField:
    bits = -1


_NO_FIELD = _NoField()


def _ct_inv(match: Match) -> bool:
    fm = match.get("ct_state")
    return fm is not None and bool(fm.value & CT_INV)


def rule_problems(rule: Rule) -> list[str]:
    """Every action OVS would refuse in this rule, as readable strings."""
    state = FlowState.of(rule.match)
    out = []
    for ins in rule.instructions:
        if isinstance(ins, (ApplyActions, WriteActions)):
            nested = isinstance(ins, WriteActions)
            for i, a in enumerate(ins.actions):
                why = state.problem(a, nested)
                if why:
                    out.append(f"{'write' if nested else 'apply'} action {i + 1}: {why}")
                state.apply(a)
    return out

