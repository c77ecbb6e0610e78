"""Rule IR: the one representation of an OpenFlow 1.3 (+ POF) rule in Tandem.

Every front end (ovs-ofctl text, OpenFlow 1.3 wire messages) parses into these
types, and every back end (OVS, the emulator, the translator) consumes them.
All values are plain integers (MACs are 48-bit ints, IPv4 addresses 32-bit
ints, ...); formats convert at the edges. All types are frozen and hashable, so
rules can be set members and dict keys.

Field names are the OpenFlow 1.3 OXM names (``eth_src``, ``ipv4_dst``,
``tcp_src`` ...). ``vlan_vid`` follows OXM semantics: the value carries the
OFPVID_PRESENT bit (0x1000), so "VLAN 5" is ``0x1005`` and "no VLAN" is
``0x0000``. Masks follow OpenFlow: a 1 bit must match, a 0 bit is wildcarded;
``mask=None`` means an exact match on the field's full width.

Instruction execution order inside one table is the OpenFlow 1.3 order, which
``Rule`` enforces on construction: ApplyActions, ClearActions, WriteActions,
WriteMetadata, GotoTable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping, NamedTuple, Union


class RuleError(ValueError):
    """A rule that is not well formed (unknown field, value too wide, bad order)."""


@dataclass(frozen=True)
class FieldSpec:
    """Static facts about one matchable/settable field."""

    name: str
    bits: int
    maskable: bool
    # Match prerequisites, as (field, value) pairs that must be matched too
    # (OpenFlow 1.3 §7.2.3.6); an empty tuple means none.
    prereqs: tuple[tuple[str, int], ...] = ()
    # Alternatives: the prerequisite holds if the field matches any of these values.
    prereq_any: tuple[tuple[str, tuple[int, ...]], ...] = ()
    settable: bool = True
    # Fields that, when matched, must be matched exactly to 0 (OVS's IPv6 ND
    # fields need icmpv6_code 0: a flow without icmpv6_code satisfies it).
    prereq_zero: tuple[str, ...] = ()
    # Open vSwitch's connection-tracking fields other than ct_state/ct_zone/ct_mark/
    # ct_label need a valid tracked state matched: ct_state with +trk and -inv.
    prereq_ct: bool = False


ETH_TYPE_IPV4 = 0x0800
ETH_TYPE_IPV6 = 0x86DD
ETH_TYPE_ARP = 0x0806
ETH_TYPE_VLAN = 0x8100
ETH_TYPE_QINQ = 0x88A8
ETH_TYPE_MPLS = 0x8847
ETH_TYPE_MPLS_MC = 0x8848
IP_PROTO_ICMP = 1
IP_PROTO_TCP = 6
IP_PROTO_UDP = 17
IP_PROTO_ICMPV6 = 58
IP_PROTO_SCTP = 132
ICMPV6_ND_NS, ICMPV6_ND_NA = 135, 136
N_REGS = 16  # Open vSwitch's 32-bit registers reg0..reg15
OFPVID_PRESENT = 0x1000
OFPVID_NONE = 0x0000

_IP = (("eth_type", (ETH_TYPE_IPV4, ETH_TYPE_IPV6)),)
_V4 = (("eth_type", ETH_TYPE_IPV4),)
_V6 = (("eth_type", ETH_TYPE_IPV6),)
_MPLS = (("eth_type", (ETH_TYPE_MPLS, ETH_TYPE_MPLS_MC)),)
_ARP = (("eth_type", ETH_TYPE_ARP),)
_ICMPV6 = (("eth_type", ETH_TYPE_IPV6), ("ip_proto", IP_PROTO_ICMPV6))


def _l4(proto: int) -> tuple[tuple[str, int], ...]:
    return (("ip_proto", proto),)


FIELDS: dict[str, FieldSpec] = {
    f.name: f
    for f in [
        FieldSpec("in_port", 32, False, settable=False),
        FieldSpec("metadata", 64, True),  # set_field on metadata: OVS 3.1 takes it in OpenFlow 1.3
        FieldSpec("eth_dst", 48, True),
        FieldSpec("eth_src", 48, True),
        FieldSpec("eth_type", 16, False, settable=False),
        FieldSpec("vlan_vid", 13, True),
        FieldSpec("vlan_pcp", 3, False, prereqs=(("vlan_vid", OFPVID_PRESENT),)),
        FieldSpec("ip_dscp", 6, False, prereq_any=_IP),
        FieldSpec("ip_ecn", 2, False, prereq_any=_IP),
        FieldSpec("ip_proto", 8, False, prereq_any=_IP, settable=False),
        FieldSpec("ipv4_src", 32, True, prereqs=_V4),
        FieldSpec("ipv4_dst", 32, True, prereqs=_V4),
        FieldSpec("ipv6_src", 128, True, prereqs=_V6),
        FieldSpec("ipv6_dst", 128, True, prereqs=_V6),
        FieldSpec("tcp_src", 16, True, prereqs=_l4(IP_PROTO_TCP)),
        FieldSpec("tcp_dst", 16, True, prereqs=_l4(IP_PROTO_TCP)),
        FieldSpec("udp_src", 16, True, prereqs=_l4(IP_PROTO_UDP)),
        FieldSpec("udp_dst", 16, True, prereqs=_l4(IP_PROTO_UDP)),
        FieldSpec("icmpv4_type", 8, False, prereqs=_l4(IP_PROTO_ICMP)),
        FieldSpec("icmpv4_code", 8, False, prereqs=_l4(IP_PROTO_ICMP)),
        FieldSpec("arp_op", 16, False, prereqs=(("eth_type", ETH_TYPE_ARP),)),
        FieldSpec("arp_spa", 32, True, prereqs=(("eth_type", ETH_TYPE_ARP),)),
        FieldSpec("arp_tpa", 32, True, prereqs=(("eth_type", ETH_TYPE_ARP),)),
        FieldSpec("mpls_label", 20, False, prereq_any=_MPLS),
        # OpenFlow 1.3 fields beyond the common set (OVS 3.1 supports each in OF1.3).
        FieldSpec("sctp_src", 16, True, prereqs=_l4(IP_PROTO_SCTP)),
        FieldSpec("sctp_dst", 16, True, prereqs=_l4(IP_PROTO_SCTP)),
        FieldSpec("arp_sha", 48, True, prereqs=_ARP),
        FieldSpec("arp_tha", 48, True, prereqs=_ARP),
        FieldSpec("ipv6_flabel", 20, True, prereqs=_V6),
        FieldSpec("icmpv6_type", 8, False, prereqs=_ICMPV6),
        FieldSpec("icmpv6_code", 8, False, prereqs=_ICMPV6),
        FieldSpec("ipv6_nd_target", 128, True, prereqs=_ICMPV6, prereq_any=(("icmpv6_type", (ICMPV6_ND_NS, ICMPV6_ND_NA)),),
                  prereq_zero=("icmpv6_code",)),
        FieldSpec("ipv6_nd_sll", 48, True, prereqs=_ICMPV6 + (("icmpv6_type", ICMPV6_ND_NS),), prereq_zero=("icmpv6_code",)),
        FieldSpec("ipv6_nd_tll", 48, True, prereqs=_ICMPV6 + (("icmpv6_type", ICMPV6_ND_NA),), prereq_zero=("icmpv6_code",)),
        FieldSpec("mpls_tc", 3, False, prereq_any=_MPLS),
        FieldSpec("mpls_bos", 1, False, prereq_any=_MPLS, settable=False),  # OVS: read-only
        FieldSpec("tunnel_id", 64, True),
        # Open vSwitch's extension (Nicira NXM) fields, which OVS 3.1 takes in an
        # OpenFlow 1.3 match and set_field. Pipeline state, 0 when a packet arrives:
        # the packet mark and the sixteen 32-bit registers (the 64-bit xregN and
        # 128-bit xxregN are views of them; the formats turn those into regN).
        FieldSpec("pkt_mark", 32, True),
        *(FieldSpec(f"reg{i}", 32, True) for i in range(N_REGS)),
        # Packet fields: the TCP flags (12 bits, read-only), the IP fragment state
        # (bit 0: a fragment, bit 1: not the first; read-only), the IP TTL / hop limit
        # and the outer MPLS TTL.
        FieldSpec("tcp_flags", 12, True, prereqs=_l4(IP_PROTO_TCP), settable=False),
        FieldSpec("ip_frag", 2, True, prereq_any=_IP, settable=False),
        FieldSpec("nw_ttl", 8, False, prereq_any=_IP),
        FieldSpec("mpls_ttl", 8, False, prereq_any=_MPLS),
        # The conjunctive match id (Open vSwitch's conj_id): 0 in every lookup but
        # the one a completed conjunction makes (see ``Conjunction``); read-only.
        FieldSpec("conj_id", 32, False, settable=False),
        # Connection tracking (read-only; ct_mark and ct_label are written only by a
        # ct action's exec list): the state bits (CT_STATE_*), the zone, mark and
        # label, and the connection's original-direction tuple.
        FieldSpec("ct_state", 32, True, settable=False),
        FieldSpec("ct_zone", 16, False, settable=False),
        FieldSpec("ct_mark", 32, True, settable=False),
        FieldSpec("ct_label", 128, True, settable=False),
        FieldSpec("ct_nw_proto", 8, False, settable=False, prereq_ct=True),
        FieldSpec("ct_nw_src", 32, True, prereqs=_V4, settable=False, prereq_ct=True),
        FieldSpec("ct_nw_dst", 32, True, prereqs=_V4, settable=False, prereq_ct=True),
        FieldSpec("ct_ipv6_src", 128, True, prereqs=_V6, settable=False, prereq_ct=True),
        FieldSpec("ct_ipv6_dst", 128, True, prereqs=_V6, settable=False, prereq_ct=True),
        FieldSpec("ct_tp_src", 16, True, settable=False, prereq_ct=True),
        FieldSpec("ct_tp_dst", 16, True, settable=False, prereq_ct=True),
        # Open vSwitch's recirculation id (read-only, exact): 0 for a packet that came in
        # on a port, an id OVS allocates at run time in the copy a ct(table=T) recirculates.
        FieldSpec("recirc_id", 32, False, settable=False),
        # Tunnel metadata beside tunnel_id (Open vSwitch's, no OXM): the outer IPv4 / IPv6
        # addresses and the VXLAN group policy id. Pipeline state, 0 on arrival (OneSwitch
        # has no tunnel ports), written only by set_field/load/move/pop.
        FieldSpec("tun_src", 32, True),
        FieldSpec("tun_dst", 32, True),
        FieldSpec("tun_ipv6_src", 128, True),
        FieldSpec("tun_ipv6_dst", 128, True),
        FieldSpec("tun_gbp_id", 16, True),
        FieldSpec("tun_gbp_flags", 8, True),
        # The Network Service Header (Open vSwitch's NXOXM_NSH_*, an 0x894f frame; rules/nsh.py):
        # the 8-bit flags (the header holds 2 bits), TTL (6 bits), MD type (1 or 2) and next
        # protocol (read-only), the service path (24-bit SPI, SI), the MD type 1 contexts.
        FieldSpec("nsh_flags", 8, True, prereqs=(("eth_type", 0x894F),)),
        FieldSpec("nsh_ttl", 6, False, prereqs=(("eth_type", 0x894F),)),
        FieldSpec("nsh_mdtype", 8, False, prereqs=(("eth_type", 0x894F),), settable=False),
        FieldSpec("nsh_np", 8, False, prereqs=(("eth_type", 0x894F),), settable=False),
        FieldSpec("nsh_spi", 24, False, prereqs=(("eth_type", 0x894F),)),
        FieldSpec("nsh_si", 8, False, prereqs=(("eth_type", 0x894F),)),
        *(FieldSpec(f"nsh_c{i}", 32, True, prereqs=(("eth_type", 0x894F),)) for i in range(1, 5)),
        FieldSpec("tun_flags", 1, True),  # (Open vSwitch's one public tunnel flag, OAM; 16 bits on the wire)
        # The output port the action set holds so far (ONF's experimenter OXM in OpenFlow 1.3; read-only,
        # exact): OFPP_UNSET with no output or with a group written (rules/actset_output.py).
        FieldSpec("actset_output", 32, False, settable=False),
        # Open vSwitch's Geneve option fields (NXM_NX_TUN_METADATA0..63): 992 bits (124 bytes) as OVS
        # names them; the switch's TLV map gives each its length (rules/tun_metadata.py). Absent on
        # arrival (no tunnel ports), present once written; delete_field makes one absent.
        *(FieldSpec(f"tun_metadata{i}", 992, True) for i in range(64)),
    ]
}

# Fields OpenFlow 1.3 cannot mask that a match may still hold masked: the VLAN priority
# of Open vSwitch's NXM_OF_VLAN_TCI match (ovs-ofctl's ``vlan_tci=V/M``), which masks the
# whole 802.1Q TCI (``FieldSpec.maskable`` stays OpenFlow 1.3's: OXM_OF_VLAN_PCP, text
# ``vlan_pcp=`` and generators keep it unmasked).
TCI_MASKABLE = frozenset({"vlan_pcp"})


def tci_match(match: "Match") -> tuple[int, int] | None:
    """The 16-bit TCI (value, mask) of Open vSwitch's whole-TCI match (a masked
    ``vlan_pcp``; TCI = PCP << 13 | the OXM VID, whose present bit is the CFI bit), else
    None. Without a ``vlan_vid`` holding the present bit (``vlan_vid`` absent, or masked
    without 0x1000) the tag bit is left unmatched: the match also meets untagged frames,
    whose TCI is 0 (``vlan_tci=0x2000/0xe000``)."""
    pcp = match.get("vlan_pcp")
    if pcp is None or pcp.mask is None:
        return None
    vid = match.get("vlan_vid")
    vv, vm = (0, 0) if vid is None else (vid.value, 0x1FFF if vid.mask is None else vid.mask)
    return pcp.value << 13 | vv, pcp.mask << 13 | vm

# Open vSwitch's extension fields (no OpenFlow 1.3 OXM of their own; OVS takes their NXM headers).
NXM_FIELDS = frozenset({"pkt_mark", "tcp_flags", "ip_frag", "nw_ttl", "mpls_ttl", "conj_id"} | {f"reg{i}" for i in range(N_REGS)}
                       | {k for k in FIELDS if k.startswith("ct_")})
TUNNEL_FIELDS = frozenset({"tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst", "tun_gbp_id", "tun_gbp_flags"})
TUNNEL_FIELDS = TUNNEL_FIELDS | {"tun_flags"}
NXM_FIELDS = NXM_FIELDS | {"recirc_id"} | TUNNEL_FIELDS
TUN_METADATA_FIELDS = tuple(f"tun_metadata{i}" for i in range(64))  # (rules/tun_metadata.py)
NXM_FIELDS = NXM_FIELDS | set(TUN_METADATA_FIELDS)
# Fields no action may read: Open vSwitch numbers recirculations at run time, so only
# ``recirc_id=0`` (not recirculated) has one meaning on every switch (``check_recirc_id``).
UNREADABLE_FIELDS = frozenset({"recirc_id"})


def check_recirc_id(value: int) -> None:
    """RuleError unless a recirc_id match is 0 (see UNREADABLE_FIELDS)."""
    if value:
        raise RuleError(f"recirc_id={value:#x}: only recirc_id=0 (a packet not recirculated) can be matched; Open "
                        "vSwitch allocates the ids of recirculated packets at run time, each switch its own")
# Connection-tracking fields and ct_state's bits (Open vSwitch's CS_*).
CT_FIELDS = frozenset(k for k in FIELDS if k.startswith("ct_"))
CT_STATE_BITS = {"new": 0x01, "est": 0x02, "rel": 0x04, "rpl": 0x08, "inv": 0x10, "trk": 0x20, "snat": 0x40, "dnat": 0x80}
CT_TRK, CT_INV = CT_STATE_BITS["trk"], CT_STATE_BITS["inv"]
# Fields a ct action's exec list may set (with a mask).
CT_EXEC_FIELDS = ("ct_mark", "ct_label")
# The ct transport ports: matched whatever else is, but Open vSwitch shows (and ovs-ofctl
# sends) them only after a nonzero ct_nw_proto (ct_shown.py).
CT_PORT_FIELDS = ("ct_tp_src", "ct_tp_dst")


def ct_valid(match: "Match") -> bool:
    """Does ``match`` pin ct_state to a tracked, valid connection (+trk-inv), the
    prerequisite Open vSwitch puts on the ct tuple fields?"""
    fm = match.get("ct_state")
    return fm is not None and ct_state_valid(fm.value, fm.mask)


def ct_state_valid(value: int, mask: int | None) -> bool:
    """Is a ct_state match (value, mask) one of +trk-inv?"""
    mask = 0xFFFF_FFFF if mask is None else mask
    return mask & (CT_TRK | CT_INV) == CT_TRK | CT_INV and value & (CT_TRK | CT_INV) == CT_TRK

# ip_frag bits (Open vSwitch's FLOW_NW_FRAG_ANY / FLOW_NW_FRAG_LATER).
IP_FRAG_ANY, IP_FRAG_LATER = 1, 2
# Fields of a transport header a non-first fragment lacks: Open vSwitch refuses to
# match or write them when the match says the packet is one (ip_frag with the LATER bit).
L4_HEADER_FIELDS = frozenset({"tcp_src", "tcp_dst", "udp_src", "udp_dst", "sctp_src", "sctp_dst", "tcp_flags"})


def later_fragment(match: "Match") -> bool:
    """Does ``match`` only accept non-first fragments?"""
    fm = match.get("ip_frag")
    return fm is not None and bool(fm.value & IP_FRAG_LATER)
# Register views: name -> (first register, count), most significant register first.
REG_VIEWS: dict[str, tuple[int, int]] = {
    **{f"reg{i}": (i, 1) for i in range(N_REGS)},
    **{f"xreg{i}": (2 * i, 2) for i in range(N_REGS // 2)},
    **{f"xxreg{i}": (4 * i, 4) for i in range(N_REGS // 4)},
}


def split_register(view: str, value: int, mask: int | None = None) -> list[tuple[str, int, int | None]]:
    """A value (and mask) of a register view (``xreg1``, ``xxreg0``, ``reg3``) as
    (regN, value, mask) parts, most significant first; a part whose mask is 0 is
    left out, a full mask is None."""
    first, count = REG_VIEWS[view]
    out = []
    for k in range(count):
        shift = 32 * (count - 1 - k)
        v = (value >> shift) & 0xFFFF_FFFF
        m = 0xFFFF_FFFF if mask is None else (mask >> shift) & 0xFFFF_FFFF
        if m:
            out.append((f"reg{first + k}", v & m, None if m == 0xFFFF_FFFF else m))
    return out


@dataclass(frozen=True, order=True)
class PofField:
    """A protocol-oblivious field: ``length`` bits at bit ``offset`` of the frame
    (OVS-POF-TC §III's <offset, length>). Offsets count from the first bit of the
    Ethernet header."""

    offset: int
    length: int

    def __post_init__(self) -> None:
        if self.offset < 0 or self.length <= 0 or self.length > 128:
            raise RuleError(f"POF field <{self.offset},{self.length}>: need offset >= 0 and 0 < length <= 128 bits")

    @property
    def name(self) -> str:
        return f"pof[{self.offset}:{self.length}]"

    @property
    def bits(self) -> int:
        return self.length


FieldKey = Union[str, PofField]


def field_bits(key: FieldKey) -> int:
    if isinstance(key, PofField):
        return key.length
    try:
        return FIELDS[key].bits
    except KeyError:
        raise RuleError(f"unknown field {key!r}; known: {', '.join(sorted(FIELDS))}") from None


class FieldMatch(NamedTuple):
    """``value``/``mask`` for one field; ``mask=None`` is an exact match.
    A named tuple (immutable, same constructor and repr as a frozen dataclass)
    so that hashing and comparing a ``Match`` runs entirely in C."""

    value: int
    mask: int | None = None

    def matches(self, v: int) -> bool:
        return (v & self.mask) == self.value if self.mask is not None else v == self.value


def _check_width(key: FieldKey, value: int, what: str) -> None:
    bits = field_bits(key)
    if value < 0 or value >> bits:
        name = key.name if isinstance(key, PofField) else key
        raise RuleError(f"{what} {value:#x} does not fit field {name} ({bits} bits)")


def _sort_key(key: FieldKey) -> tuple[int, str, int, int]:
    if isinstance(key, PofField):
        return (1, "", key.offset, key.length)
    return (0, key, 0, 0)


@dataclass(frozen=True)
class Match:
    """A conjunction of field matches. Missing fields are wildcards.

    Build with ``Match.of(eth_type=0x800, ipv4_dst=(0x0a000000, 0xff000000))``:
    an int is an exact match, a (value, mask) pair a masked one.
    """

    fields: tuple[tuple[FieldKey, FieldMatch], ...] = ()

    def __post_init__(self) -> None:
        seen = set()
        for key, fm in self.fields:
            if key in seen:
                raise RuleError(f"field {key} matched twice")
            seen.add(key)
            _check_width(key, fm.value, "value")
            if fm.mask is not None:
                _check_width(key, fm.mask, "mask")
                if isinstance(key, str) and not FIELDS[key].maskable and key not in TCI_MASKABLE:
                    raise RuleError(f"field {key} cannot be masked")
                if fm.value & ~fm.mask:
                    raise RuleError(f"field {key}: value {fm.value:#x} has bits outside mask {fm.mask:#x}")
        ordered = tuple(sorted(self.fields, key=lambda kv: _sort_key(kv[0])))
        object.__setattr__(self, "fields", ordered)

    _hash = None  # the cached hash (a class default, so the first lookup raises nothing)

    def __hash__(self) -> int:
        # Matches key the translator's and backends' dicts, so the hash is computed
        # once per object (as str's is). ``_hash`` is not a field: eq/repr ignore it.
        h = self._hash
        if h is None:
            h = hash(self.fields)
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple:
        return (Match, (self.fields,))  # never carry a cached hash to another process

    def _replaced(self, pair: tuple[FieldKey, FieldMatch]) -> "Match":
        """Internal fast path: this match with field ``pair[0]``, which it must
        already match, matching ``pair[1]`` instead. Same field order; no
        re-validation (the caller vouches that the new value fits the field)."""
        key = pair[0]
        m = object.__new__(Match)
        object.__setattr__(m, "fields", tuple([pair if kv[0] == key else kv for kv in self.fields]))
        return m

    @classmethod
    def of(cls, _pof: Mapping[PofField, int | tuple[int, int]] | None = None, **kw: int | tuple[int, int]) -> "Match":
        items: list[tuple[FieldKey, FieldMatch]] = []
        for key, v in list(kw.items()) + list((_pof or {}).items()):
            items.append((key, FieldMatch(*v) if isinstance(v, tuple) else FieldMatch(v)))
        return cls(tuple(items))

    def get(self, key: FieldKey) -> FieldMatch | None:
        for k, fm in self.fields:
            if k == key:
                return fm
        return None

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.fields)

    def __iter__(self) -> Iterator[tuple[FieldKey, FieldMatch]]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def with_field(self, key: FieldKey, value: int, mask: int | None = None) -> "Match":
        rest = tuple((k, fm) for k, fm in self.fields if k != key)
        return Match(rest + ((key, FieldMatch(value, mask)),))

    def without(self, key: FieldKey) -> "Match":
        return Match(tuple((k, fm) for k, fm in self.fields if k != key))


# ---------------------------------------------------------------- actions

# Reserved output ports (OpenFlow 1.3 ofp_port_no).
OFPP_IN_PORT = 0xFFFFFFF8
OFPP_TABLE = 0xFFFFFFF9
OFPP_NORMAL = 0xFFFFFFFA
OFPP_FLOOD = 0xFFFFFFFB
OFPP_ALL = 0xFFFFFFFC
OFPP_CONTROLLER = 0xFFFFFFFD
OFPP_LOCAL = 0xFFFFFFFE
OFPP_ANY = 0xFFFFFFFF
OFPCML_NO_BUFFER = 0xFFFF

RESERVED_PORT_NAMES = {
    OFPP_IN_PORT: "IN_PORT",
    OFPP_TABLE: "TABLE",
    OFPP_NORMAL: "NORMAL",
    OFPP_FLOOD: "FLOOD",
    OFPP_ALL: "ALL",
    OFPP_CONTROLLER: "CONTROLLER",
    OFPP_LOCAL: "LOCAL",
    OFPP_ANY: "ANY",
}


@dataclass(frozen=True)
class Output:
    port: int
    max_len: int = OFPCML_NO_BUFFER  # only meaningful for CONTROLLER


@dataclass(frozen=True)
class PushVlan:
    ethertype: int = ETH_TYPE_VLAN


@dataclass(frozen=True)
class PopVlan:
    pass


@dataclass(frozen=True)
class SetField:
    """Set a field; with ``mask`` only its 1 bits (Open vSwitch's masked
    set_field, ``load:V->F[a..b]``; OpenFlow 1.3 itself sets whole fields)."""

    field: FieldKey
    value: int
    mask: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.field, str):
            spec = FIELDS.get(self.field)
            if spec is None:
                raise RuleError(f"set_field: unknown field {self.field!r}")
            if not spec.settable:
                raise RuleError(f"set_field: field {self.field} cannot be set")
        if self.field == "nsh_ttl" and self.mask is not None:  # a load: Open vSwitch's 8-bit subfield (nsh_ttl_load.py)
            if self.mask >> 8 or self.value & ~self.mask:
                raise RuleError(f"nsh_ttl: a load of {self.value:#x}/{self.mask:#x} does not fit its 8 bits")
            return
        _check_width(self.field, self.value, "set_field value")
        if self.mask is not None:
            if isinstance(self.field, PofField):
                raise RuleError(f"set_field on POF field {self.field.name} cannot be masked")
            _check_width(self.field, self.mask, "set_field mask")
            if self.value & ~self.mask:
                raise RuleError(f"set_field {self.field}: value {self.value:#x} has bits outside mask {self.mask:#x}")
            if self.mask == (1 << FIELDS[self.field].bits) - 1:
                object.__setattr__(self, "mask", None)


# Subfield operands of move / push / pop: the IR fields plus the wider register
# views (xregN = reg2N:reg2N+1, xxregN = reg4N..reg4N+3), name -> width in bits
# (as Open vSwitch's: a vlan_vid operand is the 12-bit VID, without the present bit).
OPERANDS: dict[str, int] = {**{k: f.bits for k, f in FIELDS.items()}, "vlan_vid": 12,
                            **{k: 32 * n for k, (_, n) in REG_VIEWS.items()}}
# The NSH fields: Open vSwitch's experimenter OXMs (8-byte headers in a move, push or pop too: rules/nxm.py)
NSH_FIELDS = frozenset(k for k in FIELDS if k.startswith("nsh_"))
NXM_FIELDS = NXM_FIELDS | NSH_FIELDS  # (Open vSwitch's extension fields: experimenter OXMs, rules/nxm.py)
OPERANDS.pop("actset_output")  # (matched only: Open vSwitch has no NXM header for it)
# nsh_ttl as an operand: Open vSwitch's 8-bit subfield over the header's 6-bit TTL (the flow keeps all 8
# bits, which later moves and matches see, the frame the low 6: measured, docs/rule-syntax.md)
OPERANDS["nsh_ttl"] = 8
NXM_FIELDS = NXM_FIELDS | {"actset_output"}
# Fields a move, load or pop may write: the settable ones and the register views.
# (Open vSwitch also writes in_port that way; Tandem does not: docs/endpoint.md.)
MOVE_TARGETS = frozenset([k for k, f in FIELDS.items() if f.settable] + list(REG_VIEWS))


def no_nsh_operand(sf: "Subfield | None", what: str) -> None:
    """Refuse an NSH field as ``what``'s operand: OneSwitch takes them in move, push, pop,
    output_reg and learn's result_dst only (their 8-byte experimenter headers; docs/endpoint.md,
    "Refused by OneSwitch only")."""
    if sf is not None and sf.field in NSH_FIELDS:
        raise RuleError(f"{what}: the NSH field {sf.field} is an operand of move, push, pop, output_reg and learn's result_dst only")


@dataclass(frozen=True)
class Subfield:
    """Bits ``ofs`` .. ``ofs + n_bits - 1`` of ``field`` (bit 0 = least significant),
    Open vSwitch's ``FIELD[ofs..ofs+n_bits-1]``."""

    field: str
    ofs: int
    n_bits: int

    def __post_init__(self) -> None:
        width = OPERANDS.get(self.field)
        if width is None:
            raise RuleError(f"unknown field {self.field!r} in a subfield")
        if self.field in UNREADABLE_FIELDS:
            raise RuleError(f"{self.field} cannot be an action's operand: Open vSwitch allocates recirculation ids "
                            "at run time, each switch its own")
        if self.ofs < 0 or self.n_bits < 1 or self.ofs + self.n_bits > width:
            raise RuleError(f"{self.field}[{self.ofs}..{self.ofs + self.n_bits - 1}] does not fit "
                            f"{self.field} ({width} bits)")

    @classmethod
    def whole(cls, field: str) -> "Subfield":
        return cls(field, 0, OPERANDS[field])


