"""PACKET_OUTs whose check_pkt_larger, bundle and output(port=P,max_len=N) follow a write of a
tun_metadata option mapped longer than 16 bytes (``testing/packet_out_tun_long.py``): dp-core,
which the endpoint works them out on, sends the frames one Open vSwitch 3.1 bridge sends
(a bounded run of ``tandem bench packet_out_oracle --only dp --tun-long``)."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.packet_out_oracle import run_dp

pytestmark = [pytest.mark.ovs]


@pytest.mark.parametrize("mode", [{}, {"bundles": True}, {"truncs": True}], ids=["clones", "bundles", "truncs"])
def test_packet_outs_after_a_long_option_run_in_dp_core_as_in_open_vswitch(mode):
    with OvsSandbox() as sb:
        r = run_dp(sb, 60, seed=3, tun_long=True, **mode)
    assert r.mismatches == []
    assert r.packet_outs == 60 and r.frames > 0
    assert r.checks > 0 and (r.bundles > 0 if mode.get("bundles") else r.truncs > 0 if mode.get("truncs") else r.clones > 0)
