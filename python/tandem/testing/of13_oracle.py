"""Per-feature OVS oracle for the OpenFlow 1.3 fields and actions beyond the
common set (SCTP, ARP SHA/THA, IPv6 flow label, ICMPv6, ND target/SLL/TLL,
MPLS TC/BOS, tunnel_id, set_field on metadata; push/pop MPLS, set/dec MPLS
TTL, set_nw_ttl, set_queue) and for Open vSwitch's extensions OVS 3.1 takes in
OpenFlow 1.3 (pkt_mark, registers, tcp_flags, ip_frag, nw_ttl, mpls_ttl;
load, move, push/pop, note, exit, pop_queue, sample, dec_ttl(ids), resubmit, output_reg; clone, output_trunc;
multipath, bundle, bundle_load, whose bundle rule sets run with some ports down: ``_down_ports``;
``output_reg_runtime``: output_reg of a register the rule does not fix; ``group_resubmit``:
rule sets whose groups' buckets resubmit; ``group_clone`` / ``group_check_trunc``: rule sets whose groups'
buckets hold clone / check_pkt_larger and output_trunc, which do nothing there); lookups in table 0 written into the action set, in
buckets and by output_reg of TABLE's number: ``TABLE0_WRITE_ITEMS``, ``TABLE0_BUCKET_ITEMS``,
``OUTPUT_REG_TABLE_ITEMS``).

An *item* is one of them used one way: ``match:F`` (a rule matches field F; ``reg`` is
any register), ``set:F`` (a rule has an unmasked set_field on F) or an action
name (``load`` is a masked set_field, ``stack`` a push or pop). ``focused_rules``
draws random rules (``tandem.rules.generate`` with ``OF13_FEATURES``) and keeps
those that use the item, so every rule of a focused rule set exercises it;
packets are drawn to hit those rules (``of13`` frames: SCTP, ND, flow labels …).
``run_dp`` checks the emulator's switch (dp-core) against one OVS bridge,
``run_translation`` OneSwitch's translation against the virtual switch, both
in real OVS (``dataplane_oracle`` / ``oneswitch_oracle``). Used by
``benches/of13_oracle.py`` (the full count) and tests (a bounded subset).
Both switch OVS's megaflows off (``upcall/disable-megaflows``): OVS 3.1 caches
datapath actions under wildcards that miss fields its actions rewrite whole
(e.g. ``set_mpls_ttl`` writes the full MPLS label stack entry but the megaflow
leaves ``mpls_tc`` wildcarded, so a later packet with another TC gets the first
packet's TC), which would make the reference wrong, not the code under test;
exact-match datapath flows keep OVS's OpenFlow semantics. ``run_dp`` also
purges the datapath flows after loading each rule set (``revalidator/purge``:
its one bridge is reused, so no cached flow of an earlier rule set lingers);
``run_translation`` builds fresh bridges per rule set (a purge there left
ovs-vswitchd unresponsive to ``del-br`` in one run).
State: none beyond the sandbox bridges. Cost: one OVS rule-set load and one
packet run per rule set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Sequence

from tandem.rules.generate import ALL_FEATURES, NX_FEATURES, OF13_FEATURES, random_group, random_ruleset
from tandem.rules.generate_nx import NX_MORE_FEATURES
from tandem.rules.generate_nx import conj_hints
from tandem.rules.ir import (
    OFPP_TABLE, ApplyActions, Conjunction, DecMplsTtl, Exit, FIELDS, Output, Group, MoveField, Note, OutputReg, PopMpls,
    PushMpls, Resubmit, Rule, SetField, SetMplsTtl, SetNwTtl, SetQueue, StackPop, StackPush, WriteActions,
)
from tandem.rules.ir import CheckPktLarger, DecTtl, PopQueue, Sample
from tandem.rules.ir import GroupAction
from tandem.rules.generate_nx import OUTPUT_REG_FEATURE, RESUBMIT_FEATURE
from tandem.rules.generate_controller import CONTROLLER_FEATURE
from tandem.rules.generate_controller import CONTROLLER_METER_FEATURE
from tandem.rules.generate_controller import CONTROLLER_PAUSE_FEATURE, resumable_pauses
from tandem.rules.ir import Controller as NxController
from tandem.testing.of13_fields import FIELD_ITEMS, field_items
from tandem.testing.of13_fields import feeds_item
from tandem.testing.of13_fields import TRANSLATION_ONLY_ITEMS
from tandem.testing.of13_fields import EMU_NARROWED_ITEMS
from tandem.rules.generate_clone import CLONE_FEATURE
from tandem.rules.generate_output_reg import OUTPUT_REG_RUNTIME_FEATURE
from tandem.rules.generate_bucket_resubmit import resubmit_groups
from tandem.oneswitch.output_reg_split import runtime_output_reg
from tandem.rules.generate_hash import BUNDLE_FEATURE, BUNDLE_FLOOD_FEATURE, BUNDLE_RESERVED_FEATURE, MULTIPATH_FEATURE
from tandem.rules.ir import BUNDLE_RESERVED_MEMBERS, OFPP_ALL, OFPP_FLOOD, Bundle, Multipath
from tandem.rules.generate_trunc import TRUNC_FEATURE
from tandem.rules.ir import Clone, OutputTrunc
from tandem.rules.generate_bucket_forms import form_groups
from tandem.rules.generate_table0 import TABLE0_WRITE_FEATURE
from tandem.rules.generate_bucket_resubmit import table0_groups
from tandem.rules.generate_table0 import OUTPUT_REG_TABLE_FEATURE, landing_rules
from tandem.rules.generate_clone_in_port import CLONE_IN_PORT_FEATURE
from tandem.oneswitch.clone_translate import clone_reads_in_port
from tandem.rules.generate_fin import FIN_FEATURE
from tandem.rules.nx_fin_timeout import runs_fin_timeout
from tandem.rules.generate_encap import ENCAP_FEATURE
from tandem.rules.generate_nsh import NSH_FEATURE
from tandem.rules.ir import EncapNsh
from tandem.rules.encap import form_problem
from tandem.rules import encap_set as ENCSET
from tandem.rules.generate_encap_set import WRITE_ENCAP_FEATURE
from tandem.rules import decap_set as DECSET
from tandem.rules.generate_decap_set import WRITE_DECAP_FEATURE
from tandem.rules.generate_decap import DECAP_FEATURE
from tandem.rules.ir import Decap
from tandem.rules import decap as DECAP
from tandem.rules.generate_clone_lookup import CLONE_LOOKUP_FEATURE
from tandem.rules.generate_clone_lookup import CLONE_OUTPUT_REG_FEATURE, clone_has_output_reg
from tandem.oneswitch.clone_translate import clone_lookups
from tandem.rules.generate_clone_check import CLONE_CHECK_FEATURE, clone_checks

OF13_FIELDS = ("sctp_src", "sctp_dst", "arp_sha", "arp_tha", "ipv6_flabel", "icmpv6_type", "icmpv6_code",
               "ipv6_nd_target", "ipv6_nd_sll", "ipv6_nd_tll", "mpls_tc", "mpls_bos", "tunnel_id")
_ACTIONS = {PushMpls: "push_mpls", PopMpls: "pop_mpls", SetMplsTtl: "set_mpls_ttl", DecMplsTtl: "dec_mpls_ttl",
            SetNwTtl: "set_nw_ttl", SetQueue: "set_queue"}
# Open vSwitch's extension fields (``reg`` stands for reg0..reg15) and actions
NX_FIELDS = ("pkt_mark", "reg", "tcp_flags", "ip_frag", "nw_ttl", "mpls_ttl")
_NX_ACTIONS = {MoveField: "move", StackPush: "stack", StackPop: "stack", Note: "note", Exit: "exit",
               PopQueue: "pop_queue", Sample: "sample", CheckPktLarger: "check_pkt_larger",
               Resubmit: "resubmit", OutputReg: "output_reg"}
# the Nicira actions drawn by generate_nx.NX_MORE_FEATURES (``dec_ttl_ids``: dec_ttl(ids))
NX_MORE_ITEMS = ("pop_queue", "sample", "dec_ttl_ids", "check_pkt_larger")
NX_ITEMS: tuple[str, ...] = (tuple(f"match:{f}" for f in NX_FIELDS)
                             + tuple(f"set:{f}" for f in NX_FIELDS if f not in ("tcp_flags", "ip_frag"))
                             + ("load", "move", "stack", "note", "exit", "resubmit", "output_reg") + NX_MORE_ITEMS)
# Conjunctive matching: rules with conjunction actions or a conj_id match (drawn as whole
# blocks, generate_nx.conj_block, so a rule set for it is a random rule set with them)
CONJ_ITEMS: tuple[str, ...] = ("conjunction",)
# Open vSwitch's NXM_OF_VLAN_TCI match with a partly masked priority
TCI_ITEMS: tuple[str, ...] = ("match:vlan_tci",)
# Open vSwitch's controller(reason=…,max_len=…,id=…,userdata=…): packet-ins compared with their reason and userdata
CONTROLLER_ITEMS: tuple[str, ...] = ("controller",)
# ctlr2: controller(meter_id=M), M 1..3: no oracle configures meters, and a meter that does not
# exist leaves the packet-ins unmetered (Open vSwitch and dp-core), so this compares the frames and
# packet-ins of the pass path (accepted as text, translated, run); the buckets: tests/endpoint/test_controller_meter_*
CONTROLLER_ITEMS += ("controller_meter",)
# (pause) controller(pause): translation only (the emulator backend refuses it: of13_fields.TRANSLATION_ONLY_ITEMS);
# each bridge's monitor resumes every paused packet-in (ovs-ofctl monitor … resume), so the frames after the
# pause, sent by the physical continuations, are compared too
CONTROLLER_ITEMS += ("controller_pause",)
# Open vSwitch's clone(actions) (generate_clone.py) and output(port=P,max_len=N) (generate_trunc.py)
CLONE_ITEMS: tuple[str, ...] = ("clone", "output_trunc")
ITEMS: tuple[str, ...] = (tuple(f"match:{f}" for f in OF13_FIELDS)
                          + tuple(f"set:{f}" for f in OF13_FIELDS + ("metadata",) if FIELDS[f].settable)
                          + tuple(_ACTIONS.values()) + NX_ITEMS + CONJ_ITEMS + TCI_ITEMS + CONTROLLER_ITEMS
                          + tuple(FIELD_ITEMS) + CLONE_ITEMS)
# output_reg whose number only the pipeline knows (OneSwitch splits the rule per value)
OUTPUT_REG_RUNTIME_ITEMS: tuple[str, ...] = ("output_reg_runtime",)
ITEMS += OUTPUT_REG_RUNTIME_ITEMS
# Open vSwitch's hash selection (generate_hash.py); bundle rule sets run with some ports down
HASH_ITEMS: tuple[str, ...] = ("multipath", "bundle", "bundle_load")
ITEMS += HASH_ITEMS
# bundle / bundle_load with reserved members (IN_PORT, LOCAL, NONE, …: always live)
BUNDLE_RESERVED_ITEMS: tuple[str, ...] = ("bundle_reserved", "bundle_load_reserved")
ITEMS += BUNDLE_RESERVED_ITEMS
# bundle_flood: active_backup bundles with FLOOD or ALL among their members (an internal all-group in a
# fast-failover bucket: oneswitch/hashsel_translate.py)
BUNDLE_FLOOD_ITEMS: tuple[str, ...] = ("bundle_flood",)
ITEMS += BUNDLE_FLOOD_ITEMS
# resubmit in a group bucket: rule sets whose groups all resubmit (generate_bucket_resubmit),
# a rule "uses" the item when it calls a group
GROUP_RESUBMIT_ITEMS: tuple[str, ...] = ("group_resubmit",)
ITEMS += GROUP_RESUBMIT_ITEMS
# clone, check_pkt_larger and output_trunc in group buckets (generate_bucket_forms: Open vSwitch
# runs a bucket as an action set, where they do nothing); a rule uses the item when it calls a group
GROUP_FORM_ITEMS: dict[str, tuple[str, ...]] = {"group_clone": ("clone",),
                                                "group_check_trunc": ("check_pkt_larger", "output_trunc")}
ITEMS += tuple(GROUP_FORM_ITEMS)
# table-0 lookups written into the action set (output:TABLE; resubmit(,0), resubmit:PORT) and in
# group buckets (rule sets whose groups all look table 0 up: a rule uses the item when it calls one)
TABLE0_WRITE_ITEMS: tuple[str, ...] = ("write_output_table", "write_resubmit0")
TABLE0_BUCKET_ITEMS: tuple[str, ...] = ("bucket_output_table", "bucket_resubmit0")
ITEMS += TABLE0_WRITE_ITEMS + TABLE0_BUCKET_ITEMS
# output_reg of a register loaded with TABLE's number (0xfff9): the same lookup in table 0
OUTPUT_REG_TABLE_ITEMS: tuple[str, ...] = ("output_reg_table",)
ITEMS += OUTPUT_REG_TABLE_ITEMS
# a clone whose move reads in_port (generate_clone_in_port: OneSwitch pins it per copy)
CLONE_IN_PORT_ITEMS: tuple[str, ...] = ("clone_in_port",)
ITEMS += CLONE_IN_PORT_ITEMS
# encap: encap(nsh(md_type=1)), NSH set_fields, encap(ethernet) (generate_encap.py); with the NSH
# fields drawn too, so later tables match and write the NSH header it pushed; encap_trunc: rules with
# output(port=P,max_len=N) beside it (OVS commits at encap(nsh), encap(ethernet)'s header stays pending)
ENCAP_ITEMS: tuple[str, ...] = ("encap", "encap_trunc")
ITEMS += ENCAP_ITEMS
# decap: the pair decap(),decap() on NSH over Ethernet (generate_decap.py; NSH frames with an Ethernet frame inside)
DECAP_ITEMS: tuple[str, ...] = ("decap",)
ITEMS += DECAP_ITEMS
# clone_resubmit: a clone holding a lookup (generate_clone_lookup: resubmit, output:TABLE)
CLONE_LOOKUP_ITEMS: tuple[str, ...] = ("clone_resubmit",)
ITEMS += CLONE_LOOKUP_ITEMS
# clone_output_reg: a clone holding an output_reg (generate_clone_lookup.output_reg_clone)
ITEMS += ("clone_output_reg",)
# dec_nsh_ttl in group buckets (generate_bucket_forms, form "dec_nsh_ttl": a bucket runs it as the action set
# does); write:dec_nsh_ttl (of13_fields.FIELD_ITEMS) writes it into the action set. Both draw the NSH fields
NSH_TTL_ITEMS: tuple[str, ...] = ("write:dec_nsh_ttl", "bucket:dec_nsh_ttl")
GROUP_FORM_ITEMS["bucket:dec_nsh_ttl"] = ("dec_nsh_ttl",)
ITEMS += ("bucket:dec_nsh_ttl",)
# write:encap: encap(nsh) ending the apply-actions, encap(ethernet) written into the action set
# (generate_encap_set.py; rules/encap_set.py); drawn without groups, as write:dec_nsh_ttl
ENCAP_SET_ITEMS: tuple[str, ...] = ("write:encap",)
ITEMS += ENCAP_SET_ITEMS
# write:decap: decap() ending the apply-actions, decap() written into the action set
# (generate_decap_set.py; rules/decap_set.py); drawn without groups, as write:encap
DECAP_SET_ITEMS: tuple[str, ...] = ("write:decap",)
ITEMS += DECAP_SET_ITEMS
FEATURES = ALL_FEATURES | OF13_FEATURES | NX_FEATURES
# Tables per rule set, by item (default 1-4): resubmits mostly go to a later table
# (with one table, every one would loop into Open vSwitch's limits).
_TABLES = {"resubmit": (2, 3, 4, 4)}
_TABLES["group_resubmit"] = (2, 3, 4, 4)
_OPT_IN = {"resubmit": RESUBMIT_FEATURE, "output_reg": OUTPUT_REG_FEATURE}
_OPT_IN["clone"] = CLONE_FEATURE
_OPT_IN["output_reg_runtime"] = OUTPUT_REG_RUNTIME_FEATURE
_OPT_IN["output_trunc"] = TRUNC_FEATURE
_OPT_IN.update(dict.fromkeys(TABLE0_WRITE_ITEMS, TABLE0_WRITE_FEATURE))
_OPT_IN["output_reg_table"] = OUTPUT_REG_TABLE_FEATURE
_OPT_IN["clone_in_port"] = CLONE_IN_PORT_FEATURE
_OPT_IN["encap"] = ENCAP_FEATURE
_OPT_IN["clone_resubmit"] = CLONE_LOOKUP_FEATURE  # (clone_resubmit)
_TABLES["resubmit_cross"] = _TABLES["group_resubmit_cross"] = (2, 3, 4, 4)  # (cross_port_oracle.py)
_OPT_IN["resubmit_cross"] = RESUBMIT_FEATURE
_TABLES["clone_resubmit"] = (2, 3, 4, 4)
_OPT_IN["clone_output_reg"] = CLONE_OUTPUT_REG_FEATURE  # (clone_output_reg)
# Protocols switched off while drawing rules for an item, so rules that use it are
# not too rare (everything else stays on).
_NARROW = {"sctp": {"arp", "mpls", "l4", "icmp", "icmpv6"}, "arp": {"ipv4", "ipv6", "mpls"},
           "ipv6_flabel": {"ipv4", "arp", "mpls"}, "icmpv6": {"ipv4", "arp", "mpls", "l4", "sctp"},
           "ipv6_nd": {"ipv4", "arp", "mpls", "l4", "sctp"}, "mpls": {"ipv4", "ipv6", "arp"},
           "tcp_flags": {"arp", "mpls", "icmp", "icmpv6", "sctp"}, "ip_frag": {"arp", "mpls"}, "nw_ttl": {"arp", "mpls"}}
# fin_timeout (issue 15): in rules that match tcp (generate_fin.py), so TCP matches drawn more often
FIN_ITEMS: tuple[str, ...] = ("fin_timeout",)
ITEMS += FIN_ITEMS
_OPT_IN["fin_timeout"] = FIN_FEATURE
_NARROW["fin_timeout"] = {"arp", "mpls", "icmp", "icmpv6", "sctp"}
# clone_check: a clone holding check_pkt_larger (generate_clone_check: the rest of the clone forks there)
CLONE_CHECK_ITEMS: tuple[str, ...] = ("clone_check",)
ITEMS += CLONE_CHECK_ITEMS
# resubmits with another in_port, from rules and group buckets (testing/cross_port_oracle.py: the
# translation homes pipelines on the host first, as the endpoint does)
from tandem.testing.cross_port_oracle import CROSS_ITEMS, cross_groups_for, cross_items, cross_translation, homed_topology, keep_for, loop_free  # noqa: E402
ITEMS += CROSS_ITEMS
_OPT_IN["clone_check"] = CLONE_CHECK_FEATURE
_TABLES["clone_check"] = (2, 3, 4, 4)


def _n_groups(rng: random.Random, item: str) -> int:
    """Groups per translation rule set: none with resubmits. Open vSwitch 3.1 aborts
    (``ofproto-dpif-rid.c:235: assertion state->action_set_len <= state->ofpacts_len
    failed in recirc_alloc_id__``) when a select group, which it runs by recirculating
    (dp_hash), is called inside nested resubmits while the action set holds actions —
    on the physical bridges of a translation (whose action set holds the flow id's
    set_field too) where the virtual bridge with the same rules runs on; seen on
    ``resubmit`` rule sets and ``output_reg_table``'s (its vswitchd stopped answering on
    one), so those are drawn without groups (docs/oneswitch.md §7); and ``write:dec_nsh_ttl``'s,
    whose every rule writes the action set (a select group called by one aborted the vswitchd
    of the merged code's bounded test, seed 4)."""
    if item in ENCAP_SET_ITEMS:  # (encap_set)
        return 0
    if item in DECAP_SET_ITEMS:  # (decap_set)
        return 0
    no_groups = ("resubmit", "output_reg_table", "clone_output_reg", "write:dec_nsh_ttl") + CLONE_LOOKUP_ITEMS
    # (long:tun_metadata: that assertion aborted vswitchd on a 100-rule set, seed 0, where the action
    # set may hold 124-byte set_fields; drawn without groups it did not)
    no_groups += EMU_NARROWED_ITEMS
    no_groups += CLONE_CHECK_ITEMS  # (clone_check: its clones resubmit too)
    no_groups += ("resubmit_cross",)  # (as resubmit)
    no_groups += ("nsh_ttl_loads",)  # (nshload: that assertion aborted the virtual bridge's vswitchd, seed 4, 75-rule sets)
    no_groups += ("nsh_learn_result", "nsh_check_larger")  # (nshdst: that assertion aborted the virtual bridge's vswitchd, seed 0, 100-rule sets)
    return 0 if item in no_groups else rng.choice((0, 2))


_MARK_FEATURES = frozenset({"nx_pkt_mark", "nx_load", "nx_move", "nx_stack"})


def _translation_features(item: str, s: int) -> frozenset[str]:
    """``item_features``, but every other ``resubmit`` rule set without the packet mark
    (nor the loads, moves and pops that may write it):
    a lookup in table 0 from a rule is translated only while the virtual rules leave
    the mark alone (docs/oneswitch.md section 7), so those sets are where it is met."""
    table0 = item in ("resubmit", "resubmit_cross") or item in TABLE0_WRITE_ITEMS + TABLE0_BUCKET_ITEMS + OUTPUT_REG_TABLE_ITEMS
    table0 = table0 or item in CLONE_LOOKUP_ITEMS or item == "clone_output_reg"
    table0 = table0 or item in CLONE_CHECK_ITEMS
    if item in CLONE_CHECK_ITEMS:  # (the stack, which dp-core's rule sets leave out: item_features)
        return (item_features(item) | {"nx_stack"}) - (_MARK_FEATURES if s % 2 == 0 else set())
    return item_features(item) - (_MARK_FEATURES if table0 and s % 2 == 0 else set())


def item_features(item: str) -> frozenset[str]:
    """The generator features used to draw rules for ``item``. Without
    write_actions: OVS 3.1 itself aborts (``ofproto-dpif-rid.c:235: assertion
    state->action_set_len <= state->ofpacts_len failed in recirc_alloc_id__``)
    when it recirculates a packet after pop_mpls while an action set is pending,
    so such rule sets cannot be run against it; write_actions is covered by the
    common oracles (dataplane_oracle, oneswitch_oracle)."""
    name = item.split(":", 1)[-1]
    off = next((v for k, v in _NARROW.items() if name.startswith(k)), set())
    if item in NSH_TTL_ITEMS:  # (NSH rules and frames; groups for the buckets' item)
        return FEATURES - {"mpls_actions"} | {NSH_FEATURE} | {FIELD_ITEMS.get(item, "groups")}
    if item in NX_MORE_ITEMS:
        return (FEATURES | NX_MORE_FEATURES) - off - {"mpls_actions"}
    if item in DECAP_ITEMS:  # (and the NSH fields, so other rules match NSH too: generate_decap.py)
        return FEATURES - {"mpls_actions"} | {DECAP_FEATURE, NSH_FEATURE}
    if item in DECAP_SET_ITEMS:  # (and the pair and the NSH fields: generate_decap_set.py)
        return FEATURES - {"mpls_actions"} | {DECAP_FEATURE, NSH_FEATURE, WRITE_DECAP_FEATURE}
    if item in ENCAP_SET_ITEMS:  # (and the whole pattern and the NSH fields: generate_encap_set.py)
        return FEATURES - {"mpls_actions"} | {ENCAP_FEATURE, NSH_FEATURE, WRITE_ENCAP_FEATURE}
    if item in ENCAP_ITEMS:  # (and the NSH fields: generate_encap.py)
        return FEATURES - {"mpls_actions"} | {ENCAP_FEATURE, NSH_FEATURE} | ({TRUNC_FEATURE} if item == "encap_trunc" else set())
    if item in CLONE_CHECK_ITEMS:  # (without push/pop: dp-core does not model the stack across a check's branches)
        return FEATURES - off - {"mpls_actions", "nx_stack"} | {_OPT_IN[item]}
    if item in _OPT_IN:  # (opt-in: the other items' rule sets stay as they were)
        return FEATURES - off - {"mpls_actions"} | {_OPT_IN[item]}
    if item in NX_ITEMS:  # with write_actions (loads and moves go there too), without the MPLS actions
        return FEATURES - off - {"mpls_actions"}
    if item in CONJ_ITEMS:
        return (FEATURES | {"nx_conj"}) - {"mpls_actions"}
    if item == "controller_pause":  # (without write_actions: random rule sets with write_actions and pauses, resumed,
        # abort Open vSwitch 3.1 at ofproto-dpif-rid.c:235, measured; and a pause in a rule with write_actions is
        # unresumable: generate_controller.resumable_pauses, tests/endpoint/test_pause_vs_ovs.py)
        return (FEATURES | {CONTROLLER_FEATURE, CONTROLLER_PAUSE_FEATURE}) - {"mpls_actions", "write_actions"}
    if item in CONTROLLER_ITEMS:
        return (FEATURES | {CONTROLLER_FEATURE} | ({CONTROLLER_METER_FEATURE} if item == "controller_meter" else set())) - {"mpls_actions"}
    if item == "nsh_check_larger":  # (NSH rules and frames, and check_pkt_larger into NSH bits the match fixes)
        return (FEATURES | {NSH_FEATURE, FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item == "nsh_learn_result":  # (NSH rules and frames, and learn's result_dst in NSH fields)
        return (FEATURES | {NSH_FEATURE, FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item == "nsh_output_reg":  # (NSH rules and frames, and output_reg of NSH fields)
        return (FEATURES | {NSH_FEATURE, FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item == "nsh_ttl_loads":  # (NSH rules and frames, and loads into nsh_ttl past bit 5)
        return (FEATURES | {NSH_FEATURE, FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item == "nsh_ttl_operands":  # (NSH rules and frames, and moves, pushes and pops of nsh_ttl)
        return (FEATURES | {NSH_FEATURE, FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item == "nsh_operands":  # (NSH rules and frames, and moves, pushes and pops of their fields)
        return (FEATURES | {NSH_FEATURE, FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item == "match:nsh_context":  # (NSH rules and frames, contexts matched without nsh_mdtype=1)
        return (FEATURES | {NSH_FEATURE, FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item in FIELD_ITEMS:  # (generate_fields.py)
        return (FEATURES | {FIELD_ITEMS[item]}) - off - {"mpls_actions"}
    if item in BUNDLE_FLOOD_ITEMS:
        return FEATURES - {"mpls_actions"} | {BUNDLE_FEATURE, BUNDLE_FLOOD_FEATURE}
    if item in HASH_ITEMS or item in BUNDLE_RESERVED_ITEMS:
        return FEATURES - {"mpls_actions"} | {MULTIPATH_FEATURE if item == "multipath" else BUNDLE_FEATURE} \
            | ({BUNDLE_RESERVED_FEATURE} if item in BUNDLE_RESERVED_ITEMS else set())
    if item in GROUP_RESUBMIT_ITEMS or item in GROUP_FORM_ITEMS:  # (groups on: the rules call them)
        return FEATURES - {"mpls_actions"} | {"groups"}
    if item in TABLE0_BUCKET_ITEMS:  # (as group_resubmit)
        return FEATURES - {"mpls_actions"} | {"groups"}
    if item == "bundle_host":  # (as bundle: cross_port_oracle.py keeps the ones whose members are the host's)
        return item_features("bundle")
    if item == "group_resubmit_cross":  # (as group_resubmit)
        return FEATURES - {"mpls_actions"} | {"groups"}
    if item in TCI_ITEMS:  # (the tag fields drawn more often: see _NARROW)
        return (FEATURES | {"nx_vlan_tci"}) - off - {"mpls_actions"}
    return FEATURES - off - {"write_actions"}


def rule_items(rule: Rule) -> set[str]:
    """The items ``rule`` uses."""
    out = {f"match:{_nx_name(k)}" for k, _ in rule.match if k in OF13_FIELDS or _nx_name(k) in NX_FIELDS}
    if "conj_id" in rule.match:
        out.add("conjunction")
    pcp = rule.match.get("vlan_pcp")
    if pcp is not None and pcp.mask is not None:
        out.add("match:vlan_tci")
    out |= field_items(rule)
    for ins in rule.instructions:
        if isinstance(ins, (ApplyActions, WriteActions)):
            for a in ins.actions:
                if isinstance(a, SetField):
                    if a.mask is not None:
                        out.add("load")
                    elif a.field in OF13_FIELDS or a.field == "metadata" or _nx_name(a.field) in NX_FIELDS:
                        out.add(f"set:{_nx_name(a.field)}")
                elif type(a) in _ACTIONS:
                    out.add(_ACTIONS[type(a)])
                elif type(a) in _NX_ACTIONS:
                    out.add(_NX_ACTIONS[type(a)])
                elif type(a) is DecTtl and a.ids is not None:
                    out.add("dec_ttl_ids")
                elif type(a) is Conjunction:
                    out.add("conjunction")
                elif type(a) is NxController:
                    out.add("controller")
                    if a.meter_id is not None:
                        out.add("controller_meter")
                    if a.pause:
                        out.add("controller_pause")
                elif type(a) is Multipath:
                    out.add("multipath")
                elif type(a) is Bundle:
                    out.add("bundle" if a.dst is None else "bundle_load")
                    if any(m in BUNDLE_RESERVED_MEMBERS for m in a.members):
                        out.add("bundle_reserved" if a.dst is None else "bundle_load_reserved")
                    if a.dst is None and any(m in (OFPP_FLOOD, OFPP_ALL) for m in a.members):
                        out.add("bundle_flood")
                elif isinstance(a, Output) and a.port == OFPP_TABLE:  # a lookup in table 0, as resubmit(,0)
                    out.add("resubmit")
                elif type(a) is Clone:
                    out.add("clone")
                    if clone_reads_in_port(a):
                        out.add("clone_in_port")
                    if clone_lookups(a):
                        out.add("clone_resubmit")
                    if clone_has_output_reg(a):
                        out.add("clone_output_reg")
                    if clone_checks(a):
                        out.add("clone_check")
                elif type(a) is OutputTrunc:
                    out.add("output_trunc")
                elif type(a) is EncapNsh and form_problem(ins.actions) is None:  # (not a form the IR refuses)
                    out.add("encap")
                elif type(a) is Decap and DECAP.form_problem(ins.actions) is None:  # (decap.py)
                    out.add("decap")
    if "encap" in out and "output_trunc" in out:
        out.add("encap_trunc")
    if any(ENCSET.written_encap(ins.actions) for ins in rule.instructions if isinstance(ins, WriteActions)):
        out.add("write:encap")  # (encap_set.py)
    if any(DECSET.written_decap(ins.actions) for ins in rule.instructions if isinstance(ins, WriteActions)):
        out.add("write:decap")  # (decap_set.py)
    if "output_reg" in out and runtime_output_reg(rule) >= 0:
        out.add("output_reg_runtime")
    if any(isinstance(a, GroupAction) for ins in rule.instructions if isinstance(ins, (ApplyActions, WriteActions))
           for a in ins.actions):
        out.add("group_resubmit")
        out.update(GROUP_FORM_ITEMS)
        out.update(TABLE0_BUCKET_ITEMS)
    for ins in rule.instructions:
        if isinstance(ins, WriteActions):
            for a in ins.actions:
                if isinstance(a, Output) and a.port == OFPP_TABLE:
                    out.add("write_output_table")
                elif isinstance(a, Resubmit) and a.table in (0, 255):  # (the action set runs as table 0)
                    out.add("write_resubmit0")
        if isinstance(ins, ApplyActions):
            for i, a in enumerate(ins.actions):
                load = ins.actions[i - 1] if i else None
                if isinstance(a, OutputReg) and isinstance(load, SetField) and a.src.n_bits == 16 and (
                        load.field, load.value, load.mask) == (a.src.field, 0xFFF9 << a.src.ofs, 0xFFFF << a.src.ofs):
                    out.add("output_reg_table")
    if runs_fin_timeout(rule):  # (also inside a clone)
        out.add("fin_timeout")
    out |= cross_items(rule)  # (resubmit_cross, group_resubmit_cross)
    return out


def _nx_name(field: object) -> object:
    return "reg" if isinstance(field, str) and field.startswith("reg") else field


def focused_rules(rng: random.Random, item: str, n: int, ports: Sequence[int], tables: int,
                  features: frozenset[str] | None = None, groups: Sequence[int] = (),
                  max_draws: int = 2_000_000) -> list[Rule]:
    """``n`` random rules that all use ``item`` (priorities distinct per table)."""
    if item not in ITEMS:
        raise ValueError(f"unknown item {item!r}; known: {', '.join(ITEMS)}")
    features = item_features(item) if features is None else features
    if (item in GROUP_RESUBMIT_ITEMS or item in GROUP_FORM_ITEMS or item in TABLE0_BUCKET_ITEMS or item == "group_resubmit_cross") and not groups:  # (a rule uses it by calling a group)
        groups = (1,)
    if item in CONJ_ITEMS:  # whole rule sets: a conjunction's flows share a priority and need each other
        for _ in range(1000):  # (a small set may draw no block: draw again until one uses the item)
            rules = random_ruleset(rng, n, ports, tables, features, groups=groups)
            if any(item in rule_items(r) for r in rules):
                return rules
        raise RuntimeError(f"{item}: no rule set of {n} rules in 1000 draws uses it")
    out: list[Rule] = []
    seen: set[tuple[int, int]] = set()
    draws = 0
    while len(out) < n:
        batch = random_ruleset(rng, 400, ports, tables, features, groups=groups)
        draws += len(batch)
        for r in batch:
            if (item in rule_items(r) or feeds_item(item, r)) and (r.table, r.priority) not in seen:
                seen.add((r.table, r.priority))
                out.append(r)
                if len(out) == n:
                    break
        if draws > max_draws:
            raise RuntimeError(f"{item}: only {len(out)} of {n} rules in {draws} draws")
    return out


@dataclass
class ItemResult:
    rules: int = 0
    item_rules: int = 0  # of ``rules``, those that use the item (all but for CONJ_ITEMS)
    rule_sets: int = 0
    packets: int = 0
    frames: int = 0
    mismatches: list[str] = field(default_factory=list)
    packet_ins: int = 0  # packet-ins compared (translation: the reference bridge's)
    shrunk: int = 0  # rules whose timeouts a FIN shrank, compared with OVS's (dp-core oracle, fin_timeout)


def run_dp(sb, items: Sequence[str], per_item: int, seed: int = 0, set_size: int = 100, packets_per_set: int = 100,
           log=None) -> dict[str, ItemResult]:
    """dp-core (``Switch``) vs one OVS bridge, ``per_item`` focused rules per item."""
    from tandem.rules.packets import random_packet
    from tandem.testing.dataplane_oracle import ORACLE_GROUP_TYPES, OvsOracle

    sb.appctl("upcall/disable-megaflows")
    _tlv_map(sb, items)
    oracle = OvsOracle(sb)
    oracle.purge = True
    oracle.dp_view = _tlv_view(items)  # (tun_metadata values longer than the option: cut as the endpoint cuts them)
    monitors: list = []

    def packet_ins(oracle):
        from tandem.testing.packet_in_oracle import PacketInOracle
        if not monitors:
            monitors.append(PacketInOracle(oracle))
        return monitors[0]
    res: dict[str, ItemResult] = {}
    for i, item in enumerate(items):
        r = res[item] = ItemResult()
        s = 0
        if item in TRANSLATION_ONLY_ITEMS:  # (of13_fields.py: what only the OVS backend takes)
            if log:
                log(f"dp  {i + 1:2}/{len(items)} {item:22} not run: the emulator backend refuses it")
            continue
        while r.item_rules < per_item:
            rng = random.Random(f"dp:{item}:{seed}:{s}")
            s += 1
            tables = rng.choice(_TABLES.get(item, (1, 2, 3, 4)))
            groups: list[Group] = []
            while len(groups) < rng.randint(0, 3):
                g = random_group(rng, len(groups) + 1, oracle.ports)
                if g.type in ORACLE_GROUP_TYPES:
                    groups.append(g)
            if item in GROUP_RESUBMIT_ITEMS:
                groups = resubmit_groups(rng, rng.randint(1, 3), oracle.ports, tables)
            if item in GROUP_FORM_ITEMS:
                groups = form_groups(rng, rng.randint(1, 3), oracle.ports, tables, GROUP_FORM_ITEMS[item])
            if item in TABLE0_BUCKET_ITEMS:
                groups = table0_groups(rng, rng.randint(1, 3), oracle.ports, item.split("_", 1)[1])
            groups = cross_groups_for(item, rng, oracle.ports, tables) or groups  # (group_resubmit_cross)
            rules = focused_rules(rng, item, min(set_size, per_item - r.item_rules), oracle.ports, tables,
                                  groups=[g.group_id for g in groups])
            if item in EMU_NARROWED_ITEMS:  # (long:tun_metadata: matched as the emulator backend matches)
                from tandem.rules.generate_tun_metadata import emu_matches
                rules = emu_matches(rules)
            if item in TABLE0_BUCKET_ITEMS + OUTPUT_REG_TABLE_ITEMS:  # (rules their lookups find: no loop)
                rules += landing_rules(rng, rules, groups, oracle.ports)
            hints = rules + conj_hints(rng, rules) if item in CONJ_ITEMS else rules  # (frames completing them too)
            packets = [random_packet(rng, hints, oracle.ports, of13=True) for _ in range(packets_per_set)]
            down = _down_ports(rng, item, oracle.ports)
            out = oracle.compare(rules, groups, packets, tables, down=down, timeouts=item in FIN_ITEMS)
            r.shrunk += out.timeouts_shrunk
            if item in CONTROLLER_ITEMS:  # what the controller receives, too (testing/packet_in_oracle.py)
                pins, bad = packet_ins(oracle).compare(rules, groups, packets, tables)
                r.packet_ins += pins
                r.mismatches += [f"{item} set {s - 1}: {m}" for m in bad]
            r.rules += len(rules)
            r.item_rules += sum(item in rule_items(x) for x in rules)
            r.rule_sets += 1
            r.packets += out.packets
            r.frames += out.frames_compared
            r.mismatches += [f"{item} set {s - 1}: {m}" for m in out.mismatches]
        if log:
            log(f"dp  {i + 1:2}/{len(items)} {item:22} {r.rules} rules ({r.item_rules} use it), {r.packets} packets, {r.frames} frames, "
                f"{r.packet_ins} packet-ins, {len(r.mismatches)} mismatches"
                + (f", {r.shrunk} rules' shrunk timeouts compared" if item in FIN_ITEMS else ""))
    for m in monitors:
        m.close()
    return res


def _down_ports(rng: random.Random, item: str, ports: Sequence[int]) -> list[int]:
    """Ports to set down for a rule set: for bundle items, none, one, or several (not
    all, so packets still enter somewhere), drawn per rule set."""
    if item not in ("bundle", "bundle_load", "bundle_host", *BUNDLE_RESERVED_ITEMS, *BUNDLE_FLOOD_ITEMS):
        return []
    return rng.sample(list(ports), rng.choice((0, 1, 1, 2, len(ports) - 1)))


def run_translation(sb, topos: dict, items: Sequence[str], per_item: int, seed: int = 0, set_size: int = 100,
                    per_port: int = 20, log=None) -> dict[str, ItemResult]:
    """OneSwitch translation vs the virtual switch (both in OVS), ``per_item``
    focused rules per item, rule sets spread over the topologies in ``topos``."""
    from tandem.oneswitch.translate import translate
    from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets

    sb.appctl("upcall/disable-megaflows")
    _tlv_map(sb, items)
    names = sorted(topos)
    res: dict[str, ItemResult] = {}
    for i, item in enumerate(items):
        r = res[item] = ItemResult()
        s = 0
        while r.item_rules < per_item:
            rng = random.Random(f"tr:{item}:{seed}:{s}")
            topo = topos[names[s % len(names)]]
            s += 1
            tables = rng.choice(_TABLES.get(item, (1, 2, 3, 4)))
            n = min(set_size, per_item - r.item_rules)
            if item in CROSS_ITEMS:  # (homed first, released after: cross_port_oracle.py)
                _cross_set(sb, topo, item, rng, n, tables, s, per_port, r)
                continue
            rules, groups = oracle_ruleset(rng, n, topo, tables=tables, n_groups=_n_groups(rng, item),
                                           features=_translation_features(item, s),
                                           groups=resubmit_groups(rng, 2, sorted(topo.port_map), tables)
                                           if item in GROUP_RESUBMIT_ITEMS else
                                           form_groups(rng, 2, sorted(topo.port_map), tables, GROUP_FORM_ITEMS[item])
                                           if item in GROUP_FORM_ITEMS else
                                           table0_groups(rng, 2, sorted(topo.port_map), item.split("_", 1)[1])
                                           if item in TABLE0_BUCKET_ITEMS else None,
                                           keep=None if item in CONJ_ITEMS else lambda rule: item in rule_items(rule) or feeds_item(item, rule))
            down = _down_ports(rng, item, sorted(topo.port_map))
            if item in TABLE0_BUCKET_ITEMS + OUTPUT_REG_TABLE_ITEMS:  # (rules their lookups find: no loop)
                rules += landing_rules(rng, rules, groups, sorted(topo.port_map))
            if item == "controller_pause":  # (no pause in a rule with write_actions: generate_controller.py)
                rules = [resumable_pauses(x) for x in rules]
            tr = translate(_tlv_view(items)(rules), topo, groups, down=down)  # (tun_metadata: as the endpoint holds them)
            with Oracle(sb, topo, packet_in=True, resume=item == "controller_pause") as o:
                o.nx_packet_ins = item in CONTROLLER_ITEMS
                o.set_down(down)
                o.load_virtual(rules, groups)
                o.load_translation(tr)
                hints = rules + conj_hints(rng, rules) if item in CONJ_ITEMS else rules
                rep = o.compare(random_packets(rng, hints, topo, per_port=per_port, of13=True))
                if item in FIN_ITEMS:  # (the virtual rules' timeouts: testing/fin_oracle.py)
                    from tandem.testing.fin_oracle import translation_timeout_mismatches
                    bad, shrunk = translation_timeout_mismatches(sb, o.ref, o.bridge, tr, rules)
                    r.mismatches += [f"{item} set {s - 1}: {m}" for m in bad]
                    r.shrunk += shrunk
            r.rules += len(rules)
            r.item_rules += sum(item in rule_items(x) for x in rules)
            r.rule_sets += 1
            r.packets += rep.packets
            r.frames += rep.outputs
            r.packet_ins += rep.packet_ins
            r.mismatches += [f"{item} set {s - 1}: {m}" for m in rep.mismatches]
            r.mismatches += [f"{item} set {s - 1}: packet-in {m}" for m in rep.packet_in_mismatches]
        if log:
            log(f"tr  {i + 1:2}/{len(items)} {item:22} {r.rules} rules ({r.item_rules} use it), {r.packets} packets, {r.frames} frames, "
                f"{r.packet_ins} packet-ins, {len(r.mismatches)} mismatches"
                + (f", {r.shrunk} rules' shrunk timeouts compared" if item in FIN_ITEMS else ""))
    return res


def _cross_set(sb, topo, item: str, rng: random.Random, n: int, tables: int, s: int, per_port: int,
               r: ItemResult) -> None:
    """One rule set of a ``CROSS_ITEMS`` item through ``cross_translation``, added to ``r``
    (the comparison after the releases counted as more packets and frames)."""
    from tandem.testing.oneswitch_oracle import oracle_ruleset

    groups = cross_groups_for(item, rng, sorted(topo.port_map), tables)
    rules, groups = oracle_ruleset(rng, n, homed_topology(topo), tables=tables, n_groups=0, groups=groups,
                                   features=_translation_features(item, s),
                                   keep=lambda rule: (item in rule_items(rule) or feeds_item(item, rule))
                                   and loop_free(rule, groups or ()) and keep_for(item, topo, rule))
    down = _down_ports(rng, item, sorted(topo.port_map))
    before, after, left, errors = cross_translation(sb, topo, item, rng, rules, groups, per_port, down)
    r.mismatches += [f"{item} set {s - 1}: {e}" for e in errors]
    if left:
        r.mismatches.append(f"{item} set {s - 1}: {left} ports still extended after the releases")
    for when, rep in (("", before), ("after the releases: ", after)):
        if rep is not None:
            r.packets += rep.packets
            r.frames += rep.outputs
            r.packet_ins += rep.packet_ins
            r.mismatches += [f"{item} set {s - 1}: {when}{m}" for m in rep.mismatches]
            r.mismatches += [f"{item} set {s - 1}: {when}packet-in {m}" for m in rep.packet_in_mismatches]
    r.rules += len(rules)
    r.item_rules += sum(item in rule_items(x) for x in rules)
    r.rule_sets += 1


def _tlv_view(items: Sequence[str]):
    """What the endpoint makes of the items' rules (values longer than an option of
    ORACLE_TLV_MAP cut as Open vSwitch cuts them: tun_metadata.fit), or ``list``."""
    from tandem.rules.generate_tun_metadata import oracle_fit
    from tandem.testing.of13_fields import TUN_METADATA_ITEMS

    return oracle_fit if set(items) & set(TUN_METADATA_ITEMS) else list


def _tlv_map(sb, items: Sequence[str]) -> None:
    """The tun_metadata items' rules name options of ORACLE_TLV_MAP (long:tun_metadata's, of
    LONG_TLV_MAP): every bridge made from
    now on maps them (as OneSwitch relays the virtual switch's map to every physical one)."""
    from tandem.rules.generate_tun_metadata import LONG_TLV_MAP, ORACLE_TLV_MAP
    from tandem.rules.tun_metadata import tlv_map_text
    from tandem.testing.of13_fields import TUN_METADATA_ITEMS

    if set(items) & set(TUN_METADATA_ITEMS):
        sb.tlv_map = tlv_map_text(ORACLE_TLV_MAP | LONG_TLV_MAP)