@dataclass(frozen=True)
class MoveField:
    """Copy ``src``'s bits into ``dst`` (same width; Open vSwitch's ``move``)."""

    src: Subfield
    dst: Subfield

    def __post_init__(self) -> None:
        if self.src.n_bits != self.dst.n_bits:
            raise RuleError(f"move: {self.src.n_bits} source bits into {self.dst.n_bits} destination bits")
        if self.dst.field not in MOVE_TARGETS:
            raise RuleError(f"move: field {self.dst.field} cannot be written")


@dataclass(frozen=True)
class StackPush:
    """Push ``src``'s bits onto the packet's stack (Open vSwitch's ``push``)."""

    src: Subfield


@dataclass(frozen=True)
class StackPop:
    """Pop the top of the packet's stack into ``dst`` (Open vSwitch's ``pop``;
    an empty stack leaves ``dst`` unchanged)."""

    dst: Subfield

    def __post_init__(self) -> None:
        if self.dst.field not in MOVE_TARGETS:
            raise RuleError(f"pop: field {self.dst.field} cannot be written")


@dataclass(frozen=True)
class Note:
    """Does nothing; carries the controller's bytes (Open vSwitch's ``note``).
    The bytes are kept as the wire pads them (zeros up to the 8-byte action
    boundary, at least 6), so text and wire forms compare equal."""

    data: bytes = b""

    def __post_init__(self) -> None:
        n = max(6, len(self.data) + (-(len(self.data) + 10) % 8))
        if len(self.data) != n:
            object.__setattr__(self, "data", bytes(self.data) + bytes(n - len(self.data)))


