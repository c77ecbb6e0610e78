"""OneSwitch remap on real OVS (issue: NF agent, "On real OVS"): 1,000 random
virtual rules, an NF port moved host -> sNIC -> host ... ten times through
``OneSwitchState.remap``; each plan is applied step by step to the OVS
backend's bridges (OpenFlow FLOW_MOD/GROUP_MOD, barrier per step) and the
packet oracle runs after every step. Every frame the virtual switch sends to
the NF port leaves at exactly one of its old and new locations; nothing else
differs from the virtual switch. A control run with the steps reversed
(deletes first) must be caught."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.remap_oracle import run_remap_oracle

pytestmark = [pytest.mark.ovs]


@pytest.fixture(scope="module")
def sb():
    with OvsSandbox() as s:
        yield s


def test_ten_remaps_of_an_nf_port_lose_and_duplicate_nothing(sb):
    rep = run_remap_oracle(sb, n_rules=1000, n_remaps=10, per_port=6, seed=16)
    assert rep.remaps == 10 and rep.steps >= 3 * rep.remaps
    assert rep.checks == rep.steps + 1  # the oracle ran after every step
    assert rep.to_port >= 10 * rep.checks  # the NF port carried traffic in every state
    assert (rep.lost, rep.duplicated, rep.other_mismatches) == (0, 0, 0), "\n".join(rep.examples)


def test_a_broken_update_order_is_caught(sb):
    # seed 3's rule set (since the generator stopped drawing pkt_mark) makes OVS 3.1 itself abort
    # (ofproto-dpif-rid.c:235, recirculation with a pending action set) before any remap step
    rep = run_remap_oracle(sb, n_rules=150, n_remaps=1, per_port=4, seed=4, reverse_steps=True)
    assert rep.lost > 0, rep
