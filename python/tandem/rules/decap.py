"""Open vSwitch's ``decap(…)`` (NXAST_DECAP) in the one form OneSwitch runs: the SFC
egress pair

    decap(), decap()        (on Ethernet + NSH, next protocol 3 = Ethernet)

in a flow's apply-actions, on a packet the rule's match pins as NSH with an Ethernet
payload (``eth_type=0x894f,nsh_np=3``). Open vSwitch 3.1 (measured on a dummy bridge)
turns the first ``decap()`` of an Ethernet frame into a change of packet type (the
Ethernet header is popped at the next commit), and the second, on the NSH packet, pops
both headers and recirculates (datapath ``pop_eth,pop_nsh(),recirc(…)``): the rest of
the action list, the later tables and the action set run on the re-parsed inner frame,
with the registers, metadata, ``pkt_mark``, ``tunnel_id``, the stack and the action set
written before it kept.
Measured too:

- ``decap(),decap(packet_type(ns=0,type=0))`` and ``decap(packet_type(ns=1,type=0x894f)),
  decap()`` send the same inner frame (Open vSwitch takes the NSH header's next
  protocol either way); other packet types are refused here;
- a frame with a VLAN tag at the first ``decap()`` fails the whole translation ("cannot
  decap Ethernet if VLAN is present"): nothing at all is sent, not even an output
  before it; so does a frame that is not NSH at the second (packet type (1,0x800));
- one ``decap()`` alone leaves a non-Ethernet packet, which no Ethernet port sends
  (refused: every OneSwitch port and the PCIe crossing carry Ethernet frames only);
- after the pair Open vSwitch's check knows no packet type: set_field on a packet
  field, ``dec_ttl`` or ``push_mpls`` there is refused (``OFPBAC_MATCH_INCONSISTENT``),
  so only actions that touch no header may follow in the same list (``_AFTER``).

Every other form is refused (``form_problem``, ``match_problem``; docs/endpoint.md):
a single ``decap``, three or more, anything between the two, a pair after an action
that may change the packet type or runs other tables first, a match that does not pin
``eth_type=0x894f,nsh_np=3``, decap in write_actions (but the pair split between the
apply-actions and the action set: ``decap_set.py``), group buckets, clones and PACKET_OUTs.

Text: ``decap()``, ``decap(packet_type(ns=N,type=T))`` (as ovs-ofctl prints them).
Wire: ``nx_action_decap`` (``ffff 0010 00002320 002f 0000 new_pkt_type``; the default
packet type is (0,0xfffe)). Pure.
"""

from __future__ import annotations

import re
import struct

from .encap import EncapError
from .ir import (
    Action, Controller, Decap, Exit, GroupAction, Match, MoveField, Note, Output, OutputReg, Resubmit, SetField, SetQueue,
    StackPop, StackPush,
)

NXAST_DECAP = 47
PT_USE_NEXT_PROTO = 0xFFFE  # (namespace 0)
PT_ETHERNET, PT_NSH = 0, 1 << 16 | 0x894F
FIRST_TYPES = (None, PT_NSH)  # (measured: the first decap of the pair may name the NSH type it leaves)
SECOND_TYPES = (None, PT_ETHERNET)  # (and the second the Ethernet type it leaves)
ETH_TYPE_NSH, NSH_NP_ETHERNET = 0x894F, 3
# OpenFlow error codes used here (OFPET_BAD_ACTION): BAD_LEN, BAD_EXP_TYPE
_BAD_LEN, _BAD_EXP_TYPE = 1, 3
# Actions that touch no packet header (Open vSwitch takes them after the pair) and fields they may name
_AFTER = (Output, Controller, GroupAction, Resubmit, Note, Exit, SetQueue, OutputReg, SetField, MoveField, StackPush,
          StackPop)
_META = re.compile(r"(x{0,2}reg\d+|metadata|pkt_mark|tunnel_id)$")


DecapError = EncapError  # (bytes or text to refuse, with the OpenFlow error (type, code) to answer)


def has_decap(actions) -> bool:
    """Is there a decap in ``actions`` (also inside a clone)?"""
    from .ir import Clone

    return any(type(a) is Decap or (type(a) is Clone and has_decap(a.actions)) for a in actions)


def _meta_only(a: Action) -> bool:
    """Does ``a`` (one of ``_AFTER``) name only pipeline fields, no packet header?"""
    if isinstance(a, SetField):
        return isinstance(a.field, str) and bool(_META.match(a.field))
    if isinstance(a, MoveField):
        return all(bool(_META.match(sf.field)) for sf in (a.src, a.dst))
    if isinstance(a, (StackPush, OutputReg)):
        return bool(_META.match(a.src.field))
    if isinstance(a, StackPop):
        return bool(_META.match(a.dst.field))
    return True


names_no_header = _meta_only  # (also for encap_set.py)


