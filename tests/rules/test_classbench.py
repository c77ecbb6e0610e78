"""ClassBench rule/trace files: parsing (with precise errors), port ranges as
prefixes, the OpenFlow form on a switch, and dp-core's native ACL classifier,
all against the slow linear scan."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tandem import _dp
from tandem.dataplane import Switch
from tandem.rules import classbench as cb
from tandem.rules.packets import build_frame

RULES = """\
# comment
@10.0.0.0/8\t192.168.1.0/24\t0 : 65535\t80 : 80\t0x06/0xff
@0.0.0.0/0\t192.168.0.0/16\t1024 : 65535\t1000 : 2999\t0x00/0x00
@10.1.2.3/32  0.0.0.0/0  0 : 65535  0 : 65535  0x11/0xff  0x0000/0x0000
"""
TRACE = """\
0x0a010203\t0xc0a80105\t5000\t80\t6
10.9.9.9 192.168.7.7 2000 1500 17
0x0a010203 0x01020304 1 2 17 extra
"""


def test_parse_rules_and_trace():
    rules = cb.parse_rules(RULES, "r.rules")
    assert rules[0] == cb.AclRule(0x0A000000, 8, 0xC0A80100, 24, (0, 65535), (80, 80), 6, 0xFF)
    assert rules[1].sport == (1024, 65535) and rules[1].proto_mask == 0
    pkts = cb.parse_trace(TRACE, "t.trace")
    assert pkts[1] == cb.AclPacket(0x0A090909, 0xC0A80707, 2000, 1500, 17)
    assert [cb.first_match(rules, p) for p in pkts] == [0, 1, 2]


@pytest.mark.parametrize("line,where", [
    ("10.0.0.0/8 1.2.3.4/32 0 : 1 0 : 1 0x06/0xff", "r:1:1: rule: a rule line starts with '@'"),
    ("@10.0.0.0/33 1.2.3.4/32 0 : 1 0 : 1 0x06/0xff", "r:1:11: source prefix length: 33 is longer than 32"),
    ("@10.0.0.0/8 1.2.3/32 0 : 1 0 : 1 0x06/0xff", "r:1:13: destination: not an IPv4 address: '1.2.3'"),
    ("@10.0.0.0/8 1.2.3.4/32 9 : 1 0 : 1 0x06/0xff", "r:1:24: source port: empty range 9 : 1"),
    ("@10.0.0.0/8 1.2.3.4/32 0 : 70000 0 : 1 0x06/0xff", "r:1:28: source port: 70000 does not fit in 16 bits"),
    ("@10.0.0.0/8 1.2.3.4/32 0 : 1 0 : 1 0x06", "r:1:40: protocol: expected '/'"),
])
def test_rule_errors_name_line_column_and_field(line, where):
    with pytest.raises(cb.ClassBenchError) as e:
        cb.parse_rules(line, "r")
    assert str(e.value) == where


def test_trace_error_names_line_and_column():
    with pytest.raises(cb.ClassBenchError, match=r"^t:2:5: source port: not a number: 'x'$"):
        cb.parse_trace("1 2 3 4 6\n1 2 x 4 6\n", "t")
    with pytest.raises(cb.ClassBenchError, match="no packets"):
        cb.parse_trace("# nothing\n", "t")


@given(st.integers(0, 65535), st.integers(0, 65535))
@settings(max_examples=300, deadline=None)
def test_range_prefixes_cover_exactly(a, b):
    lo, hi = min(a, b), max(a, b)
    ps = cb.range_prefixes(lo, hi)
    assert len(ps) <= 30
    covered = set()
    for v, m in ps:
        block = (~m) & 0xFFFF
        assert v & block == 0
        covered.update(range(v, v + block + 1))
    assert covered == set(range(lo, hi + 1))


def random_set(seed: int, n_rules: int, n_pkts: int):
    rng = random.Random(seed)
    pool = [0x0A000000, 0x0A000100, 0xC0A80000]

    def rng_range():
        k = rng.randrange(4)
        if k == 0:
            return (0, 65535)
        if k == 1:
            return (80, 80)
        if k == 2:
            return (1024, 65535)
        a = rng.randrange(3000)
        return (a, a + rng.randrange(5000))

    rules = []
    for _ in range(n_rules):
        proto, pm = rng.choice([(6, 0xFF), (17, 0xFF), (0, 0)])
        rules.append(cb.AclRule(rng.choice(pool) | rng.randrange(256), rng.choice([0, 8, 16, 24, 32]),
                                rng.choice(pool) | rng.randrange(256), rng.choice([0, 8, 16, 24, 32]),
                                rng_range(), rng_range(), proto, pm))
    pkts = [cb.AclPacket(rng.choice(pool) | rng.randrange(256), rng.choice(pool) | rng.randrange(256),
                         rng.choice([80, 1023, 1024, 2999, rng.randrange(65536)]),
                         rng.choice([80, 81, 0, 7999, rng.randrange(65536)]), rng.choice([6, 17]))
            for _ in range(n_pkts)]
    return rules, pkts


def tuples(rules, pkts):
    return ([(r.src, r.src_len, r.dst, r.dst_len, *r.sport, *r.dport, r.proto, r.proto_mask) for r in rules],
            [(p.src, p.dst, p.sport, p.dport, p.proto) for p in pkts])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_native_classifier_and_openflow_form_match_linear_scan(seed):
    rules, pkts = random_set(seed, 150, 1500)
    want = [cb.first_match(rules, p) for p in pkts]
    assert sum(w >= 0 for w in want) > 300
    b = _dp.AclBench(*tuples(rules, pkts))
    assert b.n_rules() == len(rules), "one classifier rule per ACL rule"
    assert b.reference() == want
    assert b.answers() == want
    stats = b.tree_stats()
    assert stats is not None and stats[4] <= len(rules)
    # the scalar tree walk (the AVX-512 one, when the CPU has it, answered above)
    b.set_simd(False)
    assert b.answers() == want
    assert not b.uses_simd()
    b.set_simd(True)
    assert b.answers() == want
    # the OpenFlow form (port ranges as prefixes, tcp + udp copies) on a switch
    ports = list(range(1, 9))
    sw = Switch(list(range(1, 10)), n_tables=1)
    of = cb.to_openflow(rules, ports)
    assert len(of) > len(rules)
    sw.add_rules(of)
    for p, w in zip(pkts[:400], want):
        name = "tcp" if p.proto == 6 else "udp"
        f = build_frame(ipv4_src=p.src, ipv4_dst=p.dst, ip_proto=p.proto, **{f"{name}_src": p.sport, f"{name}_dst": p.dport})
        got = [port for port, _ in sw.process(9, f)]
        assert got == ([ports[w % len(ports)]] if w >= 0 else []), (p, w)


def test_acl_bench_rejects_bad_rules():
    with pytest.raises(ValueError, match="rule 1"):
        _dp.AclBench([(0, 33, 0, 0, 0, 1, 0, 1, 6, 255)], [])