@dataclass(frozen=True)
class Exit:
    """Stop: no further action or instruction of this rule or a later table runs,
    and neither does the action set (Open vSwitch's ``exit``, as OVS 3.1 runs it;
    in a group bucket, which runs as an action set, it is ignored)."""


@dataclass(frozen=True)
class DecNshTtl:
    """Open vSwitch's ``dec_nsh_ttl`` (NXAST_DEC_NSH_TTL): the NSH TTL less 1; at 0 or 1
    a packet-in with reason invalid_ttl, and the rest of the list does not run. Needs
    ``eth_type=0x894f`` where it runs in apply-actions (``prereq.FlowState``); in
    write_actions and buckets Open vSwitch checks none (the action set runs it after
    dec_mpls_ttl, before the set-fields: measured on 3.1)."""


@dataclass(frozen=True)
class EncapNsh:
    """Open vSwitch's ``encap(nsh(md_type=1))`` (NXAST_ENCAP, new packet type (1,0x894f)):
    an NSH header (MD type 1, TTL 63, SI 255, next protocol Ethernet) in front of the
    whole frame. ``md_type`` None is the bare ``encap(nsh)`` (no MD-type property on the
    wire; Open vSwitch pushes MD type 1 for it too). OneSwitch runs it only as the start
    of the SFC pattern ``encap(nsh…)``, NSH set_fields, ``encap(ethernet)`` (``encap.py``)."""

    md_type: int | None = 1