def _changes_type_or_looks_up(a: Action) -> bool:
    """May ``a`` change the packet type or run other tables' actions on it first?"""
    from .ir import CheckPktLarger, Ct, EncapEthernet, EncapNsh, PopMpls, PushMpls

    if isinstance(a, Output):
        return a.port == 0xFFFFFFF9  # (TABLE: a lookup)
    return isinstance(a, (PushMpls, PopMpls, EncapNsh, EncapEthernet, Resubmit, GroupAction, CheckPktLarger, Ct,
                          OutputReg))


def form_problem(actions) -> str | None:
    """Why OneSwitch refuses the decaps of one apply-actions list (None: one whole
    ``decap(),decap()`` pair, nothing before it that may change the packet type, and
    only actions that touch no header after it)."""
    from .ir import Clone

    acts = list(actions)
    at = [i for i, a in enumerate(acts) if type(a) is Decap]
    if any(type(a) is Clone and has_decap(a.actions) for a in acts):
        return "decap inside clone is not supported by OneSwitch (the recirculation of a clone is not modeled)"
    if not at:
        return None
    if len(at) != 2 or at[1] != at[0] + 1:
        return ("decap is supported only as the pair decap(),decap() (NSH over Ethernet back to the inner Ethernet "
                "frame), once per action list and with nothing between: one decap() leaves a non-Ethernet packet, "
                "which Open vSwitch sends out of no Ethernet port")
    first, second = acts[at[0]], acts[at[1]]
    if first.packet_type not in FIRST_TYPES or second.packet_type not in SECOND_TYPES:
        return ("decap(),decap() is supported with packet_type(ns=1,type=0x894f) on the first and "
                "packet_type(ns=0,type=0) on the second at most (the types Open vSwitch leaves there)")
    if any(_changes_type_or_looks_up(a) for a in acts[:at[0]]):
        return ("decap(),decap() must not follow an action that may change the packet type or run other tables "
                "first (push_mpls, pop_mpls, encap, resubmit, group, ct, check_pkt_larger, output_reg, output:TABLE)")
    for a in acts[at[1] + 1:]:
        if not (isinstance(a, _AFTER) and _meta_only(a)):
            return ("after decap(),decap() only actions that touch no packet header may follow in the same list "
                    "(outputs, group, resubmit, controller, register/metadata/pkt_mark writes): Open vSwitch does "
                    "not know the packet type there (OFPBAC_MATCH_INCONSISTENT)")
    return None


def match_problem(match: Match, actions) -> str | None:
    """Why a rule with the pair in ``actions`` is refused for its match (None: the match
    pins ``eth_type=0x894f`` and ``nsh_np=3``, so the pair leaves an Ethernet frame)."""
    if not any(type(a) is Decap for a in actions):
        return None
    eth, np = match.get("eth_type"), match.get("nsh_np")
    if eth is None or eth.mask is not None or eth.value != ETH_TYPE_NSH or np is None or np.mask is not None \
            or np.value != NSH_NP_ETHERNET:
        return ("decap(),decap() needs eth_type=0x894f,nsh_np=3 in the match: on any other packet Open vSwitch "
                "leaves a non-Ethernet packet or fails the translation")
    return None


# ---------------------------------------------------------------- text

_PT = re.compile(r"packet_type\(ns=(0x[0-9a-f]+|\d+),type=(0x[0-9a-f]+|\d+)\)$")


def parse_decap(arg: str) -> Decap:
    """The argument of ``decap(ARG)``; DecapError with the reason."""
    a = arg.strip().lower().replace(" ", "")
    if not a:
        return Decap(None)
    m = _PT.match(a)
    if m is None:
        raise DecapError(_BAD_EXP_TYPE, f"decap({arg}): expected decap() or decap(packet_type(ns=N,type=T))")
    ns, typ = int(m.group(1), 0), int(m.group(2), 0)
    if ns > 0xFFFF or typ > 0xFFFF:
        raise DecapError(_BAD_EXP_TYPE, f"decap({arg}): ns and type are 16-bit values")
    pt = ns << 16 | typ
    return Decap(None if pt == PT_USE_NEXT_PROTO else pt)


def format_decap(a: Decap) -> str:
    if a.packet_type is None:
        return "decap()"
    typ = a.packet_type & 0xFFFF  # (as ovs-ofctl prints it: "%#x", so 0 is "0")
    return f"decap(packet_type(ns={a.packet_type >> 16},type={typ:#x}))" if typ else f"decap(packet_type(ns={a.packet_type >> 16},type=0))"


# ---------------------------------------------------------------- wire

def encode_decap(a: Decap) -> bytes:
    """nx_action_decap, as Open vSwitch 3.1 encodes it."""
    pt = PT_USE_NEXT_PROTO if a.packet_type is None else a.packet_type
    return struct.pack("!HHIH2xI", 0xFFFF, 16, 0x2320, NXAST_DECAP, pt)


def decode_decap(body: bytes) -> Decap:
    """The whole nx_action_decap -> Decap; DecapError for a bad length."""
    if len(body) != 16:
        raise DecapError(_BAD_LEN, f"decap of {len(body)} bytes, expected 16")
    (pt,) = struct.unpack_from("!I", body, 12)
    return Decap(None if pt == PT_USE_NEXT_PROTO else pt)
