"""Open vSwitch's controller(reason=…,max_len=…,id=…,userdata=…) against OVS: what a
controller receives (in_port, table, cookie, frame, pipeline state, reason, userdata)
from OneSwitch's translation and from dp-core must be what one OVS bridge sends
(a bounded run of ``tandem bench of13_oracle --items controller``)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.of13_oracle import run_dp, run_translation
from test_of13_translation import TOPOS

pytestmark = pytest.mark.ovs


def test_controller_packet_ins_match_ovs_through_translation_and_dp_core():
    with OvsSandbox() as sb:
        tr = run_translation(sb, TOPOS, ["controller"], per_item=60, seed=2, set_size=30, per_port=6)["controller"]
        dp = run_dp(sb, ["controller"], per_item=60, seed=2, set_size=30, packets_per_set=40)["controller"]
    for r in (tr, dp):
        assert r.item_rules >= 60 and r.packet_ins > 20, r
        assert not r.mismatches, "\n".join(r.mismatches[:3])