@dataclass(frozen=True)
class EncapEthernet:
    """Open vSwitch's ``encap(ethernet)`` (NXAST_ENCAP, new packet type (0,0)): an
    Ethernet header with both addresses 0 in front of an NSH packet (``encap.py``)."""


@dataclass(frozen=True)
class Conjunction:
    """Open vSwitch's ``conjunction(id, k/n)``: the rule is one flow of dimension
    ``k`` of the ``n`` (2..64) of conjunctive match ``id``. Such a rule never
    answers a lookup itself: a packet that matches, at one priority, a flow of
    every dimension of ``id`` is looked up again with ``conj_id=id``
    (ovs-fields(7) "Conjunctive Match Fields"). Only ``note`` may go with it."""

    id: int
    k: int
    n: int

    def __post_init__(self) -> None:
        if not 0 <= self.id <= 0xFFFF_FFFF:
            raise RuleError(f"conjunction id {self.id} does not fit 32 bits")
        if not 2 <= self.n <= 64:
            raise RuleError(f"conjunction({self.id},{self.k}/{self.n}): a conjunction has 2 to 64 clauses")
        if not 1 <= self.k <= self.n:
            raise RuleError(f"conjunction({self.id},{self.k}/{self.n}): clause index must be 1 to {self.n}")


def conjunction_problem(instructions: tuple) -> str | None:
    """Why Open vSwitch refuses these instructions' conjunction actions (None if there
    are none, or they are fine): besides them only ``note`` actions, and no other instruction."""
    conj = False
    for ins in instructions:
        acts = getattr(ins, "actions", None)
        if acts and any(type(a) is Conjunction for a in acts):
            conj = True
            if type(ins) is not ApplyActions:
                return "a conjunction action cannot be written to the action set"
    if not conj:
        return None
    for ins in instructions:
        if type(ins) is not ApplyActions:
            return f"conjunction actions may be used along with note but no other instruction ({type(ins).__name__})"
        for a in ins.actions:
            if type(a) not in (Conjunction, Note):
                return f"conjunction actions may be used along with note but not any other kind of action ({type(a).__name__})"
    return None


@dataclass(frozen=True)
class OutputReg:
    """Output to the port whose number ``src`` holds when the action runs (Open
    vSwitch's ``output:FIELD[a..b]``, NXAST_OUTPUT_REG / OUTPUT_REG2): an OpenFlow
    1.0 port number, 0xff00 and up being the reserved ports (0xfffd CONTROLLER, with
    ``max_len``); a value above 0xffff sends nothing."""

    src: Subfield
    max_len: int = OFPCML_NO_BUFFER

    def __post_init__(self) -> None:
        pass  # (an NSH field too: the flow's value, measured on Open vSwitch 3.1; rules/nsh.py)


@dataclass(frozen=True)
class Resubmit:
    """Look the packet up again in ``table`` (255: the table of the rule running
    it) as if it had arrived on ``in_port`` (OFPP_IN_PORT: its own) and run the
    matching rule's instructions there and then; the actions after it go on
    with the packet as that rule left it (Open vSwitch's ``resubmit``,
    NXAST_RESUBMIT / NXAST_RESUBMIT_TABLE; the lookup alone sees ``in_port``:
    the rule's actions still see the packet's own). Written into the action set
    it runs last, when the set holds neither group nor output, with table 0 as
    "its own table" (as Open vSwitch runs it)."""

    in_port: int = 0xFFFF_FFF8  # OFPP_IN_PORT
    table: int = 255

    def __post_init__(self) -> None:
        if not 0 <= self.table <= 255:
            raise RuleError(f"resubmit table {self.table} outside 0..255")
        if 0xFEFF < self.in_port < 0xFFFF_FF00 or not 0 <= self.in_port <= 0xFFFF_FFFF:
            raise RuleError(f"resubmit in_port {self.in_port:#x} is no port (0..0xfeff or a reserved port)")
        if self.in_port == 0xFFFF_FFF8 and self.table == 255:
            raise RuleError('at least one "in_port" or "table" must be specified on resubmit')


