"""Open vSwitch's ``encap(…)`` (NXAST_ENCAP) in the one form OneSwitch runs: the SFC
ingress pattern

    encap(nsh(md_type=1)), [set_field on NSH fields …], encap(ethernet)

in a flow's apply-actions. Open vSwitch 3.1 (measured on a dummy bridge) wraps the whole
frame, VLAN tags included, in an NSH header (MD type 1, flags 0, TTL 63, length 6 words,
next protocol 3 = Ethernet, SPI 0, SI 255, contexts 0; the NSH set_fields change it),
then in an Ethernet header whose addresses are 0 and ethertype 0x894f; the flow after it
is that frame's (no VLAN, NSH fields, no L3). Between the two encaps the packet is not
Ethernet: OVS sends nothing out of an Ethernet port then ("Trying to send non-Ethernet
packet through legacy L2 port"), refuses set_field on Ethernet and IP fields
(``OFPBAC_MATCH_INCONSISTENT``), and an ``encap(ethernet)`` on an Ethernet packet fails the
whole translation (nothing is sent). So inside the pattern only NSH set_fields may stand,
and after it the packet is an NSH-over-Ethernet frame as any other; every OneSwitch port
and the PCIe crossing see Ethernet frames only.

Refused too: the pattern after a ``check_pkt_larger`` in the same list (measured: Open
vSwitch 3.1's vswitchd aborts, ``lib/packets.c:272`` in ``push_eth()``, on
``check_pkt_larger(100)->NXM_NX_REG1[0],encap(nsh),encap(ethernet)`` when the packet is
then sent nowhere; after a check_pkt_larger in an earlier table too, which is not caught).

Every other form is refused (``form_problem``; docs/endpoint.md): ``encap(nsh)`` not
closed by ``encap(ethernet)`` in the same list, ``encap(ethernet)`` without it, MD type 2
and NSH TLVs, ``encap(mpls)`` and other packet types, encap in group buckets and
clones; in write_actions and PACKET_OUTs only the forms ``encap_set.py`` takes. ``decap`` runs only as the pair ``decap(),decap()`` (``decap.py``).

For ``output(port=P,max_len=N)`` (docs/rule-syntax.md) Open vSwitch commits its pending
header changes at ``encap(nsh)`` (it pushes the NSH header onto the frame as committed)
and leaves the Ethernet header of ``encap(ethernet)`` pending like a VLAN push (measured:
``push_vlan,encap(nsh),encap(ethernet),output(port=2,max_len=20)`` sends 34 bytes,
``encap(nsh),encap(ethernet),push_vlan,output(port=2,max_len=20)`` 38); dp-core's
``pipeline/encap.rs`` and ``oneswitch/trunc_translate.py`` follow.

Text: ``encap(nsh)``, ``encap(nsh(md_type=1))``, ``encap(ethernet)`` (as ovs-ofctl
prints them). Wire: ``nx_action_encap`` (``ffff LEN 00002320 002e hdr_size(0)
new_pkt_type`` + ED properties: class 4 (NSH) type 1 (MD type) len 5, padded to 8). Pure.
"""

from __future__ import annotations

import struct

from .ir import Action, CheckPktLarger, Clone, EncapEthernet, EncapNsh, NSH_FIELDS, SetField

NXAST_ENCAP = 46
PT_ETHERNET = 0
PT_NSH = 1 << 16 | 0x894F
_PROP_CLASS_NSH, _PROP_NSH_MDTYPE = 4, 1  # (type 2, an NSH TLV, is refused)
ENCAP_TYPES = (EncapNsh, EncapEthernet)
# OpenFlow error (type, code) pairs used here: OFPET_BAD_ACTION with BAD_LEN, BAD_EXP_TYPE, BAD_ARGUMENT
_BAD_ACTION, _BAD_LEN, _BAD_EXP_TYPE, _BAD_ARGUMENT = 2, 1, 3, 5


