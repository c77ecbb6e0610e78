"""``clone``, ``check_pkt_larger`` and ``output(port=P,max_len=N)`` in a group bucket,
in ovs-ofctl text and on the wire. Open vSwitch takes them there (and runs a bucket as
an action set, where they do nothing: tests/oneswitch/test_bucket_forms_vs_ovs.py).
The golden files are Tandem's own encoding (``make_golden_bucket_forms.py``); Open
vSwitch confirms their meaning (``ovs-ofctl ofp-print`` prints each as its text here)."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import CheckPktLarger, Clone, Output, OutputTrunc, Subfield
from tandem.rules.ofctl import format_group, parse_group

GOLDEN = Path(__file__).parent / "golden"

# name -> (xid, the group in ovs-ofctl text)
BUCKET_GROUP_MODS = {
    "group_mod_bucket_forms": (0x95, "group_id=5,type=all,bucket=actions=check_pkt_larger(100)->NXM_NX_REG0[1],"
                                     "clone(push_vlan:0x8100,set_field:4196->vlan_vid,output:1),"
                                     "output(port=4,max_len=20),output:3,bucket=actions=clone(drop),output:2"),
    "group_mod_bucket_forms_ff": (0x96, "group_id=6,type=fast_failover,bucket=watch_port:2,actions=output:2,"
                                        "output(port=IN_PORT,max_len=14),check_pkt_larger(0)->NXM_OF_ETH_SRC[0],"
                                        "bucket=watch_port:3,actions=clone(clone(output:1),output:4),output:3"),
}


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


@pytest.mark.parametrize("name", sorted(BUCKET_GROUP_MODS))
def test_bucket_forms_text_round_trip(name):
    g = parse_group(BUCKET_GROUP_MODS[name][1])
    assert parse_group(format_group(g)) == g
    assert sum(type(a) in (CheckPktLarger, Clone, OutputTrunc) for b in g.buckets for a in b.actions) >= 3


@pytest.mark.parametrize("name", sorted(BUCKET_GROUP_MODS))
def test_bucket_forms_group_mod_matches_its_golden_bytes(name):
    xid, text = BUCKET_GROUP_MODS[name]
    raw = golden(name)
    assert M.encode_group_mod(xid, "add", parse_group(text)) == raw
    assert M.decode_group_mod(raw[8:]) == ("add", parse_group(text))


@pytest.mark.parametrize("name", sorted(BUCKET_GROUP_MODS))
def test_open_vswitch_reads_the_golden_bytes_as_the_same_group(name):
    out = subprocess.run(["ovs-ofctl", "ofp-print", golden(name).hex()], capture_output=True, text=True,
                         check=True).stdout
    printed = out.split("ADD ", 1)[1].strip()
    assert parse_group(printed) == parse_group(BUCKET_GROUP_MODS[name][1]), out


def test_the_forms_decode_in_a_bucket_only():
    """Taken in a bucket; in write_actions (and a PACKET_OUT's list) still refused."""
    acts = [CheckPktLarger(60, Subfield("reg0", 0, 1)), Clone((Output(1),)), OutputTrunc(2, 20), Output(3)]
    raw = W.encode_actions(acts)
    assert W.decode_actions(raw, bucket=True) == acts
    for a in acts[:3]:
        with pytest.raises(W.OFError) as e:
            W.decode_actions(W.encode_actions([a]))
        assert (e.value.etype, e.value.code) == (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)
    write = struct.pack("!HH4x", 3, 8 + len(raw)) + raw  # OFPIT_WRITE_ACTIONS
    with pytest.raises(W.OFError) as e:
        W.decode_instructions(write)
    assert (e.value.etype, e.value.code) == (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)