@dataclass(frozen=True)
class Ct:
    """Open vSwitch's ``ct``: send the packet through the connection tracker of
    ``zone`` (or of the 16 bits ``zone_src`` holds); with ``commit`` the connection
    is remembered (``force``: a connection in the other direction is ended first),
    after ``exec`` sets its ct_mark / ct_label ((field, value, mask) triples). With
    ``table`` the pipeline forks: a copy carrying the ct_* fields continues in that
    table, while this list goes on with the packet untracked."""

    commit: bool = False
    force: bool = False
    zone: int = 0
    zone_src: "Subfield | None" = None
    table: int | None = None
    exec: tuple[tuple[str, int, int | None], ...] = ()
    nat: "CtNat | None" = None  # (ct_nat.py: text and wire; run by dp-core's ct_nat.rs)
    alg: str | None = None  # "ftp" / "tftp": the connection's ALG (run by dp-core's ct_alg.rs); "80": an NXAST_CT alg number OVS runs no ALG for

    def __post_init__(self) -> None:
        if not 0 <= self.zone <= 0xFFFF:
            raise RuleError(f"ct: zone {self.zone} outside 0..65535")
        no_nsh_operand(self.zone_src, "ct zone")
        if self.zone_src is not None and self.zone_src.n_bits != 16:
            raise RuleError(f"ct: a zone field must be 16 bits wide, not {self.zone_src.n_bits}")
        if self.table is not None and not 0 <= self.table <= MAX_TABLE:
            raise RuleError(f"ct: table {self.table} outside 0..{MAX_TABLE}")
        if self.force and not self.commit:
            raise RuleError("ct: force needs commit")
        if self.exec and not self.commit:
            raise RuleError("ct: exec sets ct_mark / ct_label only with commit")
        if self.nat is not None and self.nat != CtNat() and not self.commit:
            raise RuleError("ct: a nat with arguments needs commit (a bare nat applies a connection's translation)")
        if self.alg not in CT_ALGS and ct_alg_number(self.alg) is None:
            raise RuleError(f'ct: invalid conntrack helper "{self.alg}" (ftp, tftp, or a number 1..65535)')
        for f, v, m in self.exec:
            if f not in CT_EXEC_FIELDS:
                raise RuleError(f"ct action doesn't support nested modification of {f}")
            _check_width(f, v, "ct exec value")
            if m is not None:
                _check_width(f, m, "ct exec mask")
                if v & ~m:
                    raise RuleError(f"ct exec {f}: value {v:#x} has bits outside mask {m:#x}")


# ct(alg=NAME): the ALGs Open vSwitch 3.1 has (None: none), each with the port that names it
# on the wire (NXAST_CT's alg) and the IP protocol a flow using it must match
CT_ALGS = {None: (0, None), "ftp": (21, 6), "tftp": (69, 17)}


def ct_alg_number(alg: object) -> int | None:
    """A ``Ct.alg`` written as a number (Open vSwitch 3.1 takes any NXAST_CT alg, prints the
    ones it has no ALG for as ``alg=N`` and runs no ALG for them): N; None for anything else."""
    if not isinstance(alg, str) or not alg.isdigit() or alg != str(int(alg)):
        return None
    return int(alg) if 0 < int(alg) <= 0xFFFF and int(alg) not in (21, 69) else None


def ct_alg_port(alg: str | None) -> int:
    """NXAST_CT's alg of a ``Ct.alg``."""
    return CT_ALGS[alg][0] if alg in CT_ALGS else int(alg)


@dataclass(frozen=True)
class CtNat:
    """The ``nat`` of a ``ct`` (Open vSwitch's NXAST_NAT): ``kind`` "src" / "dst" with
    an optional address range (``v6``: IPv6) and port range, and the flags
    ``persistent`` and ``hash`` / ``random`` (port choice); ``kind`` None: ``nat``
    alone, which applies the NAT an established connection already has."""

    kind: str | None = None
    addr_min: int | None = None
    addr_max: int | None = None
    v6: bool = False
    port_min: int | None = None
    port_max: int | None = None
    persistent: bool = False
    hash: bool = False
    random: bool = False

    def __post_init__(self) -> None:
        if self.kind not in (None, "src", "dst"):
            raise RuleError(f"nat: {self.kind!r} is neither src nor dst")
        bits = 128 if self.v6 else 32
        for name in ("addr_min", "addr_max"):
            v = getattr(self, name)
            if v is not None and not 0 <= v < 1 << bits:
                raise RuleError(f"nat: address {v:#x} outside IPv{6 if self.v6 else 4}")
        for name in ("port_min", "port_max"):
            v = getattr(self, name)
            if v is not None and not 0 <= v <= 0xFFFF:
                raise RuleError(f"nat: port {v} outside 0..65535")
        if self.kind is None and (self.addr_min is not None or self.port_min is not None or self.persistent
                                  or self.hash or self.random):
            raise RuleError("nat: a range or flag needs src or dst")
        if self.addr_max is not None and (self.addr_min is None or self.addr_max < self.addr_min):
            raise RuleError("nat: the address range's end is below its start")
        if self.port_min is not None and self.addr_min is None:
            raise RuleError("nat: a port range needs an address")
        if self.port_max is not None and (self.port_min is None or self.port_max < self.port_min):
            raise RuleError("nat: the port range's end is below its start")
        if self.hash and self.random:
            raise RuleError("nat: both hash and random specified")
        if self.addr_min is None:  # (Open vSwitch keeps the flags only beside an address range)
            for flag in ("persistent", "hash", "random"):
                object.__setattr__(self, flag, False)
        if self.addr_max == self.addr_min:  # (one address: Open vSwitch prints and sends it so)
            object.__setattr__(self, "addr_max", None)
        if self.port_max == self.port_min:
            object.__setattr__(self, "port_max", None)


@dataclass(frozen=True)
class CtClear:
    """Open vSwitch's ``ct_clear``: the packet becomes untracked (every ct_* field 0)."""


LEARN_MATCH, LEARN_LOAD, LEARN_OUTPUT = "match", "load", "output"
LEARN_DEFAULT_PRIORITY = 0x8000


@dataclass(frozen=True)
class LearnSpec:
    """One part of a ``learn`` action's flow: ``kind`` LEARN_MATCH (the learned flow
    matches ``dst`` equal to ``src``'s bits in the packet, or to ``value``), LEARN_LOAD
    (the learned flow loads them into ``dst``) or LEARN_OUTPUT (it outputs to the port
    ``src`` holds; no ``dst``). ``src`` None: the immediate ``value``."""

    kind: str
    src: "Subfield | None" = None
    value: int = 0
    dst: "Subfield | None" = None

    def __post_init__(self) -> None:
        if self.kind not in (LEARN_MATCH, LEARN_LOAD, LEARN_OUTPUT):
            raise RuleError(f"learn: unknown spec kind {self.kind!r}")
        if self.kind == LEARN_OUTPUT:
            if self.src is None or self.dst is not None:
                raise RuleError("learn: an output spec takes a source field and no destination")
            return
        if self.dst is None:
            raise RuleError(f"learn: a {self.kind} spec needs a destination")
        if self.src is not None and self.src.n_bits != self.dst.n_bits:
            raise RuleError(f"learn: {self.src.n_bits} source bits into {self.dst.n_bits} destination bits")
        if self.src is None and (self.value < 0 or self.value >> self.dst.n_bits):
            raise RuleError(f"learn: value {self.value:#x} does not fit {self.dst.n_bits} bits")
        if self.kind == LEARN_MATCH and self.dst.field not in FIELDS:
            raise RuleError(f"learn: {self.dst.field} cannot be matched")
        no_nsh_operand(self.src, "learn")
        no_nsh_operand(self.dst, "learn")
        if self.kind == LEARN_LOAD and self.dst.field not in MOVE_TARGETS:
            raise RuleError(f"learn: {self.dst.field} cannot be loaded")

    @property
    def n_bits(self) -> int:
        return (self.src or self.dst).n_bits  # type: ignore[union-attr]


@dataclass(frozen=True)
class Learn:
    """Open vSwitch's ``learn``: add (or replace) a flow in ``table`` built from the
    packet by ``specs``, with the given priority, timeouts, cookie and flags
    (``delete_learned``: the learned flows go when the last learning rule with this
    cookie and table does). ``limit`` (0: none) caps the flows this action keeps;
    ``result_dst`` then gets 1 if the flow was learned, 0 if the limit refused it
    (Open vSwitch's NXAST_LEARN2)."""

    specs: tuple[LearnSpec, ...] = ()
    table: int = 1
    priority: int = LEARN_DEFAULT_PRIORITY
    idle_timeout: int = 0
    hard_timeout: int = 0
    fin_idle_timeout: int = 0
    fin_hard_timeout: int = 0
    cookie: int = 0
    send_flow_rem: bool = False
    delete_learned: bool = False
    limit: int = 0
    result_dst: "Subfield | None" = None

    def __post_init__(self) -> None:
        if not 0 <= self.table < MAX_TABLE + 1:
            raise RuleError(f"learn: table {self.table} outside 0..{MAX_TABLE}")
        for name in ("priority", "idle_timeout", "hard_timeout", "fin_idle_timeout", "fin_hard_timeout"):
            if not 0 <= getattr(self, name) <= 0xFFFF:
                raise RuleError(f"learn: {name} {getattr(self, name)} outside 0..65535")
        if not 0 <= self.cookie < 1 << 64 or not 0 <= self.limit < 1 << 32:
            raise RuleError("learn: cookie or limit out of range")
        if self.result_dst is not None:
            if self.result_dst.n_bits != 1:
                raise RuleError("learn: result_dst must be one bit")
            if self.result_dst.field not in MOVE_TARGETS:
                raise RuleError(f"learn: result_dst {self.result_dst.field} cannot be written")


