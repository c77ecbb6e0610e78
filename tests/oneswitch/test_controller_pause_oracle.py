"""``controller(pause)`` through OneSwitch's translation against one OVS bridge (a bounded run of
``tandem bench of13_oracle --items controller_pause --only translation``): every bridge's monitor
resumes each paused packet-in, so the packet-ins and the frames the physical continuations send
after the pause must be the bridge's. Without the physical resumes (the reference bridge's only)
the same rule sets mismatch: the frames after a pause are compared. dp-core: refused (the item is
translation-only, of13_fields.TRANSLATION_ONLY_ITEMS)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing import oneswitch_oracle
from tandem.testing.of13_oracle import run_dp, run_translation
from test_of13_translation import TOPOS

pytestmark = pytest.mark.ovs
ARGS = dict(per_item=40, seed=3, set_size=20, per_port=40)


def test_paused_packets_resume_as_on_one_ovs_bridge(monkeypatch):
    with OvsSandbox() as sb:
        tr = run_translation(sb, TOPOS, ["controller_pause"], **ARGS)["controller_pause"]
        assert run_dp(sb, ["controller_pause"], per_item=10)["controller_pause"].rules == 0  # (not run on dp-core)
        monitor = oneswitch_oracle.PacketInMonitor.__init__
        monkeypatch.setattr(oneswitch_oracle.PacketInMonitor, "__init__", lambda self, sb, bridge, resume=False: monitor(
            self, sb, bridge, resume and bridge.startswith("vref")))  # (the reference bridge's resumes only)
        unresumed = run_translation(sb, TOPOS, ["controller_pause"], **ARGS)["controller_pause"]
    assert tr.item_rules >= 40 and tr.packet_ins > 100 and tr.frames > 100, tr
    assert not tr.mismatches, "\n".join(tr.mismatches[:3])
    assert unresumed.mismatches
