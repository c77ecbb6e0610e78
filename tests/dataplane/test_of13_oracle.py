"""The emulator's switch (dp-core) against one OVS bridge for every OpenFlow 1.3
field and action beyond the common set: a bounded run of the per-item oracle
(``tandem bench of13_oracle`` runs >= 2,000 rules per item)."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.of13_oracle import ITEMS, run_dp
from tandem.testing.of13_fields import TRANSLATION_ONLY_ITEMS

ITEMS = [i for i in ITEMS if i not in TRANSLATION_ONLY_ITEMS]  # (items the emulator backend refuses: controller_pause)

pytestmark = pytest.mark.ovs


def test_every_of13_item_matches_ovs_byte_for_byte():
    with OvsSandbox() as sb:
        res = run_dp(sb, ITEMS, per_item=12, seed=1, set_size=12, packets_per_set=15)
    assert set(res) == set(ITEMS)
    assert all(r.rules >= 12 for r in res.values())
    assert sum(r.frames for r in res.values()) > 100  # packets really leave ports
    bad = [m for r in res.values() for m in r.mismatches]
    assert not bad, "\n".join(bad[:3])