@dataclass(frozen=True)
class DecTtl:
    """Decrement the IP TTL / hop limit; when it runs out, drop the packet and send
    a packet-in (invalid_ttl). ``ids`` (Open vSwitch's ``dec_ttl(ids)``): the
    packet-in goes to each controller with one of these ids, one per listed id in
    order; None is OpenFlow's dec_nw_ttl (id 0)."""

    ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.ids is not None:
            object.__setattr__(self, "ids", tuple(self.ids))
            if any(not 0 <= i <= 0xFFFF for i in self.ids):
                raise RuleError(f"dec_ttl({','.join(map(str, self.ids))}): controller ids are 0..65535")

    def packet_ins(self) -> int:
        """Packet-ins when the TTL runs out (one per listed id, to the connections with that id)."""
        return 1 if self.ids is None else len(self.ids)


@dataclass(frozen=True)
class PushMpls:
    """Push an MPLS label stack entry (OVS copies the TTL from IP or the outer label)."""

    ethertype: int = ETH_TYPE_MPLS


@dataclass(frozen=True)
class PopMpls:
    """Pop the outermost MPLS label; ``ethertype`` is the payload's type afterwards."""

    ethertype: int = ETH_TYPE_IPV4


@dataclass(frozen=True)
class SetMplsTtl:
    ttl: int

    def __post_init__(self) -> None:
        if not 0 <= self.ttl <= 0xFF:
            raise RuleError(f"set_mpls_ttl {self.ttl} outside 0..255")


@dataclass(frozen=True)
class DecMplsTtl:
    pass


@dataclass(frozen=True)
class SetNwTtl:
    ttl: int

    def __post_init__(self) -> None:
        if not 0 <= self.ttl <= 0xFF:
            raise RuleError(f"set_nw_ttl {self.ttl} outside 0..255")


@dataclass(frozen=True)
class SetQueue:
    """Choose the egress queue (OpenFlow set_queue); frames are not changed."""

    queue_id: int

    def __post_init__(self) -> None:
        if not 0 <= self.queue_id <= 0xFFFFFFFF:
            raise RuleError(f"set_queue {self.queue_id} does not fit 32 bits")


@dataclass(frozen=True)
class GroupAction:
    group_id: int


@dataclass(frozen=True)
class PopQueue:
    """Back to the queue the packet came with (Open vSwitch's ``pop_queue``);
    frames are not changed."""


OFPP_NONE_16 = 0xFFFF  # Open vSwitch's OFPP_NONE in a 16-bit port field
SAMPLE_DIRECTIONS = ("", "ingress", "egress")  # Open vSwitch's NX_ACTION_SAMPLE_DEFAULT / INGRESS / EGRESS


@dataclass(frozen=True)
class Sample:
    """Open vSwitch's ``sample``: with ``probability``/65535 send the packet's
    header to IPFIX collector set ``collector_set_id``. No collector is
    configured on OneSwitch (nor can a controller configure one), so it does
    nothing to the packet (as Open vSwitch without one); it is kept for flow
    stats. ``subtype`` is the Nicira action it came as (29 SAMPLE, 38 SAMPLE2,
    41 SAMPLE3): Open vSwitch sends it back the same way."""

    probability: int
    collector_set_id: int = 0
    obs_domain_id: int = 0
    obs_point_id: int = 0
    sampling_port: int = OFPP_NONE_16
    direction: int = 0
    subtype: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.probability <= 0xFFFF:
            raise RuleError(f"sample probability {self.probability} outside 1..65535")
        for name in ("collector_set_id", "obs_domain_id", "obs_point_id"):
            if not 0 <= getattr(self, name) <= 0xFFFF_FFFF:
                raise RuleError(f"sample {name} {getattr(self, name)} does not fit 32 bits")
        if not 0 <= self.sampling_port <= 0xFFFF:
            raise RuleError(f"sample sampling_port {self.sampling_port} does not fit 16 bits")
        if self.direction not in (0, 1, 2):
            raise RuleError(f"sample direction {self.direction} is not 0 (default), 1 (ingress) or 2 (egress)")
        least = 41 if self.direction else 38 if self.sampling_port != OFPP_NONE_16 else 29
        if self.subtype == 0 or self.subtype < least:  # the least Nicira action that carries it (as OVS picks)
            object.__setattr__(self, "subtype", least)
        if self.subtype not in (29, 38, 41):
            raise RuleError(f"sample subtype {self.subtype} is not 29, 38 or 41")


@dataclass(frozen=True)
class PofAddField:
    """Insert ``length`` bits holding ``value`` at bit ``offset`` (OVS-POF-TC AddField)."""

    offset: int
    length: int
    value: int


@dataclass(frozen=True)
class PofDelField:
    """Remove ``length`` bits at bit ``offset`` (OVS-POF-TC DelField)."""

    offset: int
    length: int


@dataclass(frozen=True)
class CheckPktLarger:
    """Write 1 into the one-bit ``dst`` if the packet is longer than ``pkt_len``
    bytes, else 0 (Open vSwitch's ``check_pkt_larger(N)->dst``). The length is
    its datapath's: the frame without the Ethernet padding after an IP packet."""

    pkt_len: int
    dst: Subfield

    def __post_init__(self) -> None:
        if not 0 <= self.pkt_len <= 0xFFFF:
            raise RuleError(f"check_pkt_larger({self.pkt_len}): the length is 0..65535")
        if self.dst.n_bits != 1:
            raise RuleError(f"check_pkt_larger: destination {self.dst.field} has {self.dst.n_bits} bits, needs 1")
        # (an NSH field: where the rule's match fixes the bit, rules/nsh_check_larger.py)
        if self.dst.field not in MOVE_TARGETS:
            raise RuleError(f"check_pkt_larger: field {self.dst.field} cannot be written")
        if self.dst.field == "pkt_mark":  # docs/endpoint.md, "Refused by OneSwitch only"
            raise RuleError("check_pkt_larger into pkt_mark is not supported: Open vSwitch writes the bit for later "
                            "tables but not into its datapath's mark, so its packet-ins show the mark without it")


CONTROLLER_REASONS = ("no_match", "action", "invalid_ttl", "action_set", "group", "packet_out")  # OVS's names, by number


def sent_reason(reason: int) -> int | None:
    """The reason Open vSwitch 3.1 sends a ``controller(reason=N)`` packet-in with and
    filters it by in the async config (measured on the wire): 0..5 as they are, 6 (its
    explicit table miss) as no_match, 7 (implicit miss) and 8..255 none (no packet-in)."""
    return reason if reason < len(CONTROLLER_REASONS) else 0 if reason == 6 else None


@dataclass(frozen=True)
class Controller:
    """Open vSwitch's ``controller(reason=…,max_len=…,id=…,userdata=…)`` (NXAST_CONTROLLER,
    NXAST_CONTROLLER2): a packet-in to each controller connection whose controller id is
    ``controller_id``, with this ``reason`` (0..5, ``CONTROLLER_REASONS``) and ``userdata``
    (sent only in NXT_PACKET_IN2). ``subtype`` is the Nicira action it came as (20 or 37;
    0: the one Open vSwitch picks). ``pause``: the packet-in carries a continuation the
    controller may send back in NXT_RESUME to go on after the action (oneswitch/endpoint_pause.py).
    A reason above 5 comes on the wire only (ovs-ofctl names none): Open vSwitch 3.1 sends
    6 (its explicit table miss) as ``no_match`` and nothing for 7..255 (``sent_reason``).
    ``meter_id``: the packet-ins pass through that meter first (None: unmetered; a meter
    that does not exist when the rule is added leaves them unmetered, as in Open vSwitch)."""

    max_len: int = OFPCML_NO_BUFFER
    controller_id: int = 0
    reason: int = 1
    userdata: bytes = b""
    subtype: int = 0
    meter_id: int | None = None
    pause: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.max_len <= 0xFFFF or not 0 <= self.controller_id <= 0xFFFF:
            raise RuleError(f"controller: max_len {self.max_len} and id {self.controller_id} are 0..65535")
        if not 0 <= self.reason <= 0xFF:
            raise RuleError(f"controller reason {self.reason} is not 0..255")
        if self.meter_id is not None and not 1 <= self.meter_id <= 0xFFFFFFFF:  # (above 0xffff0000: Open vSwitch's
            raise RuleError(f"controller meter_id {self.meter_id}: not 1..{0xFFFFFFFF:#x}")  # slowpath/controller/none)
        least = 37 if self.userdata or self.meter_id is not None or self.pause else 20  # (as Open vSwitch encodes it)
        if self.subtype == 0 or self.subtype < least:
            object.__setattr__(self, "subtype", least)
        if self.subtype not in (20, 37):
            raise RuleError(f"controller subtype {self.subtype} is not 20 or 37")


@dataclass(frozen=True)
class Clone:
    """Open vSwitch's ``clone(actions)`` (NXAST_CLONE): ``actions`` run on a copy of
    the packet and of its pipeline state (fields, registers, stack and the action set
    written so far), the copy's action set runs when they end, and the packet goes on
    as it was before the clone. Nested: what apply-actions may hold (a
    ``check_pkt_larger`` forks the rest of the clone, a ``ct(table=T)`` recirculates
    its tracked copy there, as Open vSwitch does: crates/dp-core/src/pipeline/clone.rs)."""

    actions: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", tuple(self.actions))


