"""of13_oracle items for the Open vSwitch fields ``rules/generate_fields.py`` draws:
item -> generator feature, and which of them a rule uses. Pure."""

from __future__ import annotations

from tandem.rules.generate_fields import RECIRC_ID_FEATURE, TCI_UNTAGGED_FEATURE, TUNNEL_FEATURE
from tandem.rules.generate_nsh import NSH_FEATURE, NSH_OPERAND_FEATURE
from tandem.rules.generate_nsh_ttl_operand import NSH_TTL_OPERAND_FEATURE
from tandem.rules.generate_nsh_ttl_load import NSH_TTL_LOAD_FEATURE, is_nsh_ttl_load
from tandem.rules.generate_nsh_output_reg import NSH_OUTPUT_REG_FEATURE
from tandem.rules.generate_nsh_learn import NSH_LEARN_RESULT_FEATURE
from tandem.rules.generate_nsh_check_larger import NSH_CHECK_LARGER_FEATURE
from tandem.rules.ir import CheckPktLarger, Clone
from tandem.rules.ir import Learn
from tandem.rules.generate_nsh_ttl import WRITE_NSH_TTL_FEATURE
from tandem.rules.generate_actset import ACTSET_FEATURE
from tandem.rules.generate_nsh_context import NSH_CONTEXT_FEATURE, uses_context_without_md1
from tandem.rules.ir import NSH_FIELDS, DecNshTtl
from tandem.rules.ir import OutputReg
from tandem.rules.ir import OFPVID_PRESENT, TUNNEL_FIELDS, ApplyActions, MoveField, Rule, SetField, WriteActions, tci_match
from tandem.rules.generate_tun_metadata import TUN_METADATA_FEATURE, TUN_METADATA_WIDE_FEATURE, is_wide
from tandem.rules.generate_tun_metadata import LONG_TLV_MAP, TUN_METADATA_LONG_FEATURE
from tandem.rules.generate_tun_metadata import TUN_METADATA_ANY_FEATURE
from tandem.rules.tun_metadata import is_any
from tandem.rules.ir import TUN_METADATA_FIELDS, DeleteField, StackPop, StackPush

# item -> the generator feature that draws it
FIELD_ITEMS: dict[str, str] = {"match:vlan_tci_untagged": TCI_UNTAGGED_FEATURE, "match:recirc_id": RECIRC_ID_FEATURE,
                               "match:tun": TUNNEL_FEATURE, "set:tun": TUNNEL_FEATURE}
# tun_flags: rules that match it, and rules that write it (set_field, load) or move into or out of it
FIELD_ITEMS.update({"match:tun_flags": TUNNEL_FEATURE, "set:tun_flags": TUNNEL_FEATURE})
# actset_output: rules that match it (rules of earlier tables write outputs into the action set)
FIELD_ITEMS["match:actset_output"] = ACTSET_FEATURE


# the NSH fields (generate_nsh.py): matched, and written by set_field
FIELD_ITEMS.update({"match:nsh": NSH_FEATURE, "set:nsh": NSH_FEATURE, "dec_nsh_ttl": NSH_FEATURE})
# the NSH fields as move, push and pop operands (generate_nsh.nsh_operand_actions; with NSH_FEATURE: of13_oracle)
FIELD_ITEMS["nsh_operands"] = NSH_OPERAND_FEATURE
# nsh_ttl as a move, push and pop operand (generate_nsh_ttl_operand.py; with NSH_FEATURE: of13_oracle)
FIELD_ITEMS["nsh_ttl_operands"] = NSH_TTL_OPERAND_FEATURE
# dec_nsh_ttl written into the action set (generate_nsh_ttl.py; its rule sets draw the NSH fields too)
FIELD_ITEMS["write:dec_nsh_ttl"] = WRITE_NSH_TTL_FEATURE
# nshctx: a context matched without nsh_mdtype=1 (generate_nsh_context.py; with NSH_FEATURE: of13_oracle)
FIELD_ITEMS["match:nsh_context"] = NSH_CONTEXT_FEATURE
# loads into nsh_ttl past bit 5 or into bits 0..5 together (generate_nsh_ttl_load.py; with NSH_FEATURE: of13_oracle)
FIELD_ITEMS["nsh_ttl_loads"] = NSH_TTL_LOAD_FEATURE
# output_reg of an NSH field the rule sets just before (generate_nsh_output_reg.py; with NSH_FEATURE: of13_oracle)
FIELD_ITEMS["nsh_output_reg"] = NSH_OUTPUT_REG_FEATURE
# learn's result_dst in an NSH field (generate_nsh_learn.py; with NSH_FEATURE: of13_oracle)
FIELD_ITEMS["nsh_learn_result"] = NSH_LEARN_RESULT_FEATURE
# check_pkt_larger into an NSH field's bit the match fixes (generate_nsh_check_larger.py; with NSH_FEATURE: of13_oracle)
FIELD_ITEMS["nsh_check_larger"] = NSH_CHECK_LARGER_FEATURE


