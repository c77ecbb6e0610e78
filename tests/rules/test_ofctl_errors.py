"""Parse errors name the source, line, column and offending token."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tandem.rules.ofctl import OfctlSyntaxError, parse_flows, parse_group, parse_rule

# (text, offending token, words the message must contain)
CASES = [
    ("ip,nw_srcc=10.0.0.1,actions=drop", "nw_srcc", "did you mean nw_src?"),
    ("tp_dst=80,actions=output:1", "tp_dst=80", "needs a transport protocol"),
    ("udp,tcp_dst=1,actions=drop", "tcp_dst=1", "needs tcp"),
    ("nw_src=10.0.0.1,actions=drop", "nw_src=10.0.0.1", "needs ip or arp"),
    ("ipv6,nw_src=10.0.0.1,actions=drop", "nw_src=10.0.0.1", "use ipv6_src"),
    ("ip,nw_src=10.0.0.300,actions=drop", "10.0.0.300", "not an IPv4 address"),
    ("dl_src=00:11:22:33:44,actions=drop", "00:11:22:33:44", "not a MAC address"),
    ("tcp,tcp_dst=70000,actions=drop", "70000", "does not fit in 16 bits"),
    ("ip,ip_proto=6/0xff,actions=drop", "6/0xff", "cannot be masked"),
    ("ip,nw_tos=33,actions=drop", "33", "ECN"),
    ("dl_src=00:00:00:00:00:01,eth_src=00:00:00:00:00:02,actions=drop", "eth_src=00:00:00:00:00:02", "given twice"),
    ("vlan_vid=0,vlan_pcp=3,actions=drop", "vlan_pcp=3", "needs a VLAN tag"),
    ("tcp,udp,actions=drop", "udp", "second protocol shorthand"),
    ("priority=70000,actions=drop", "70000", "priority"),
    ("in_port=1,actions=outptu:2", "outptu:2", "did you mean output?"),
    ("actions=goto_table:2,output:1", "output:1", "apply actions must come first"),
    ("table=3,actions=output:1,goto_table:2", "goto_table:2", "must point forward"),
    ("actions=write_actions(output:1", "write_actions(output:1", "missing ')'"),
    ("actions=output:4294967293", "4294967293", "reserved"),
    ("actions=set_field:1->in_port", "in_port", "cannot be set"),
    ("tcp,actions=set_field:10->tcp_dstt", "tcp_dstt", "did you mean tcp_dst?"),
    ("actions=mod_tp_dst:80", "mod_tp_dst:80", "needs a tcp or udp match"),
    ("ip,actions=drop,output:1", "drop", "only action"),
    ("ip,actions=push_vlan:0x800", "0x800", "0x8100 or 0x88a8"),
    ("pof[1:0]=1,actions=drop", "pof[1:0]", "0 < length"),
    # action prerequisites, as OVS checks them on add-flow
    ("actions=set_field:4101->vlan_vid", "set_field:4101->vlan_vid", "needs a VLAN tag"),
    ("vlan_vid=0,actions=set_field:3->vlan_pcp", "set_field:3->vlan_pcp", "needs a VLAN tag"),
    ("actions=set_field:1.2.3.4->nw_src", "set_field:1.2.3.4->nw_src", "needs ip in the match"),
    ("ip,actions=mod_nw_src:1.2.3.4,set_field:80->udp_dst", "set_field:80->udp_dst", "needs udp"),
    ("ip,actions=write_actions(set_field:80->tcp_dst)", "set_field:80->tcp_dst", "needs tcp"),
    ("actions=pop_vlan", "pop_vlan", "needs a VLAN tag"),
    ("vlan_vid=0x1001,actions=pop_vlan,set_field:0x1002->vlan_vid", "set_field:0x1002->vlan_vid", "VLAN tag"),
    ("arp,actions=dec_ttl", "dec_ttl", "needs ip or ipv6"),
    ("dl_vlan=5,actions=set_field:0x874->vlan_vid", "set_field:0x874->vlan_vid", "write 0x1874 for VLAN 2164"),
    ("vlan_vid=0x1001,actions=push_vlan:0x88a8,push_vlan:0x8100", "push_vlan:0x8100", "at most 2 VLAN tags"),
]


@pytest.mark.parametrize("text,token,words", CASES)
def test_error_points_at_token(text: str, token: str, words: str) -> None:
    with pytest.raises(OfctlSyntaxError) as info:
        parse_rule(text, source="V.flows", line=12)
    e = info.value
    assert e.token == token
    assert e.column == text.index(token) + 1
    assert words in e.reason
    assert str(e) == f"V.flows:12:{e.column}: {e.reason}"
    assert isinstance(e, ValueError)


def test_missing_actions_points_past_the_end() -> None:
    with pytest.raises(OfctlSyntaxError, match="missing actions=") as info:
        parse_rule("in_port=1")
    assert info.value.column == len("in_port=1") + 1


def test_parse_flows_reports_file_line_and_column() -> None:
    text = "# header\nactions=drop\n\n  ip,nw_dst=1.2.3.4/33,actions=drop  # bad prefix\n"
    with pytest.raises(OfctlSyntaxError) as info:
        parse_flows(text, "V.flows")
    e = info.value
    assert (e.source, e.line, e.column, e.token) == ("V.flows", 4, 21, "33")
    assert str(e).startswith("V.flows:4:21: nw_dst: prefix length /33")


def test_parse_flows_skips_comments_and_blank_lines() -> None:
    rules = parse_flows("# a\n\n  \nactions=drop # trailing\npriority=1,actions=output:1\n")
    assert [r.priority for r in rules] == [32768, 1]


@pytest.mark.parametrize("text,token,words", [
    ("group_id=1,type=any,bucket=output:1", "any", "not one of"),
    ("group_id=1,type=all,bucket=outptu:1", "outptu:1", "did you mean output?"),
    ("group_id=1,type=all,colour=red,bucket=output:1", "colour", "unknown group key"),
])
def test_group_errors(text: str, token: str, words: str) -> None:
    with pytest.raises(OfctlSyntaxError) as info:
        parse_group(text)
    assert info.value.token == token
    assert info.value.column == text.index(token) + 1
    assert words in info.value.reason


def test_indirect_group_needs_one_bucket() -> None:
    with pytest.raises(OfctlSyntaxError, match="exactly one bucket"):
        parse_group("group_id=1,type=indirect,bucket=output:1,bucket=output:2")


_PIECES = list(",=:/()->[] 0123456789abcdefx.") + [
    "actions=", "tcp", "ip", "pof[", "set_field:", "write_actions(", "0x", "vlan_tci=", "dl_vlan=", "nw_tos=",
    "bucket=", "::", "goto_table:", "weight:", "ipv6_src=", "controller(", "mod_vlan_vid:",
]
_BASE = [
    "table=1,priority=5,tcp,in_port=3,nw_src=10.0.0.0/8,tp_dst=80,actions=mod_nw_tos:32,output:2,goto_table:4",
    "vlan_tci=0x1005/0x1fff,ipv6,ipv6_dst=2001:db8::/64,actions=pop_vlan,write_actions(group:3,output:1)",
    "arp,arp_spa=10.0.0.1,pof[96:16]=0x806/0xffff,actions=add_field:0x2a->pof[112:8],CONTROLLER:64",
    "group_id=1,type=select,bucket=weight:10,output:1,bucket=watch_port:2,actions=output:2",
]


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(_BASE), edits=st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 4), st.sampled_from(_PIECES)), min_size=1, max_size=4))
def test_mangled_text_raises_only_syntax_errors(base: str, edits: list) -> None:
    text = base
    for pos, cut, piece in edits:
        pos = min(pos, len(text))
        text = text[:pos] + piece + text[pos + cut:]
    for parse in (parse_rule, parse_group):
        try:
            parse(text)
        except OfctlSyntaxError as e:
            assert 1 <= e.column <= len(text) + 1
