"""What the emulator backend's dp-core gets of rules on long tun_metadata options: a set_field
past bit 127 as eight 128-bit limbs (dataplane/tun_wide.py), and the dp-core oracle's matches
narrowed to bits 0..127 (generate_tun_metadata.emu_matches)."""

from tandem.dataplane.convert import action_args
from tandem.rules.generate_tun_metadata import emu_matches
from tandem.rules.ir import FieldMatch, SetField
from tandem.rules.ofctl import parse_rule


def test_a_set_field_past_bit_127_crosses_as_limbs_the_others_as_before():
    assert action_args(SetField("tun_metadata3", 5)) == ("set_field", "tun_metadata3", 5)
    assert action_args(SetField("tun_metadata3", 1 << 127, 1 << 127)) == ("set_masked", "tun_metadata3", 1 << 127, 1 << 127)
    kind, i, value, mask = action_args(SetField("tun_metadata3", 0xAB << 984 | 7))
    assert (kind, i) == ("set_tun_metadata_wide", 3)
    assert value == [7, 0, 0, 0, 0, 0, 0, 0xAB << 88] and mask == [(1 << 128) - 1] * 7 + [(1 << 96) - 1]
    _, _, value, mask = action_args(SetField("tun_metadata2", 0x12 << 128, 0xFF << 128))  # (a load of bits 128..135)
    assert value == [0, 0x12] + [0] * 6 and mask == [0, 0xFF] + [0] * 6


def test_the_dp_oracle_narrows_long_option_matches_to_bits_0_to_127():
    rule = parse_rule(f"table=1,priority=5,tun_metadata3=0x{bytes(range(1, 125)).hex()},"
                      f"tun_metadata2=0x5/0x{'ff' + '00' * 15},tun_metadata4=0x5/0x1{'00' * 16},reg0=7,actions=output:1")
    (got,) = emu_matches([rule])
    assert got.match.get("tun_metadata3") == FieldMatch(int.from_bytes(bytes(range(109, 125)), "big"), (1 << 128) - 1)
    assert got.match.get("tun_metadata2") == rule.match.get("tun_metadata2")  # (its mask names bits 120..127 only)
    assert got.match.get("tun_metadata4") is None  # (its mask named bit 128 only)
    assert got.match.get("reg0") == rule.match.get("reg0") and got.instructions == rule.instructions
    short = parse_rule("priority=5,tun_metadata0=0x5,actions=output:1")  # (not a LONG_TLV_MAP option: as it was)
    assert emu_matches([short]) == [short]
