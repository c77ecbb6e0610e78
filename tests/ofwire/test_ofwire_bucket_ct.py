"""``ct``, ``ct_clear`` and ``learn`` in a group bucket, in ovs-ofctl text and on the
wire. Open vSwitch takes them there (and runs a bucket as an action set: ct and
ct_clear are final actions, learn does nothing; docs/endpoint.md "Connection
tracking", tests/dataplane/test_bucket_ct.py). The golden files are Tandem's own
encoding (``make_golden_bucket_forms.py`` writes them); Open vSwitch confirms their
meaning (``ovs-ofctl ofp-print`` prints each as its text here)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import Ct, CtClear, Learn
from tandem.rules.ofctl import format_group, parse_group

GOLDEN = Path(__file__).parent / "golden"

# name -> (xid, the group in ovs-ofctl text)
BUCKET_CT_GROUP_MODS = {
    "group_mod_bucket_ct": (0x97, "group_id=7,type=all,bucket=actions=load:0x5->NXM_NX_REG0[0..15],"
                                  "ct(table=1,zone=NXM_NX_REG0[0..15]),bucket=actions=ct_clear,output:2,"
                                  "bucket=actions=ct(commit,zone=3,exec(set_field:0x9->ct_mark))"),
    "group_mod_bucket_ct_learn": (0x98, "group_id=8,type=fast_failover,bucket=watch_port:2,actions="
                                        "learn(table=1,idle_timeout=10,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],"
                                        "output:NXM_OF_IN_PORT[]),output:2,bucket=watch_port:3,actions=ct(table=0)"),
}


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


@pytest.mark.parametrize("name", sorted(BUCKET_CT_GROUP_MODS))
def test_bucket_ct_text_round_trip(name):
    g = parse_group(BUCKET_CT_GROUP_MODS[name][1])
    assert parse_group(format_group(g)) == g
    assert any(type(a) in (Ct, CtClear, Learn) for b in g.buckets for a in b.actions)


@pytest.mark.parametrize("name", sorted(BUCKET_CT_GROUP_MODS))
def test_bucket_ct_group_mod_matches_its_golden_bytes(name):
    xid, text = BUCKET_CT_GROUP_MODS[name]
    raw = golden(name)
    assert M.encode_group_mod(xid, "add", parse_group(text)) == raw
    assert M.decode_group_mod(raw[8:]) == ("add", parse_group(text))


@pytest.mark.parametrize("name", sorted(BUCKET_CT_GROUP_MODS))
def test_open_vswitch_reads_the_bucket_ct_golden_bytes_as_the_same_group(name):
    out = subprocess.run(["ovs-ofctl", "ofp-print", golden(name).hex()], capture_output=True, text=True,
                         check=True).stdout
    printed = out.split("ADD ", 1)[1].strip()
    assert parse_group(printed) == parse_group(BUCKET_CT_GROUP_MODS[name][1]), out