def field_items(rule: Rule) -> set[str]:
    """The FIELD_ITEMS ``rule`` uses."""
    out = set()
    tci = tci_match(rule.match)
    if tci is not None and not tci[1] & OFPVID_PRESENT:
        out.add("match:vlan_tci_untagged")
    if "recirc_id" in rule.match:
        out.add("match:recirc_id")
    if any(f in rule.match for f in TUNNEL_FIELDS):
        out.add("match:tun")
    for ins in rule.instructions:
        for a in ins.actions if isinstance(ins, (ApplyActions, WriteActions)) else ():
            if (isinstance(a, SetField) and a.field in TUNNEL_FIELDS
                    or isinstance(a, MoveField) and TUNNEL_FIELDS & {a.src.field, a.dst.field}):
                out.add("set:tun")
            if (isinstance(a, SetField) and a.field == "tun_flags"
                    or isinstance(a, MoveField) and "tun_flags" in (a.src.field, a.dst.field)):
                out.add("set:tun_flags")
    if "tun_flags" in rule.match:
        out.add("match:tun_flags")
    if any(f in rule.match for f in NSH_FIELDS):
        out.add("match:nsh")
    if any(isinstance(a, SetField) and a.field in NSH_FIELDS for ins in rule.instructions
           if isinstance(ins, (ApplyActions, WriteActions)) for a in ins.actions):
        out.add("set:nsh")
    if any(isinstance(a, DecNshTtl) for ins in rule.instructions if isinstance(ins, ApplyActions) for a in ins.actions):
        out.add("dec_nsh_ttl")
    if any(fields & NSH_FIELDS for fields in _operand_fields(rule)):
        out.add("nsh_operands")
    if any("nsh_ttl" in fields for fields in _operand_fields(rule)):
        out.add("nsh_ttl_operands")
    if "actset_output" in rule.match:
        out.add("match:actset_output")
    out |= tun_metadata_items(rule)  # (tun_metadata)
    if any(isinstance(a, DecNshTtl) for ins in rule.instructions if isinstance(ins, WriteActions) for a in ins.actions):
        out.add("write:dec_nsh_ttl")  # (nshttl)
    if uses_context_without_md1(rule.match):
        out.add("match:nsh_context")  # (nshctx)
    if any(is_nsh_ttl_load(a) for ins in rule.instructions if isinstance(ins, (ApplyActions, WriteActions))
           for a in ins.actions):
        out.add("nsh_ttl_loads")  # (nshload)
    if any(type(a) is OutputReg and a.src.field in NSH_FIELDS for ins in rule.instructions
           if isinstance(ins, ApplyActions) for a in ins.actions):
        out.add("nsh_output_reg")  # (nshload)
    if any(type(a) is Learn and a.result_dst is not None and a.result_dst.field in NSH_FIELDS
           for ins in rule.instructions if isinstance(ins, ApplyActions) for a in ins.actions):
        out.add("nsh_learn_result")  # (nshdst)
    if any(type(a) is CheckPktLarger and a.dst.field in NSH_FIELDS for ins in rule.instructions
           if isinstance(ins, ApplyActions) for b in ins.actions for a in (b.actions if type(b) is Clone else (b,))):
        out.add("nsh_check_larger")  # (nshdst)
    return out


# tun_metadata0..63 (generate_tun_metadata.py): rules that match a mapped option, that write or read one
# (set_field, load, move, push, pop), and that delete one; the oracle's bridges hold ORACLE_TLV_MAP
TUN_METADATA_ITEMS = {"match:tun_metadata": TUN_METADATA_FEATURE, "set:tun_metadata": TUN_METADATA_FEATURE,
                      "delete_field": TUN_METADATA_FEATURE}