class EncapError(Exception):
    """Bytes or text to refuse, with the OpenFlow error (type, code) to answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.etype, self.code = _BAD_ACTION, code


def has_encap(actions) -> bool:
    """Is there an encap in ``actions`` (also inside a clone)?"""
    return any(type(a) in ENCAP_TYPES or (type(a) is Clone and has_encap(a.actions)) for a in actions)


def form_problem(actions) -> str | None:
    """Why OneSwitch refuses the encaps of one apply-actions list (None: every encap is
    part of a whole ``encap(nsh(md_type=1)), NSH set_fields…, encap(ethernet)``)."""
    inside = checked = False
    for a in actions:
        t = type(a)
        checked = checked or t is CheckPktLarger
        if t is EncapNsh and checked:  # (measured: lib/packets.c:272, push_eth)
            return ("encap(nsh) after check_pkt_larger in the same list is not supported: Open vSwitch 3.1's vswitchd "
                    "aborts when the packet is then sent nowhere")
        if t is EncapNsh:
            if inside:
                return "encap(nsh) inside encap(nsh)…encap(ethernet): the packet is NSH without Ethernet there"
            inside = True
        elif t is EncapEthernet:
            if not inside:
                return ("encap(ethernet) is supported only right after encap(nsh(md_type=1)) and NSH set_fields "
                        "(Open vSwitch drops an Ethernet packet at encap(ethernet))")
            inside = False
        elif t is Clone and has_encap(a.actions):
            return "encap inside clone is not supported by OneSwitch (a clone's pending header changes are not modeled)"
        elif inside and not (t is SetField and a.field in NSH_FIELDS and a.mask is None):
            return ("between encap(nsh) and encap(ethernet) only set_field on NSH fields is supported: the packet "
                    "is not Ethernet there (Open vSwitch sends nothing out of an Ethernet port then)")
    if inside:
        return ("encap(nsh) must be followed by encap(ethernet) in the same action list: every OneSwitch port and the "
                "PCIe crossing carry Ethernet frames only (Open vSwitch drops the NSH packet at an Ethernet port)")
    return None


# ---------------------------------------------------------------- text

def parse_encap(arg: str) -> Action:
    """The argument of ``encap(ARG)``; EncapError with the reason."""
    a = arg.strip().lower().replace(" ", "")
    if a == "ethernet":
        return EncapEthernet()
    if a == "nsh":
        return EncapNsh(None)
    if a.startswith("nsh(") and a.endswith(")"):
        props = a[4:-1]
        if props in ("md_type=1", "md_type=0x1"):
            return EncapNsh(1)
        raise EncapError(_BAD_EXP_TYPE, f"encap(nsh({props})): OneSwitch runs encap(nsh) with MD type 1 and no TLVs only")
    raise EncapError(_BAD_EXP_TYPE, f"encap({arg}): OneSwitch runs encap(nsh(md_type=1)) and encap(ethernet) only "
                     "(Open vSwitch also takes encap(mpls) and others, which leave a non-Ethernet packet)")


def format_encap(a: Action) -> str:
    if isinstance(a, EncapEthernet):
        return "encap(ethernet)"
    return "encap(nsh)" if a.md_type is None else f"encap(nsh(md_type={a.md_type}))"


# ---------------------------------------------------------------- wire

def encode_encap(a: Action) -> bytes:
    """nx_action_encap, as Open vSwitch 3.1 encodes it."""
    if isinstance(a, EncapEthernet):
        pt, props = PT_ETHERNET, b""
    else:
        pt = PT_NSH
        # (the property's length counts its header and MD type, not its padding: 5, as Open vSwitch sends it)
        props = b"" if a.md_type is None else struct.pack("!HBBB3x", _PROP_CLASS_NSH, _PROP_NSH_MDTYPE, 5, a.md_type)
    return struct.pack("!HHIHHI", 0xFFFF, 16 + len(props), 0x2320, NXAST_ENCAP, 0, pt) + props


def decode_encap(body: bytes) -> Action:
    """The whole nx_action_encap -> EncapNsh / EncapEthernet; EncapError for other forms."""
    if len(body) < 16:
        raise EncapError(_BAD_LEN, f"encap of {len(body)} bytes, expected at least 16")
    _hdr_size, pt = struct.unpack_from("!HI", body, 10)
    props = body[16:]
    if pt == PT_ETHERNET and not props:
        return EncapEthernet()
    if pt != PT_NSH:
        raise EncapError(_BAD_EXP_TYPE, f"encap to packet type ({pt >> 16},{pt & 0xFFFF:#x}): OneSwitch runs "
                         "encap(nsh(md_type=1)) and encap(ethernet) only")
    if not props:
        return EncapNsh(None)
    if len(props) == 8:
        cls, typ, plen, md = struct.unpack_from("!HBBB", props, 0)
        if (cls, typ) == (_PROP_CLASS_NSH, _PROP_NSH_MDTYPE) and plen in (5, 8) and not any(props[5:8]):
            if md == 1:
                return EncapNsh(1)
            raise EncapError(_BAD_EXP_TYPE, f"encap(nsh(md_type={md})): OneSwitch runs MD type 1 only")
    raise EncapError(_BAD_EXP_TYPE, "encap(nsh(…)) with NSH TLVs or other properties: OneSwitch runs "
                     "encap(nsh(md_type=1)) only")

