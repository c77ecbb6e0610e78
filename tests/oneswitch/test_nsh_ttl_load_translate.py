"""Loads into nsh_ttl (Open vSwitch's 8-bit subfield: rules/nsh_ttl_load.py), translated:
the whole virtual pipeline runs on the packet's ingress switch, so the flow's bits 6
and 7, which no frame carries, are read there by the later tables (matches, moves,
``dec_nsh_ttl``); the PCIe crossing carries the frame, whose 6-bit TTL the far switch
only delivers. The OVS oracle item ``nsh_ttl_loads`` (a bounded run here; ``tandem bench
of13_oracle -- --items nsh_ttl_loads`` for the full count)."""

import pytest

from tandem.oneswitch.translate import translate
from tandem.rules.ir import ApplyActions, SetField, WriteActions
from tandem.rules.ofctl import parse_rule

from test_of13_translation import TOPOS, assert_item_runs_as_ovs


def _loads(rules) -> list[SetField]:
    return [a for r in rules for i in r.instructions if isinstance(i, (ApplyActions, WriteActions))
            for a in i.actions if isinstance(a, SetField) and a.field == "nsh_ttl"]


def test_the_load_and_the_later_table_reading_bits_6_and_7_stay_on_the_ingress_switch():
    rules = [parse_rule("table=0,in_port=1,eth_type=0x894f,actions=load:0xc5->NXOXM_NSH_TTL[],goto_table:1"),
             parse_rule("table=1,eth_type=0x894f,actions=move:NXOXM_NSH_TTL[6..7]->NXM_OF_ETH_SRC[0..1],output:3")]
    tr = translate(rules, TOPOS["k3"])  # (virtual port 1 on the host, 3 on snic0)
    assert _loads(tr.per_switch["host"]) == [SetField("nsh_ttl", 0xC5, 0xFF)]
    assert not _loads(tr.per_switch["snic0"]) and not _loads(tr.per_switch["snic1"])


@pytest.mark.ovs
def test_random_nsh_ttl_loads_run_as_ovs():
    assert_item_runs_as_ovs("nsh_ttl_loads", per_item=400)  # (NSH frames: fewer leave than of other items)
