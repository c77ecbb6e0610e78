"""tun_metadata0..63 and delete_field (rules/tun_metadata.py): ovs-ofctl text, the wire
(each header as long as the TLV map says; a shorter or longer one decodes to the same
number), the map checks the endpoint makes, and the generator's rules staying within
the oracle's map."""

from __future__ import annotations

import random
import struct

import pytest

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import tun_metadata as TM
from tandem.rules.generate import random_ruleset
from tandem.rules.generate_tun_metadata import ORACLE_TLV_MAP, TUN_METADATA_FEATURE
from tandem.rules.ir import DeleteField, FlowMod, Match, MoveField, RuleError, SetField, Subfield
from tandem.rules.ofctl import OfctlSyntaxError, format_rule, parse_rule
from tandem.testing.of13_fields import tun_metadata_items


def test_text_round_trip_and_the_nxm_spelling_of_delete_field():
    text = ("table=1,priority=9,tun_metadata0=0x12000000/0xff000000,actions=set_field:0x5->tun_metadata1,"
            "delete_field:tun_metadata0,output:1")
    assert format_rule(parse_rule(text)) == text
    assert parse_rule("actions=delete_field:NXM_NX_TUN_METADATA7[]").apply_actions == (DeleteField("tun_metadata7"),)
    for bad in ("actions=delete_field:reg0", "actions=delete_field:tun_metadata64"):
        with pytest.raises(OfctlSyntaxError, match="delete_field"):
            parse_rule(bad)
    with pytest.raises(RuleError):
        DeleteField("tun_src")


def test_headers_carry_the_mapped_length_and_decode_from_any_length():
    mod = FlowMod("add", parse_rule("priority=5,tun_metadata1=0x1234/0xffff,actions=load:0x7->NXM_NX_TUN_METADATA1[0..7],"
                                    "move:NXM_NX_TUN_METADATA1[0..15]->NXM_NX_REG0[0..15],delete_field:tun_metadata1"))
    with TM.encoding_lengths({1: 8}):
        wide = M.encode_flow_mod(1, mod)
    narrow = M.encode_flow_mod(1, mod)  # (no map: the fewest 4-byte words)
    head8 = struct.pack("!HBB", 1, 41 << 1 | 1, 16) + struct.pack("!QQ", 0x1234, 0xFFFF)
    assert head8 in wide and head8 not in narrow
    assert struct.pack("!HBB", 1, 41 << 1, 8) in wide  # (the move's and delete_field's operand headers)
    assert M.decode_flow_mod(wide[8:]).mod == M.decode_flow_mod(narrow[8:]).mod == mod
    # no bytes: 0, as ovs-ofctl sends tun_metadata0=0 (measured: OVS takes it); a masked one with no bytes, or a
    # length over 124 bytes, is refused as a bad length
    assert W.decode_match(struct.pack("!HH", 1, 8) + struct.pack("!HBB", 1, 40 << 1, 0))[0].get("tun_metadata0") == (0, None)
    for bad in (struct.pack("!HBB", 1, 40 << 1 | 1, 0), struct.pack("!HBB", 1, 40 << 1, 125) + bytes(125)):
        with pytest.raises(W.OFError) as e:
            W.decode_match(struct.pack("!HH", 1, 4 + len(bad)) + bad)
        assert e.value.code == W.OFPBMC_BAD_LEN


def test_delete_field_wire_form_and_its_errors():
    raw = TM.encode_delete_field(DeleteField("tun_metadata3"))
    assert raw == struct.pack("!HHIHHBB", 0xFFFF, 24, 0x2320, 50, 1, 43 << 1, 4) + bytes(10)
    assert TM.decode_delete_field(raw) == DeleteField("tun_metadata3")
    assert "bytes" in TM.decode_delete_field(raw[:16])
    assert "tun_metadata0..63 only" in TM.decode_delete_field(raw[:10] + struct.pack("!HBB", 1, 0, 4) + bytes(10))


def test_map_problems():
    lengths = {0: 4, 1: 16}
    assert TM.map_problem("tun_metadata0", lengths, 0xFFFFFFFF, 0xFF) is None
    assert "no TLV map" in TM.map_problem("tun_metadata2", lengths)
    assert "wider" in TM.map_problem("tun_metadata0", lengths, 0x1_0000_0000)
    assert "wider" in TM.map_problem("tun_metadata0", lengths, 0, 0x1_0000_0000)
    assert "beyond" in TM.map_problem("tun_metadata0", lengths, bits=(16, 32))
    assert TM.map_problem("tun_metadata1", lengths) is None  # (16 bytes: the OVS backend's)
    assert TM.map_problem("reg0", {}) is None
    assert TM.tlv_map_text({0: 4, 5: 12}) == "{class=0xffff,type=0,len=4}->tun_metadata0,{class=0xffff,type=5,len=12}->tun_metadata5"


def test_generated_rules_stay_within_the_oracle_map():
    rng = random.Random(15)
    rules = random_ruleset(rng, 400, [1, 2, 3, 4], 3, frozenset({"set_field", TUN_METADATA_FEATURE}))
    used = set()
    for r in rules:
        used |= tun_metadata_items(r)
        for key, fm in r.match:
            assert TM.map_problem(key, ORACLE_TLV_MAP, fm.value, fm.mask) is None
        for a in r.apply_actions:
            if isinstance(a, SetField):
                assert TM.map_problem(a.field, ORACLE_TLV_MAP, a.value, a.mask) is None
            if isinstance(a, MoveField):
                for sf in (a.src, a.dst):
                    assert TM.map_problem(sf.field, ORACLE_TLV_MAP, bits=(sf.ofs, sf.n_bits)) is None
    assert used == {"match:tun_metadata", "set:tun_metadata", "delete_field"}
    # without the feature no rule names an option
    plain = random_ruleset(random.Random(1), 300, [1, 2, 3, 4], 3)
    assert not any(tun_metadata_items(r) for r in plain)
    assert Match.of(tun_metadata0=5) != Match.of(tun_metadata0=(5, 0xFF))
    assert Subfield.whole("tun_metadata0").n_bits == 992  # (as Open vSwitch names NXM_NX_TUN_METADATA0[])