# Open vSwitch's NX_HASH_FIELDS_* (index = wire code) and multipath's NX_MP_ALG_*
HASH_FIELDS = ("eth_src", "symmetric_l4", "symmetric_l3l4", "symmetric_l3l4+udp", "nw_src", "nw_dst", "symmetric_l3")
MULTIPATH_ALGORITHMS = ("modulo_n", "hash_threshold", "hrw", "iter_hash")
BUNDLE_ALGORITHMS = ("active_backup", "hrw")  # NX_BD_ALG_*
BUNDLE_MAX_MEMBERS = 2048
# Reserved ports Open vSwitch 3.1 takes as bundle members (CONTROLLER it refuses, OFPBAC_BAD_OUT_PORT);
# ANY stands for OpenFlow 1.0's NONE (0xffff, what ovs-ofctl reads for both names and prints as ANY)
BUNDLE_RESERVED_MEMBERS = frozenset({OFPP_IN_PORT, OFPP_TABLE, OFPP_NORMAL, OFPP_FLOOD, OFPP_ALL, OFPP_LOCAL, OFPP_ANY})


def _hash_args(what: str, fields: str, basis: int) -> None:
    if fields not in HASH_FIELDS:
        raise RuleError(f"{what}: unknown fields `{fields}' (one of {', '.join(HASH_FIELDS)})")
    if not 0 <= basis <= 0xFFFF:
        raise RuleError(f"{what}: basis {basis} is not 0..65535")


@dataclass(frozen=True)
class Multipath:
    """Write into ``dst`` a link number 0 .. ``n_links``-1 chosen from a hash of
    ``fields`` (Open vSwitch's ``multipath(fields, basis, algorithm, n_links, arg,
    dst)``; its lib/multipath.c, run bit for bit by dp-core's ``ovs_hash``)."""

    fields: str
    basis: int
    algorithm: str
    n_links: int
    arg: int
    dst: Subfield

    def __post_init__(self) -> None:
        _hash_args("multipath", self.fields, self.basis)
        if self.algorithm not in MULTIPATH_ALGORITHMS:
            raise RuleError(f"multipath: unknown algorithm `{self.algorithm}' (one of {', '.join(MULTIPATH_ALGORITHMS)})")
        if not 1 <= self.n_links <= 65536:
            raise RuleError(f"multipath: n_links {self.n_links} is not in valid range 1 to 65536")
        if not 0 <= self.arg <= 0xFFFF_FFFF:
            raise RuleError(f"multipath: arg {self.arg} is not 0..4294967295")
        no_nsh_operand(self.dst, "multipath")
        if self.dst.field not in MOVE_TARGETS:
            raise RuleError(f"multipath: field {self.dst.field} cannot be written")
        if self.dst.n_bits < 16 and self.n_links > 1 << self.dst.n_bits:
            raise RuleError(f"multipath: {self.dst.n_bits}-bit destination field has {1 << self.dst.n_bits} possible "
                            f"values, less than specified n_links {self.n_links}")


@dataclass(frozen=True)
class Bundle:
    """Choose one of the ``members`` (port numbers) that is live, by ``algorithm``:
    ``active_backup`` the first, ``hrw`` the one whose hash of ``fields`` and index
    weighs most; output to it (``dst`` None: Open vSwitch's ``bundle``) or load its
    number into ``dst`` (``bundle_load``; 0xffff when none is live). Members are port
    numbers 0..0xfeff or the reserved ports ``BUNDLE_RESERVED_MEMBERS`` (OpenFlow 1.3
    numbers; the action carries their 16-bit forms). As in Open vSwitch 3.1 the reserved
    ones are always live (LOCAL: while its bridge port is, which OneSwitch takes as always)
    and CONTROLLER is refused."""

    fields: str
    basis: int
    algorithm: str
    members: tuple[int, ...]
    dst: Subfield | None = None

    def __post_init__(self) -> None:
        what = "bundle" if self.dst is None else "bundle_load"
        _hash_args(what, self.fields, self.basis)
        if self.algorithm not in BUNDLE_ALGORITHMS:
            raise RuleError(f"{what}: unknown algorithm `{self.algorithm}' (one of {', '.join(BUNDLE_ALGORITHMS)})")
        if len(self.members) > BUNDLE_MAX_MEMBERS:
            raise RuleError(f"{what}: {len(self.members)} members, at most {BUNDLE_MAX_MEMBERS}")
        for m in self.members:
            if not (0 <= m < 0xFF00 or m in BUNDLE_RESERVED_MEMBERS):  # (as Open vSwitch 3.1 refuses them)
                raise RuleError(f"{what}: member {m:#x} is not supported: members are port numbers 0..65279 or "
                                "the reserved ports IN_PORT, TABLE, NORMAL, FLOOD, ALL, LOCAL and NONE/ANY")
        if self.dst is not None:
            no_nsh_operand(self.dst, "bundle_load")
            if self.dst.field not in MOVE_TARGETS:
                raise RuleError(f"bundle_load: field {self.dst.field} cannot be written")
            if self.dst.n_bits < 16:
                raise RuleError("bundle_load: the destination needs at least 16 bits "
                                f"({self.dst.field} has {self.dst.n_bits})")


@dataclass(frozen=True)
class OutputTrunc:
    """Output the frame cut to ``max_len`` bytes to ``port`` (Open vSwitch's
    ``output(port=P,max_len=N)``, NXAST_OUTPUT_TRUNC, N >= 14). As OVS 3.1's
    datapath cuts it: N bytes of the frame as last committed there, header pushes
    and pops since then applied after the cut (docs/rule-syntax.md). To IN_PORT,
    FLOOD, ALL, CONTROLLER, TABLE or NORMAL Open vSwitch sends nothing."""

    port: int
    max_len: int

    def __post_init__(self) -> None:
        if not 14 <= self.max_len <= 0xFFFF_FFFF:
            raise RuleError(f"output(port={self.port},max_len={self.max_len}): max_len is 14..{0xFFFF_FFFF}")
        if not 0 <= self.port <= 0xFFFF_FFFF:
            raise RuleError(f"output_trunc port {self.port} does not fit 32 bits")


Action = Union[Output, PushVlan, PopVlan, SetField, DecTtl, GroupAction, PofAddField, PofDelField, PushMpls, PopMpls,
               SetMplsTtl, DecMplsTtl, SetNwTtl, SetQueue, MoveField, StackPush, StackPop, Note, Exit, PopQueue, Sample,
               CheckPktLarger, Conjunction, Resubmit, OutputReg, Ct, CtClear, Learn, Controller, Clone, Multipath, Bundle, OutputTrunc]


@dataclass(frozen=True)
class FinTimeout:
    """Open vSwitch's ``fin_timeout(idle_timeout=I,hard_timeout=H)`` (NXAST_FIN_TIMEOUT):
    when a TCP FIN or RST passes, the rule's own idle and hard timeouts shrink to
    these where they are longer or none (0 here: left as it is). OVS takes it in a
    rule that matches TCP only."""

    idle_timeout: int = 0
    hard_timeout: int = 0

    def __post_init__(self) -> None:
        for name in ("idle_timeout", "hard_timeout"):
            if not 0 <= getattr(self, name) <= 0xFFFF:
                raise RuleError(f"fin_timeout: {name} {getattr(self, name)} does not fit 16 bits")


Action = Union[Action, FinTimeout]  # (fin_timeout)
Action = Union[Action, DecNshTtl]  # (nsh)
Action = Union[Action, EncapNsh, EncapEthernet]  # (encap)


@dataclass(frozen=True)
class DeleteField:
    """Open vSwitch's ``delete_field:tun_metadataN`` (NXAST_DELETE_FIELD): the Geneve
    option is absent from now on (a match on it misses; its bytes stay)."""

    field: str

    def __post_init__(self) -> None:
        if self.field not in TUN_METADATA_FIELDS:
            raise RuleError(f"delete_field: {self.field} is not tun_metadata0..63 (Open vSwitch deletes only those)")


Action = Union[Action, DeleteField]  # (tun_metadata)


@dataclass(frozen=True)
class Decap:
    """Open vSwitch's ``decap(…)`` (NXAST_DECAP): removes the outer header (Ethernet, then
    NSH). ``packet_type`` is the new packet type as ``ns << 16 | type``; None is Open
    vSwitch's default "use the next protocol" (0xfffe, printed ``decap()``). OneSwitch
    runs it only as the SFC egress pair ``decap(),decap()`` on NSH over Ethernet
    (``decap.py``)."""

    packet_type: int | None = None


Action = Union[Action, Decap]  # (decap)

# Actions Open vSwitch does not take in write_actions (OFPBAC_BAD_TYPE): they have
# no place in OpenFlow's action-set order.
NOT_IN_ACTION_SET = frozenset({StackPush, StackPop, Note, Exit, PopQueue, Sample, CheckPktLarger, Conjunction, OutputReg,
                               Learn, Controller, Clone, Multipath, Bundle, OutputTrunc})
NOT_IN_ACTION_SET = NOT_IN_ACTION_SET | {FinTimeout}  # (fin_timeout)
NOT_IN_ACTION_SET = NOT_IN_ACTION_SET | {DeleteField}  # (tun_metadata)

