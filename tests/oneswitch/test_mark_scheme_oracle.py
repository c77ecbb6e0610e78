"""The packet mark under OneSwitch: virtual rules set and match pkt_mark and the
registers across tables while PCIe outputs put flow ids in the same mark, in the
middle of action lists. The OVS oracle compares frames and packet-ins (whose
match lists the mark and the registers) with the virtual switch; and it must
catch a translation that leaves the flow id in the mark (docs/oneswitch.md §2)."""

from __future__ import annotations

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.compiler import Compiler
from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import translate
from tandem.rules.generate import ALL_FEATURES, NX_FEATURES
from tandem.rules.ir import OFPP_CONTROLLER, ApplyActions, Match, Output, Rule
from tandem.testing.oneswitch_oracle import Oracle, oracle_ruleset, random_packets

pytestmark = pytest.mark.ovs

K3 = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                    [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                    {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"})
FEATURES = ALL_FEATURES | NX_FEATURES


def _run(sb: OvsSandbox, seeds: range) -> tuple[int, int, int, int]:
    """(rules, frames out, packet-ins, mismatches of frames or packet-ins) over rule sets of 102."""
    rules_n = frames = pins = bad = 0
    for seed in seeds:
        rng = random.Random(f"mark{seed}")
        rules, groups = oracle_ruleset(rng, 100, K3, tables=3, n_groups=2, features=FEATURES)
        # table-miss rules to the controller in the later tables: packet-ins that list the
        # mark and registers the earlier tables left (as a controller's learning pipeline has)
        rules += [Rule(Match(), (ApplyActions((Output(OFPP_CONTROLLER),)),), table=t, priority=0) for t in (1, 2)]
        with Oracle(sb, K3, packet_in=True) as o:
            o.load_virtual(rules, groups)
            o.load_translation(translate(rules, K3, groups))
            rep = o.compare(random_packets(rng, rules, K3, per_port=25, of13=True))
        rules_n += len(rules)
        frames += rep.outputs
        pins += rep.packet_ins
        bad += len(rep.mismatches) + len(rep.packet_in_mismatches)
    return rules_n, frames, pins, bad


def test_virtual_marks_and_registers_survive_pcie_outputs(monkeypatch):
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        rules, frames, pins, bad = _run(sb, range(3))
        assert rules == 306 and frames > 200 and pins > 30
        assert bad == 0
        # the same workload with the flow id left in the mark (no save/restore) must fail
        bare = Compiler.out_entry
        monkeypatch.setattr(Compiler, "out_entry", lambda self, sw, port, max_len, what, _: bare(self, sw, port, max_len, what, True))
        assert _run(sb, range(3))[3] > 0