TUN_METADATA_ITEMS["wide:tun_metadata"] = TUN_METADATA_WIDE_FEATURE  # (values longer than the option: tun_metadata.fit)
# long:tun_metadata: options mapped 16..124 bytes (LONG_TLV_MAP); in the dp-core oracle its matches
# narrowed to bits 0..127, as the emulator backend matches them (generate_tun_metadata.emu_matches)
TUN_METADATA_ITEMS["long:tun_metadata"] = TUN_METADATA_LONG_FEATURE
TRANSLATION_ONLY_ITEMS = ()  # (items the emulator backend refuses: none)
EMU_NARROWED_ITEMS = ("long:tun_metadata",)
# any:tun_metadata: Open vSwitch's set_field:ANY (a load whose mask keeps no bit of the option: tun_metadata.is_any)
TUN_METADATA_ITEMS["any:tun_metadata"] = TUN_METADATA_ANY_FEATURE
FIELD_ITEMS.update(TUN_METADATA_ITEMS)


def _operand_fields(rule: Rule):
    """Each move's, push's and pop's fields, as a set per action."""
    for ins in rule.instructions:
        for a in ins.actions if isinstance(ins, (ApplyActions, WriteActions)) else ():
            if isinstance(a, MoveField):
                yield {a.src.field, a.dst.field}
            elif isinstance(a, StackPush):
                yield {a.src.field}
            elif isinstance(a, StackPop):
                yield {a.dst.field}


_LONG_FIELDS = frozenset(f"tun_metadata{i}" for i in LONG_TLV_MAP)


def tun_metadata_items(rule: Rule) -> set[str]:
    out = set()
    if any(f in rule.match for f in TUN_METADATA_FIELDS):
        out.add("match:tun_metadata")
    if any(is_wide(f, *fm) for f, fm in rule.match if f in TUN_METADATA_FIELDS):
        out.add("wide:tun_metadata")
    for ins in rule.instructions:
        for a in ins.actions if isinstance(ins, (ApplyActions, WriteActions)) else ():
            fields = ({a.field} if isinstance(a, SetField) else {a.src.field, a.dst.field} if isinstance(a, MoveField)
                      else {a.src.field} if isinstance(a, StackPush) else {a.dst.field} if isinstance(a, StackPop) else set())
            if fields & set(TUN_METADATA_FIELDS):
                out.add("set:tun_metadata")
            if isinstance(a, DeleteField):
                out.add("delete_field")
            if isinstance(a, SetField) and a.field in TUN_METADATA_FIELDS and is_wide(a.field, a.value, a.mask):
                out.add("wide:tun_metadata")
            if is_any(a):
                out.add("any:tun_metadata")
            if any(f in _LONG_FIELDS for f in fields | ({a.field} if isinstance(a, DeleteField) else set())):
                out.add("long:tun_metadata")
    if any(f in _LONG_FIELDS for f in rule.match):
        out.add("long:tun_metadata")
    return out


def feeds_item(item: str, rule: Rule) -> bool:
    """A rule an item's rule set keeps without counting it: for ``match:tun_metadata``, a
    table-0 rule that writes an option and matches none (no packet enters with one, so
    only a written option meets a match); for ``decap``, one in four rules of a later
    table (the inner frames meet them after the pair: generate_decap.py); for
    ``any:tun_metadata``, one in two later-table rules matching an option (only an option
    present meets them: what a ``set_field:ANY`` changes)."""
    if item in ("resubmit_cross", "group_resubmit_cross"):  # (the lookups' landings: cross_port_oracle.py)
        return rule.table > 0 and rule.priority % 3 == 0
    if item == "decap":
        return rule.table > 0 and rule.priority % 4 == 0
    if item == "any:tun_metadata":  # (one in two later-table rules matching an option: they meet what ANY made present)
        return rule.table > 0 and rule.priority % 2 == 0 and "match:tun_metadata" in tun_metadata_items(rule)
    if item != "match:tun_metadata" or rule.table != 0:
        return False
    used = tun_metadata_items(rule)
    return "set:tun_metadata" in used and "match:tun_metadata" not in used


# (pause) controller(pause): the emulator backend refuses it (dp-core keeps no continuation: oneswitch/endpoint_pause.py)
TRANSLATION_ONLY_ITEMS += ("controller_pause",)