# Action-set order for WriteActions (OpenFlow 1.3 §5.10: pop, push-MPLS, push-VLAN,
# decrement TTL, set-field, set-queue, group, output; OVS runs the same order); smaller runs first.
ACTION_SET_ORDER: dict[type, int] = {
    PopVlan: 1,
    PopMpls: 1,
    PofDelField: 1,
    PushMpls: 2,
    PushVlan: 3,
    PofAddField: 3,
    DecTtl: 4,
    DecMplsTtl: 4,
    SetMplsTtl: 5,
    SetNwTtl: 5,
    SetField: 5,
    MoveField: 5,
    SetQueue: 6,
    GroupAction: 7,
    Output: 8,
    Resubmit: 9,  # (Open vSwitch: run when the set holds neither group nor output)
    CtClear: 10,  # (Open vSwitch 3.1: run when the set holds no group, output or resubmit)
    Ct: 11,  # (... and no ct_clear)
}


# ---------------------------------------------------------------- instructions


@dataclass(frozen=True)
class ApplyActions:
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True)
class ClearActions:
    pass


@dataclass(frozen=True)
class WriteActions:
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True)
class WriteMetadata:
    value: int
    mask: int = 0xFFFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class GotoTable:
    table: int


@dataclass(frozen=True)
class MeterInstruction:
    """OFPIT_METER: pass the packet through meter ``meter_id`` before anything else
    (ovs-ofctl ``meter:N``). Meters themselves are ``tandem.rules.meters``."""

    meter_id: int

    def __post_init__(self) -> None:
        if not 1 <= self.meter_id <= 0xFFFF0000:
            raise RuleError(f"meter:{self.meter_id}: meter ids are 1..{0xFFFF0000:#x}")


Instruction = Union[MeterInstruction, ApplyActions, ClearActions, WriteActions, WriteMetadata, GotoTable]
INSTRUCTION_ORDER: dict[type, int] = {MeterInstruction: -1, ApplyActions: 0, ClearActions: 1, WriteActions: 2,
                                      WriteMetadata: 3, GotoTable: 4}

DEFAULT_PRIORITY = 32768
MAX_TABLE = 254


@dataclass(frozen=True, slots=True)
class Rule:
    """One flow entry: where it lives, what it matches, what it does.
    (Slotted: translators make thousands of these per batch, and an instance
    without a ``__dict__`` is one object less to allocate, collect and free.)"""

    match: Match = field(default_factory=Match)
    instructions: tuple[Instruction, ...] = ()
    table: int = 0
    priority: int = DEFAULT_PRIORITY
    cookie: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.table <= MAX_TABLE:
            raise RuleError(f"table {self.table} outside 0..{MAX_TABLE}")
        if not 0 <= self.priority <= 0xFFFF:
            raise RuleError(f"priority {self.priority} outside 0..65535")
        if not 0 <= self.cookie < 1 << 64:
            raise RuleError(f"cookie {self.cookie:#x} does not fit 64 bits")
        kinds = [type(i) for i in self.instructions]
        if len(set(kinds)) != len(kinds):
            raise RuleError("an instruction type appears twice in one rule")
        ordered = tuple(sorted(self.instructions, key=lambda i: INSTRUCTION_ORDER[type(i)]))
        object.__setattr__(self, "instructions", ordered)
        for ins in ordered:
            if isinstance(ins, GotoTable) and ins.table <= self.table:
                raise RuleError(f"goto_table:{ins.table} must point forward from table {self.table}")

    def instruction(self, kind: type) -> Instruction | None:
        for ins in self.instructions:
            if isinstance(ins, kind):
                return ins
        return None

    @property
    def apply_actions(self) -> tuple[Action, ...]:
        ins = self.instruction(ApplyActions)
        return ins.actions if isinstance(ins, ApplyActions) else ()

    @property
    def meter(self) -> int | None:
        ins = self.instruction(MeterInstruction)
        return ins.meter_id if isinstance(ins, MeterInstruction) else None

    @property
    def goto(self) -> int | None:
        ins = self.instruction(GotoTable)
        return ins.table if isinstance(ins, GotoTable) else None

    def outputs(self) -> list[int]:
        """All output ports named by apply- or write-actions, in order."""
        ports = []
        for ins in self.instructions:
            if isinstance(ins, (ApplyActions, WriteActions)):
                ports += [a.port for a in ins.actions if isinstance(a, Output)]
        return ports


_RULE_SLOT_SETTERS = tuple(getattr(Rule, name).__set__ for name in
                           ("match", "instructions", "table", "priority", "cookie", "idle_timeout", "hard_timeout"))


def _new_rule(match: Match, instructions: tuple[Instruction, ...], table: int, priority: int, cookie: int,
              idle_timeout: int, hard_timeout: int) -> Rule:
    """Internal fast path for translators: a Rule built from the parts of rules that
    are already valid, without re-validation. The caller vouches that the values
    satisfy ``Rule.__post_init__`` (instructions in order, goto forward, ranges)."""
    m, i, t, p, c, it, ht = _RULE_SLOT_SETTERS
    r = object.__new__(Rule)
    m(r, match)
    i(r, instructions)
    t(r, table)
    p(r, priority)
    c(r, cookie)
    it(r, idle_timeout)
    ht(r, hard_timeout)
    return r


# ---------------------------------------------------------------- groups

GROUP_TYPES = ("all", "select", "indirect", "fast_failover")
OFPG_ANY = 0xFFFFFFFF


@dataclass(frozen=True)
class Bucket:
    actions: tuple[Action, ...] = ()
    weight: int = 0  # select groups
    watch_port: int = OFPP_ANY  # fast_failover (and select) liveness: live while this port is
    watch_group: int = OFPG_ANY  # ... or while this group has a live bucket (OFPG_ANY: none)

    # (check_pkt_larger, clone and output_trunc are taken in a bucket, as Open vSwitch takes
    # them: it runs a bucket as an action set, which has no place for them, so they do nothing)

    def __post_init__(self) -> None:
        if any(isinstance(a, (EncapNsh, EncapEthernet)) for a in self.actions):
            raise RuleError("encap is supported in a flow's apply_actions only, not in a group bucket")
        if any(isinstance(a, Decap) for a in self.actions):
            raise RuleError("decap is supported in a flow's apply_actions only, not in a group bucket")


@dataclass(frozen=True)
class Group:
    group_id: int
    type: str = "all"
    buckets: tuple[Bucket, ...] = ()

    def __post_init__(self) -> None:
        if self.type not in GROUP_TYPES:
            raise RuleError(f"group {self.group_id}: type {self.type!r} is not one of {', '.join(GROUP_TYPES)}")
        if self.type == "indirect" and len(self.buckets) != 1:
            raise RuleError(f"group {self.group_id}: an indirect group needs exactly one bucket")


# ---------------------------------------------------------------- flow mods

OFPTT_ALL = 0xFF
FLOW_MOD_COMMANDS = ("add", "modify", "modify_strict", "delete", "delete_strict")


@dataclass(frozen=True)
class FlowMod:
    """A controller's change to the flow tables (OpenFlow 1.3 OFPT_FLOW_MOD),
    as the translator and backends consume it. ``rule`` carries table, priority,
    cookie, match and instructions; for delete commands only its match,
    priority (strict) and table matter. ``table == OFPTT_ALL`` is only valid for
    deletes and is carried in ``all_tables``."""

    command: str
    rule: Rule
    cookie_mask: int = 0
    out_port: int = OFPP_ANY
    out_group: int = OFPG_ANY
    all_tables: bool = False
    send_flow_rem: bool = False
    check_overlap: bool = False

    def __post_init__(self) -> None:
        if self.command not in FLOW_MOD_COMMANDS:
            raise RuleError(f"flow mod command {self.command!r} is not one of {', '.join(FLOW_MOD_COMMANDS)}")
        if self.all_tables and self.command not in ("delete", "delete_strict"):
            raise RuleError("table=ALL is only valid for delete commands")


# ---------------------------------------------------------------- canonical form


def canonical_actions(actions: tuple[Action, ...]) -> tuple[Action, ...]:
    """``max_len`` only means something for CONTROLLER outputs; elsewhere it is
    set to OFPCML_NO_BUFFER (wire messages carry 0 or 0xffe5 there, text none)."""
    return tuple(Output(a.port) if isinstance(a, Output) and a.port != OFPP_CONTROLLER and a.max_len != OFPCML_NO_BUFFER
                 else a for a in actions)


def canonical_rule(rule: Rule) -> Rule:
    """The same behaviour in one representation, so rules from different formats
    (ovs-ofctl text, OpenFlow wire) compare equal: output max_len normalized as in
    ``canonical_actions`` and an empty ApplyActions dropped."""
    ins: list[Instruction] = []
    for i in rule.instructions:
        if isinstance(i, ApplyActions):
            if i.actions:
                ins.append(ApplyActions(canonical_actions(i.actions)))
        elif isinstance(i, WriteActions):
            ins.append(WriteActions(canonical_actions(i.actions)))
        else:
            ins.append(i)
    return Rule(rule.match, tuple(ins), rule.table, rule.priority, rule.cookie, rule.idle_timeout, rule.hard_timeout)
