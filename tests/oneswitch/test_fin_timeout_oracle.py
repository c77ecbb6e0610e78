"""Nicira fin_timeout against Open vSwitch on random rule sets in which every rule has
one (a bounded run of ``tandem bench of13_oracle -- --items fin_timeout``): dp-core
forwards as one bridge and leaves every rule with the timeouts the bridge shows after
the same FINs and RSTs (testing/fin_oracle.py), and a dp-core that did not shrink them
is caught; the translation forwards as the virtual switch, and its copies' timeouts,
folded, are the virtual switch's."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing import fin_oracle
from tandem.testing.of13_oracle import run_dp, run_translation

from test_of13_translation import TOPOS

pytestmark = pytest.mark.ovs
ITEM = ("fin_timeout",)


def test_dp_core_forwards_and_shrinks_timeouts_as_open_vswitch(monkeypatch):
    with OvsSandbox() as sb:
        (r,) = run_dp(sb, ITEM, per_item=300, seed=3, set_size=100, packets_per_set=100).values()
        assert r.item_rules >= 300 and r.frames > 50 and r.shrunk >= 10
        assert not r.mismatches, "\n".join(r.mismatches[:3])
    monkeypatch.setattr(fin_oracle, "dp_timeouts", lambda p, rules, ids: {
        (x.table, x.priority): (x.idle_timeout, x.hard_timeout) for x in rules})
    with OvsSandbox() as sb:
        (bad,) = run_dp(sb, ITEM, per_item=100, seed=3, set_size=100, packets_per_set=100).values()
    assert any("idle/hard" in m for m in bad.mismatches)


def test_translated_fin_timeout_rules_forward_and_shrink_as_the_virtual_switch(monkeypatch):
    """The virtual rules' timeouts folded from their copies' (as the endpoint folds them)
    are the reference bridge's; folding that ignored the copies is caught."""
    with OvsSandbox() as sb:
        (r,) = run_translation(sb, TOPOS, ITEM, per_item=300, seed=3, set_size=150, per_port=40).values()
    assert r.item_rules >= 300 and r.frames >= 30 and r.shrunk >= 5
    assert not r.mismatches, "\n".join(r.mismatches[:3])
    monkeypatch.setattr(fin_oracle, "folded", lambda idle, hard, copies: (idle, hard))
    with OvsSandbox() as sb:
        (bad,) = run_translation(sb, TOPOS, ITEM, per_item=300, seed=3, set_size=150, per_port=40).values()
    assert any("idle/hard" in m for m in bad.mismatches)
