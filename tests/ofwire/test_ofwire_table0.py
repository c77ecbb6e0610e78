"""Lookups in table 0 written into the action set (``output:TABLE``; Nicira
``resubmit(,0)``, ``resubmit:PORT``), in group buckets, and by ``output_reg`` of TABLE's
number on the wire: golden bytes
(Tandem's encoding, written by running this file: ``.venv/bin/python
tests/ofwire/test_ofwire_table0.py``) that Open vSwitch's own parser reads as the same
flows and groups (``ovs-ofctl ofp-print``)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import (
    OFPP_IN_PORT, OFPP_TABLE, ApplyActions, Bucket, FlowMod, Group, Match, Output, OutputReg, Resubmit, Rule, SetField,
    Subfield, WriteActions,
)

GOLDEN = Path(__file__).parent / "golden"
needs_ofctl = pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (make test installs Open vSwitch)")

# name -> (xid, flow mod, pieces of ovs-ofctl ofp-print's reading)
FLOW_MODS = {
    "flow_mod_write_output_table": (0x90, FlowMod("add", Rule(
        Match.of(in_port=1),
        (ApplyActions((Output(2),)), WriteActions((SetField("eth_src", 0x020000000001), Output(3), Output(OFPP_TABLE)))),
        table=1, priority=9)),
        ["table:1", "priority=9,in_port=1", "actions=output:2,write_actions(set_field:02:00:00:00:00:01->eth_src,"
         "output:3,TABLE)"]),
    "flow_mod_write_resubmit0": (0x91, FlowMod("add", Rule(
        Match.of(in_port=1), (WriteActions((Resubmit(OFPP_IN_PORT, 0), SetField("eth_dst", 0x020000000002))),),
        table=2, priority=8)),
        ["table:2", "priority=8,in_port=1", "actions=write_actions(resubmit(,0),set_field:02:00:00:00:00:02->eth_dst)"]),
    "flow_mod_write_resubmit_port": (0x92, FlowMod("add", Rule(
        Match.of(in_port=1), (WriteActions((Resubmit(1),)),), table=2, priority=7)),
        ["table:2", "priority=7,in_port=1", "actions=write_actions(resubmit:1)"]),
    # output_reg of TABLE's number: the same lookup
    "flow_mod_output_reg_table": (0x94, FlowMod("add", Rule(
        Match(), (ApplyActions((SetField("reg1", 0xFFF90000, 0xFFFF0000), OutputReg(Subfield("reg1", 16, 16)),
                                Output(2))),), table=1, priority=6)),
        ["table:1", "priority=6", "actions=set_field:0xfff90000/0xffff0000->reg1,output:NXM_NX_REG1[16..31],output:2"]),
}
GROUP_MODS = {
    "group_mod_bucket_table0": (0x93, Group(5, "all", (
        Bucket((SetField("reg0", 5), Output(OFPP_TABLE))), Bucket((Resubmit(OFPP_IN_PORT, 0),)))),
        ["ADD group_id=5,type=all,bucket=actions=set_field:0x5->reg0,TABLE,bucket=actions=resubmit(,0)"]),
}


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


def _encode(name: str) -> bytes:
    if name in FLOW_MODS:
        xid, mod, _ = FLOW_MODS[name]
        return M.encode_flow_mod(xid, mod)
    xid, group, _ = GROUP_MODS[name]
    return M.encode_group_mod(xid, "add", group)


@pytest.mark.parametrize("name", sorted(FLOW_MODS) + sorted(GROUP_MODS))
def test_table0_lookups_match_their_golden_bytes_and_read_back(name):
    raw = golden(name)
    assert _encode(name) == raw
    if name in FLOW_MODS:
        assert M.decode_flow_mod(raw[8:]).mod == FLOW_MODS[name][1]
    else:
        assert M.decode_group_mod(raw[8:]) == ("add", GROUP_MODS[name][1])


@needs_ofctl
@pytest.mark.parametrize("name", sorted(FLOW_MODS) + sorted(GROUP_MODS))
def test_open_vswitch_reads_the_golden_bytes_as_the_same(name):
    out = subprocess.run(["ovs-ofctl", "ofp-print", golden(name).hex()], capture_output=True, text=True,
                         check=True).stdout
    assert "error" not in out, out
    for piece in (FLOW_MODS.get(name) or GROUP_MODS[name])[2]:
        assert piece in out, (piece, out)


def test_the_goldens_use_every_written_table0_item():
    from tandem.testing.of13_oracle import OUTPUT_REG_TABLE_ITEMS, TABLE0_WRITE_ITEMS, rule_items

    used = set().union(*(rule_items(mod.rule) for _, mod, _ in FLOW_MODS.values()))
    assert set(TABLE0_WRITE_ITEMS) | set(OUTPUT_REG_TABLE_ITEMS) <= used


if __name__ == "__main__":
    for n in [*FLOW_MODS, *GROUP_MODS]:
        (GOLDEN / f"{n}.hex").write_text(_encode(n).hex() + "\n")
    print(f"wrote {len(FLOW_MODS) + len(GROUP_MODS)} golden files to {GOLDEN}", file=sys.stderr)
