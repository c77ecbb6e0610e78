"""The SFC encap pattern in a PACKET_OUT (rules/encap_set.py ``packet_out_problem``): the
endpoint's walk keeps the pattern among the changes before each output, so each output's
physical PACKET_OUT runs it once on its own copy, on the output port's switch. Bounded runs
of ``tandem bench packet_out_oracle --encap`` (testing/packet_out_encap.py): dp-core and
OneSwitch over OVS against one plain OVS bridge, frame for frame."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ir import EncapNsh
from tandem.testing.packet_out_oracle import random_packet_out, run_dp, run_translation

pytestmark = [pytest.mark.ovs]


def test_every_drawn_packet_out_holds_the_pattern():
    import random

    rng = random.Random(1)
    for _ in range(50):
        _, acts, _ = random_packet_out(rng, [1, 2], encap=True)
        assert sum(type(a) is EncapNsh for a in acts) == 1


@pytest.mark.parametrize("run", [run_dp, run_translation], ids=["dp-core", "oneswitch over OVS"])
def test_random_packet_outs_with_the_pattern_run_as_in_open_vswitch(run):
    with OvsSandbox() as sb:
        r = run(sb, 200, seed=3, encap=True)
    assert r.packet_outs >= 200 and r.frames > 200
    assert not r.mismatches, r.mismatches[0]
