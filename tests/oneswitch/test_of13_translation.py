"""OneSwitch translation against the virtual switch (both in OVS) for rules that
use the OpenFlow 1.3 fields and actions beyond the common set (MPLS push/pop
and TTL, tunnel_id, ND, SCTP ...): a bounded run of ``tandem bench of13_oracle``."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.topology import Topology
from tandem.testing.of13_oracle import run_translation

pytestmark = pytest.mark.ovs

TOPOS = {
    "k3": Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                         [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                         {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"}),
    "k2": Topology.build({"host": "host", "snic0": "snic"}, [("host:200", "snic0:7")],
                         {1: "host:1", 2: "host:2", 3: "host:3", 5: "snic0:1", 6: "snic0:2"}),
}
ITEMS = ("push_mpls", "pop_mpls", "dec_mpls_ttl", "set_nw_ttl", "set_queue", "set:tunnel_id", "match:tunnel_id",
         "set:ipv6_nd_target", "match:sctp_src", "set:arp_sha", "match:mpls_tc", "set:metadata",
         # Open vSwitch's extensions
         "match:pkt_mark", "set:reg", "match:ip_frag", "load", "move", "stack", "exit",
         "pop_queue", "sample", "dec_ttl_ids", "check_pkt_larger", "conjunction", "match:vlan_tci",
         "match:vlan_tci_untagged", "match:recirc_id", "match:tun", "set:tun",
         "multipath", "bundle", "bundle_load")  # (bundle rule sets run with ports down: of13_oracle._down_ports)
ITEMS += ("match:nsh", "set:nsh", "dec_nsh_ttl")  # nsh
ITEMS += ("encap",)  # encap: encap(nsh(md_type=1)), NSH set_fields, encap(ethernet)
ITEMS += ("decap",)  # decap: decap(),decap() on eth_type=0x894f,nsh_np=3
ITEMS += ("bundle_flood",)  # bundle_flood: active_backup bundles with FLOOD/ALL members
ITEMS += ("long:tun_metadata",)  # long:tun_metadata: options mapped 16..124 bytes (the OVS backend's only)


def test_translation_of_of13_rules_forwards_like_the_virtual_switch():
    with OvsSandbox() as sb:
        res = run_translation(sb, TOPOS, ITEMS, per_item=40, seed=1, set_size=40, per_port=6)
    assert all(r.rules >= 40 for r in res.values())
    assert sum(r.frames for r in res.values()) > 100
    bad = [m for r in res.values() for m in r.mismatches]
    assert not bad, "\n".join(bad[:3])


def assert_item_runs_as_ovs(item: str, per_item: int = 150, seed: int = 4) -> None:
    """A bounded run of one of13_oracle item, dp-core and the translation, 0 mismatches
    (the clone items' tests: test_clone_in_port.py, test_clone_lookup.py, ...)."""
    from tandem.testing.of13_oracle import run_dp

    with OvsSandbox() as sb:
        (dp,) = run_dp(sb, (item,), per_item=per_item, seed=seed, set_size=75, packets_per_set=60).values()
        (tr,) = run_translation(sb, TOPOS, (item,), per_item=per_item, seed=seed, set_size=75, per_port=12).values()
    for r in (dp, tr):
        assert r.item_rules >= per_item and r.frames > 100
        assert not r.mismatches, "\n".join(r.mismatches[:3])
