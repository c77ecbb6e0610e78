"""output:NORMAL translated onto the emulator backend (dp-core switches run the host's
NORMAL, the PCIe link ports no-flood), against one Open vSwitch bridge: frames out of
every virtual port, and the host's MAC table read back in virtual ports."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.learn_oracle import TOPOS
from tandem.testing.normal_emu_oracle import run_normal_emu_oracle


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed", [("k3", 3), ("chain", 4)])
def test_normal_on_the_emulator_backend_matches_one_ovs_bridge(topo_name, seed):
    with OvsSandbox() as sb:
        r = run_normal_emu_oracle(sb, TOPOS[topo_name], seed, 40, 80)
    assert not r.traffic.mismatches, "\n".join(map(str, r.traffic.mismatches[:3]))
    assert not r.learned_mismatches, "\n".join(r.learned_mismatches)
    assert r.learning_rules >= 15 and r.traffic.packets == 80 and r.traffic.outputs > 80
    assert len(r.traffic.expected_by_port) >= 3 and r.learned_ref >= 3
