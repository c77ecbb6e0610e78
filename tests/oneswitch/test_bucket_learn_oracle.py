"""Nicira ``learn`` in group buckets, against Open vSwitch: a bucket runs as an action
set, which has no place for learn, so it learns nothing in OVS 3.1, in dp-core and
through OneSwitch (bucket_ct.py), and homes no port. Random learning rule sets whose
learning rules apply groups with learns in their buckets (generate_bucket_learn.py)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.extension import ports_to_extend
from tandem.oneswitch.state import OneSwitchState
from tandem.rules.generate_bucket_learn import bucket_learn_ruleset, uses_bucket_learn
from tandem.rules.ofctl import parse_group
from tandem.testing.learn_dp_oracle import run_learn_dp_oracle
from tandem.testing.learn_oracle import TOPOS, run_learn_oracle


def test_a_group_with_learn_in_a_bucket_homes_no_port():
    group = parse_group("group_id=1,type=all,bucket=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],"
                        "output:NXM_OF_IN_PORT[]),output:3")
    state = OneSwitchState(TOPOS["k3"])
    assert ports_to_extend(state, None, [group]) == []


def test_the_generator_gives_learning_rules_groups_with_learn_in_their_buckets():
    import random

    rules, groups = bucket_learn_ruleset(random.Random(4), 80, sorted(TOPOS["k3"].port_map))
    by_id = {g.group_id: g for g in groups}
    assert sum(uses_bucket_learn(r, by_id) for r in rules) >= 15


@pytest.mark.ovs
def test_the_translation_and_dp_core_learn_nothing_in_buckets_as_open_vswitch():
    reports = [run_learn_oracle(TOPOS["k3"], 5, 80, 60, ruleset=bucket_learn_ruleset)]
    with OvsSandbox() as sb:
        reports.append(run_learn_dp_oracle(sb, 5, 80, 60, ruleset=bucket_learn_ruleset))
    for r in reports:
        assert r.group_rules >= 15 and r.traffic.outputs > 20
        assert not r.traffic.mismatches, r.traffic.mismatches[:2]
        assert not r.learned_mismatches, r.learned_mismatches[:3]
