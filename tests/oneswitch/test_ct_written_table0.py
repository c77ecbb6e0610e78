"""``ct(table=0)`` written into the action set, as OneSwitch translates it: as a
written ``resubmit(,0)`` is (docs/oneswitch.md section 6, "Connection tracking",
and section 7), ``set_field:0->pkt_mark, ct(table=0)`` among the set's set-fields,
with the mark ledger's refusals (also ``test_table0_lookup_translate.py``: it and a
use of the mark refuse each other). Pure (no OVS); the OVS oracles: the focus
``write_ct_table0`` in ``tests/dataplane/test_ct_focus_oracle.py`` and ``tandem
bench ct_oracle -- --focus write_ct_table0``.

Topology: virtual ports 1, 2 on the host, 3 on snic0, 4 on snic1."""

import pytest

from test_resubmit_output_reg_translate import TOPO, rule
from tandem.oneswitch.topology import Topology
from tandem.oneswitch.translate import Compiler, TranslationError, translate
from tandem.rules.ir import Ct, CtClear, Output, SetField, Subfield, WriteActions

ZERO = SetField("pkt_mark", 0)
CT0 = Ct(table=0, zone_src=Subfield("reg0", 0, 16))


def written(r, sw="host"):
    (c,) = [p for p in translate([r], TOPO).per_switch[sw] if p.table == r.table and p.priority == r.priority]
    (w,) = [i for i in c.instructions if type(i) is WriteActions]
    return w.actions


def test_written_ct_into_table_0_resets_the_mark_among_the_sets_set_fields():
    assert written(rule(write=[CT0], table=1, eth_type=0x0800)) == (ZERO, CT0)
    assert written(rule(write=[CtClear(), CT0], table=2, eth_type=0x0800)) == (CtClear(), ZERO, CT0)
    # beside an output (which wins over ct) the output's flow id goes last, after the reset
    acts = written(rule(write=[CT0, Output(3)], table=1, in_port=1, eth_type=0x0800))
    assert acts[:2] == (ZERO, CT0) and acts[-1] == Output(100)
    assert acts[-2].field == "pkt_mark" and acts[-2].value != 0


def test_written_ct_into_a_later_table_is_left_as_it_is():
    assert written(rule(write=[Ct(table=2)], table=1, eth_type=0x0800)) == (Ct(table=2),)


def test_a_written_ct_into_table_0_after_a_written_flow_id_is_refused():
    """Its reset runs even when the output wins: after an earlier table's flow id it
    would send that output across PCIe with mark 0."""
    early = rule(write=[Output(3)], table=1, in_port=1, goto=2)
    late = rule(write=[CT0], table=2, eth_type=0x0800)
    comp = Compiler(TOPO)
    comp.add(early)
    with pytest.raises(TranslationError, match=r"lookup in table 0 \(a resubmit or ct\(table=0\)\).*would clear"):
        comp.add(late)
    comp = Compiler(TOPO)  # the other way round
    comp.add(late)
    with pytest.raises(TranslationError, match="would clear"):
        comp.add(early)
    single = Topology.build({"h": "host"}, [], {1: "h:1", 2: "h:2"})  # one switch sets no flow id
    translate([early, late], single)
