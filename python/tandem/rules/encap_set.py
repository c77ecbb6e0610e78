"""The SFC encap pair split between a flow's apply-actions and its action set:

    actions=…, encap(nsh(md_type=1)), [NSH set_fields …], write_actions(encap(ethernet), …)

Open vSwitch 3.1 (measured on a dummy bridge with ofproto/trace and real frames) keeps
one encap and one decap in the action set (the one written last) and runs them after
pop_vlan and pop_mpls and before push_mpls, push_vlan, the TTL actions, the set-fields
and the group or output: ``action set is: encap(ethernet),set_field:…->nsh_spi,
set_field:…->eth_dst,output:2`` sends the NSH frame with that Ethernet header, and
``encap(ethernet),push_vlan`` tags the new Ethernet header. So after an apply-actions
list that ends in ``encap(nsh…)`` and NSH set_fields, a written ``encap(ethernet)``
makes the packet Ethernet again before the set's output, and the frame Open vSwitch
sends is the one the whole pattern in one list sends (``encap.py``); dp-core runs the
written ``encap(ethernet)`` at that place of its action set (``actionset.rs``).

Refused (``problem``; docs/endpoint.md), as every OneSwitch port and the PCIe crossing
carry Ethernet frames only:

- ``encap(ethernet)`` written without the open ``encap(nsh)`` at the end of the same
  rule's apply-actions (on an Ethernet packet Open vSwitch fails the whole translation,
  measured: nothing at all is sent);
- that open ``encap(nsh)`` without a written ``encap(ethernet)`` in the same rule;
- the split pair with ``goto_table`` (the later tables would see a packet that is not
  Ethernet, which dp-core does not model), and with a written ``pop_vlan``, ``pop_mpls``
  or ``push_mpls`` (they run on the NSH packet before ``encap(ethernet)`` or on the new
  frame; not modeled);
- the split pair after a ``check_pkt_larger`` in the same list (measured: Open vSwitch 3.1's
  vswitchd aborts, ``lib/packets.c:272`` in ``push_eth()``, on
  ``check_pkt_larger(100)->NXM_NX_REG1[0],encap(nsh),write_actions(encap(ethernet))`` when
  the packet is sent nowhere; it does so for the pattern in one list too, and after a
  ``check_pkt_larger`` in an earlier table);
- ``encap(nsh)`` written (Open vSwitch keeps the last encap written, so a written
  pair runs ``encap(ethernet)`` alone and fails; alone it sends nothing) and ``encap``
  in group buckets (Open vSwitch runs a bucket as an action set: the same).

In a PACKET_OUT (a list, as apply-actions) the pattern whole is taken, followed only by
what the endpoint's walk carries out on the encapsulated packet (``packet_out_problem``).

Pure.
"""

from __future__ import annotations

from .encap import form_problem, has_encap
from .decap import names_no_header
from .ir import EncapEthernet, EncapNsh, MoveField, NSH_FIELDS, SetField

_NOT_WITH_SPLIT = {"PopVlan": "pop_vlan", "PopMpls": "pop_mpls", "PushMpls": "push_mpls"}


def written_encap(actions) -> bool:
    """Does a write_actions list hold an ``encap(ethernet)``?"""
    return any(type(a) is EncapEthernet for a in actions)


def open_at_end(apply) -> bool:
    """Does ``apply`` end in ``encap(nsh…)`` and NSH set_fields only, its earlier encaps
    whole patterns (the list the split pair starts)?"""
    acts = list(apply)
    at = max((i for i, a in enumerate(acts) if type(a) is EncapNsh), default=None)
    if at is None or any(not (type(a) is SetField and a.field in NSH_FIELDS and a.mask is None) for a in acts[at + 1:]):
        return False
    return form_problem(acts[:at]) is None


