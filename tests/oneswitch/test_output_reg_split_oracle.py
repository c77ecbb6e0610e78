"""An output_reg whose port number only the pipeline knows, against Open vSwitch:
the translation (rules split per value, ``oneswitch/output_reg_split.py``) against
the virtual switch, and dp-core against one bridge, on random rule sets in which
every rule has one (a bounded run of ``tandem bench of13_oracle -- --items
output_reg_runtime``); and the same translation oracle fails when the parts output
to the wrong ports."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch import output_reg_split
from tandem.rules.ir import Output
from tandem.testing.of13_oracle import run_dp, run_translation

from test_of13_translation import TOPOS

pytestmark = pytest.mark.ovs
ITEM = ("output_reg_runtime",)


def _rotated(real):
    """``split_output_reg`` with every part's output to a port 1..4 sent to the next one."""
    def split(rule, i, vports):
        out = []
        for part in real(rule, i, vports):
            acts = tuple(Output(a.port % 4 + 1, a.max_len) if type(a) is Output and 1 <= a.port <= 4 else a
                         for a in part.apply_actions)
            out.append(output_reg_split._part(part, part.match, acts))
        return out
    return split


def test_runtime_output_reg_forwards_like_the_virtual_switch_and_a_wrong_split_is_caught(monkeypatch):
    with OvsSandbox() as sb:
        res = run_translation(sb, TOPOS, ITEM, per_item=400, seed=3, set_size=200, per_port=20)
        (r,) = res.values()
        assert r.item_rules >= 400 and r.frames > 100
        assert not r.mismatches, "\n".join(r.mismatches[:3])
        monkeypatch.setattr(output_reg_split, "split_output_reg", _rotated(output_reg_split.split_output_reg))
        (bad,) = run_translation(sb, TOPOS, ITEM, per_item=400, seed=3, set_size=200, per_port=20).values()
        assert bad.mismatches


def test_dp_core_runs_runtime_output_reg_as_open_vswitch():
    with OvsSandbox() as sb:
        (r,) = run_dp(sb, ITEM, per_item=300, seed=3, set_size=100, packets_per_set=60).values()
    assert r.item_rules >= 300 and r.frames > 50
    assert not r.mismatches, "\n".join(r.mismatches[:3])


def test_table_and_normal_numbers_at_run_time_on_one_switch(monkeypatch):
    """Registers that hold 0xfff9 and 0xfffa too: the parts at TABLE's number look table 0
    up again, those at NORMAL's run Open vSwitch's MAC-learning switch (one switch: every
    pipeline there, as when every port is homed to the host)."""
    from tandem.oneswitch.output_reg_split import may_output_normal
    from tandem.oneswitch.topology import Topology
    from tandem.rules import generate_output_reg
    from tandem.testing import oneswitch_oracle

    monkeypatch.setattr(generate_output_reg, "_RESERVED", generate_output_reg._RESERVED + (0xFFF9, 0xFFFA))
    drawn = []
    real = oneswitch_oracle.oracle_ruleset

    def counted(*a, **kw):
        rules, groups = real(*a, **kw)
        drawn.extend(rules)
        return rules, groups
    monkeypatch.setattr(oneswitch_oracle, "oracle_ruleset", counted)
    one = {"one": Topology.build({"host": "host"}, [], {1: "host:1", 2: "host:2", 3: "host:3"})}
    with OvsSandbox() as sb:
        (r,) = run_translation(sb, one, ITEM, per_item=300, seed=5, set_size=150, per_port=30).values()
    assert sum(may_output_normal(x) for x in drawn) >= 15 and r.frames > 100
    assert not r.mismatches, "\n".join(r.mismatches[:3])
