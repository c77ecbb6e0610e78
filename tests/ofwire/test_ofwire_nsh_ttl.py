"""``dec_nsh_ttl`` (NXAST_DEC_NSH_TTL) written into the action set and in group buckets,
in ovs-ofctl text and on the wire. Open vSwitch 3.1 takes both, with or without an NSH
match (it checks no prerequisite there), and runs it in the action set after dec_mpls_ttl
and before the set-fields (crates/dp-core/tests/nsh_ttl_set.rs; the OVS oracle:
``tandem bench of13_oracle --items write:dec_nsh_ttl,bucket:dec_nsh_ttl``). The
group's golden file is Tandem's own encoding, which ``ovs-ofctl ofp-print`` reads back as
its text (the written flow's golden: test_ofwire_nx_golden.py, flow_mod_nx_nsh_ttl_write)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import DecNshTtl
from tandem.rules.ofctl import format_group, parse_group

sys.path.insert(0, str(Path(__file__).parent))
from ofctl_round_trip import assert_text_round_trip_and_ovs_takes_it  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
GROUP = (0x98, "group_id=7,type=all,bucket=actions=set_field:02:00:00:00:00:01->eth_src,dec_nsh_ttl,output:2,"
               "bucket=actions=output:3,dec_nsh_ttl,bucket=actions=dec_nsh_ttl")


def golden(name: str) -> bytes:
    return bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip())


def ofp_print(raw: bytes) -> str:
    return subprocess.run(["ovs-ofctl", "ofp-print", raw.hex()], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("text", [
    "eth_type=0x894f,actions=write_actions(set_field:9->nsh_ttl,dec_nsh_ttl,output:2)",
    "table=2,actions=output:1,write_actions(dec_nsh_ttl,group:1)",
    "ip,actions=write_actions(dec_nsh_ttl,dec_mpls_ttl,dec_ttl,output:2)",
])
def test_written_text_round_trip_and_ovs_takes_it(text):
    assert_text_round_trip_and_ovs_takes_it(text)


def test_group_text_round_trip_and_golden_bytes():
    xid, text = GROUP
    g = parse_group(text)
    assert parse_group(format_group(g)) == g
    assert sum(type(a) is DecNshTtl for b in g.buckets for a in b.actions) == 3
    raw = golden("group_mod_nsh_ttl")
    assert M.encode_group_mod(xid, "add", g) == raw
    assert M.decode_group_mod(raw[8:]) == ("add", g)
    printed = ofp_print(raw).split("ADD ", 1)[1].strip()
    assert parse_group(printed) == g


@pytest.mark.ovs
def test_open_vswitch_takes_the_group():
    with OvsSandbox() as sb:
        sb.add_bridge("br0", [1, 2, 3])
        sb.ofctl("add-group", "br0", format_group(parse_group(GROUP[1])))
        assert "dec_nsh_ttl" in sb.ofctl("dump-groups", "br0")