def problem(apply, instructions) -> str | None:
    """Why OneSwitch refuses the encaps of one rule (its apply-actions ``apply`` and all
    its ``instructions``); None: every encap is a whole pattern in ``apply`` or the split
    pair above."""
    from .ir import CheckPktLarger, GotoTable, WriteActions

    written = next((i.actions for i in instructions if type(i) is WriteActions), ())
    if any(type(a) is EncapNsh for a in written):
        return ("encap(nsh) in write_actions is not supported: Open vSwitch keeps only the encap written last, and "
                "the packet would leave no Ethernet port")
    if not written_encap(written):
        return form_problem(apply) if has_encap(apply) else None
    if not open_at_end(apply):
        return ("encap(ethernet) in write_actions is supported only after an apply-actions list that ends in "
                "encap(nsh(md_type=1)) and NSH set_fields (on an Ethernet packet Open vSwitch fails the whole "
                "translation and sends nothing)")
    if any(type(a) is CheckPktLarger for a in apply):
        return ("check_pkt_larger before encap(nsh) closed by a written encap(ethernet) is not supported: Open vSwitch "
                "3.1's vswitchd aborts when such a packet is sent nowhere after it (lib/packets.c:272, push_eth)")
    if any(type(i) is GotoTable for i in instructions):
        return ("encap(nsh) in apply-actions closed by a written encap(ethernet) is supported without goto_table only: "
                "the later tables would see a packet that is not Ethernet")
    at = next(i for i, a in enumerate(written) if type(a) is EncapEthernet)
    if any(type(a) in (SetField, MoveField) and not (type(a) is SetField and a.field in NSH_FIELDS or names_no_header(a))
           for a in written[:at]):
        return ("a written set_field or move on a packet header before the written encap(ethernet) is refused, as Open "
                "vSwitch refuses it (OFPBAC_MATCH_INCONSISTENT: the packet is not Ethernet there)")
    bad = next((_NOT_WITH_SPLIT[type(a).__name__] for a in written if type(a).__name__ in _NOT_WITH_SPLIT), None)
    if bad:
        return (f"a written encap(ethernet) with {bad} in the same write_actions is not supported (it runs on the "
                "NSH packet or the new header; not modeled)")
    return None


# ---------------------------------------------------------------- PACKET_OUT

# (After the pattern Open vSwitch 3.1's flow still holds the VLAN tags of the frame it wrapped: a
# push_vlan,set_field:…->vlan_vid,encap(nsh),encap(ethernet),set_field:…->vlan_vid in a PACKET_OUT sends
# the new frame with a tag, measured, which dp-core, whose new frame has none, does not model; so VLAN
# pushes, pops and field writes after it are refused there.)


def _free_after_encap(a) -> bool:
    """May ``a`` follow the SFC pattern in a PACKET_OUT (the endpoint's walk carries it
    out: each output's physical PACKET_OUT runs the pattern once, on its own copy)?"""
    from .ir import (
        OFPP_ALL, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, Exit, GroupAction, MoveField, Note, Output, SetQueue,
    )

    if type(a) is Output:
        return a.port < 0xFFFFFF00 or a.port in (OFPP_IN_PORT, OFPP_FLOOD, OFPP_ALL, OFPP_LOCAL)
    if type(a) is SetField:  # (Open vSwitch's flow keeps the VLAN tags of the frame inside: _VLAN_AFTER)
        return not (isinstance(a.field, str) and a.field.startswith("vlan_"))
    if type(a) is MoveField:
        return not any(sf.field.startswith("vlan_") for sf in (a.src, a.dst))
    return type(a) in (EncapNsh, EncapEthernet, GroupAction, Note, SetQueue, Exit)


def packet_out_problem(actions) -> tuple[int, str] | None:
    """Why OneSwitch refuses the encaps of a PACKET_OUT's list, with the OpenFlow
    BAD_ACTION code (None: the SFC pattern whole, and after it only outputs to ports,
    group calls and set_fields but on VLAN fields; a lookup, a packet-in, NORMAL, a
    truncated output or a hash there is not carried out by the endpoint for an
    encapsulated packet)."""
    from .ir import Output

    why = form_problem(actions)
    if why:
        return 3, why  # OFPBAC_BAD_EXP_TYPE, as in a flow
    acts = list(actions)
    first = next((i for i, a in enumerate(acts) if type(a) is EncapNsh), len(acts))
    bad = next((a for a in acts[first:] if not _free_after_encap(a)), None)
    if bad is not None:
        what = f"output to port {bad.port:#x}" if type(bad) is Output else type(bad).__name__
        return 0, (f"{what} after encap in a PACKET_OUT is not supported by OneSwitch: after the SFC pattern only "
                   "outputs to ports, group calls and set_fields but on VLAN fields")  # OFPBAC_BAD_TYPE
    return None
