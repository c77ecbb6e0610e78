"""Meters in ovs-ofctl text: ``meter:N`` in a flow's actions and the
``add-meter`` syntax, round trips and precise errors; OVS reads the same text."""

import pytest

from tandem.rules.ir import ApplyActions, MeterInstruction, Output, Rule, RuleError
from tandem.rules.meters import OFPM_ALL, Meter, MeterBand
from tandem.rules.ofctl import format_rule, parse_rule
from tandem.rules.ofctl_lex import OfctlSyntaxError
from tandem.rules.ofctl_meter import format_meter, parse_meter


def test_meter_instruction_runs_first_and_round_trips():
    r = parse_rule("in_port=1,actions=meter:7,output:2")
    assert r.instructions == (MeterInstruction(7), ApplyActions((Output(2),)))
    assert r.meter == 7
    assert parse_rule(format_rule(r)) == r
    alone = parse_rule("in_port=1,actions=meter:7")
    assert alone.instructions == (MeterInstruction(7),) and "actions=meter:7" in format_rule(alone)
    with_goto = parse_rule("ip,actions=meter:3,write_metadata:0x1/0x1,goto_table:2")
    assert with_goto.meter == 3 and parse_rule(format_rule(with_goto)) == with_goto
    # the IR puts the meter first whatever order it is given in
    assert Rule(instructions=(ApplyActions((Output(2),)), MeterInstruction(4))).instructions[0] == MeterInstruction(4)


@pytest.mark.parametrize("text, col, words", [
    ("in_port=1,actions=output:2,meter:7", 28, "must come first"),
    ("in_port=1,actions=meter:0,output:2", 25, "meter ids are 1"),
    ("in_port=1,actions=meter:x", 25, "meter"),
    ("in_port=1,actions=meter:1,meter:2", 27, "given twice"),
])
def test_bad_meter_instructions(text, col, words):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text)
    assert e.value.column == col and words in str(e.value), str(e.value)


@pytest.mark.parametrize("text, meter", [
    ("meter=1,kbps,bands=type=drop,rate=1000", Meter(1, (MeterBand("drop", 1000),))),
    ("meter=2 pktps burst stats bands=type=drop,rate=10,burst_size=5",
     Meter(2, (MeterBand("drop", 10, 5),), pktps=True, burst=True, stats=True)),
    ("meter=3,kbps,bands=type=drop,rate=1000 type=dscp_remark,rate=500,prec_level=2",
     Meter(3, (MeterBand("drop", 1000), MeterBand("dscp_remark", 500, 0, 2)))),
])
def test_meter_text_round_trips(text, meter):
    assert parse_meter(text) == meter
    assert parse_meter(format_meter(meter)) == meter


def test_meter_all_only_for_deletes_and_dumps():
    assert parse_meter("meter=all", need_bands=False).meter_id == OFPM_ALL
    with pytest.raises(OfctlSyntaxError):
        parse_meter("meter=all,kbps,bands=type=drop,rate=1")


@pytest.mark.parametrize("text, col, words", [
    ("meter=1,bands=type=drop,rate=1000", 1, "unit is required"),
    ("meter=1,kbps", 13, "at least one band"),
    ("meter=1,kbps,bands=type=police,rate=1", 20, "band type 'police'"),
    ("meter=1,kbps,bands=rate=5", 20, "before type="),
    ("meter=1,kbps,bands=type=drop", 20, "rate= is required"),
    ("meter=1,kbps,bands=type=drop,rate=0", 20, "rate 0"),
    ("meter=1,kbps,bands=type=drop,rate=1,prec_level=1", 20, "only for dscp_remark"),
    ("meter=1,kbps,pktps,bands=type=drop,rate=1", 14, "one unit"),
    ("meter=1,kbsp,bands=type=drop,rate=1", 9, "did you mean kbps"),
    ("meter=0,kbps,bands=type=drop,rate=1", 1, "outside 1.."),
    ("kbps,bands=type=drop,rate=1", 1, "meter=ID is required"),
    ("meter=1,kbps,bands=type=drop,rate=lots", 30, "not a number"),
])
def test_meter_text_errors_name_the_place(text, col, words):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_meter(text, "m.txt", 4)
    assert str(e.value).startswith(f"m.txt:4:{col}: "), str(e.value)
    assert words in str(e.value), str(e.value)


def test_band_and_meter_validation():
    with pytest.raises(RuleError):
        MeterBand("drop", 0)
    with pytest.raises(RuleError):
        Meter(0xFFFF0001, (MeterBand("drop", 1),))
    with pytest.raises(RuleError):
        MeterInstruction(0)


@pytest.mark.ovs
def test_ovs_reads_the_same_meter_and_flow_text():
    from tandem.backends.ovs_sandbox import OvsSandbox

    m = parse_meter("meter=4,kbps,burst,stats,bands=type=drop,rate=2000,burst_size=30")
    r = parse_rule("priority=5,in_port=1,actions=meter:4,output:2")
    with OvsSandbox() as sb:
        sb.add_bridge("mt", [1, 2])
        sb.ofctl("add-meter", "mt", format_meter(m))
        sb.add_flows("mt", [format_rule(r)])
        dumped = sb.ofctl("dump-meters", "mt")
        assert "meter=4 kbps burst stats bands=" in dumped and "type=drop rate=2000 burst_size=30" in dumped, dumped
        flows = sb.dump_flows("mt")
        assert any("actions=meter:4,output:2" in f for f in flows), flows


# (meterctl) OpenFlow's slowpath and controller meters: ovs-ofctl reads and prints them by name only
@pytest.mark.parametrize("text, mid", [
    ("meter=slowpath,pktps,burst,stats,bands=type=drop,rate=1,burst_size=1", 0xFFFFFFFD),
    ("meter=controller,pktps,burst,stats,bands=type=drop,rate=2,burst_size=3", 0xFFFFFFFE),
])
def test_slowpath_and_controller_meters_round_trip_by_name(text, mid):
    m = parse_meter(text)
    assert m.meter_id == mid
    assert format_meter(m) == text
    with pytest.raises(OfctlSyntaxError, match="outside 1.."):
        parse_meter(text.replace(text.split(",")[0], f"meter={mid}"))


@pytest.mark.ovs
def test_ovs_reads_and_prints_the_slowpath_and_controller_meters_by_name():
    from tandem.backends.ovs_sandbox import OvsError, OvsSandbox

    with OvsSandbox() as sb:
        sb.add_bridge("mt", [1, 2])
        for name in ("slowpath", "controller"):
            sb.ofctl("add-meter", "mt", f"meter={name},pktps,burst,stats,bands=type=drop,rate=2,burst_size=3")
        dumped = sb.ofctl("dump-meters", "mt")
        for name in ("slowpath", "controller"):
            assert f"meter={name} pktps burst stats bands=\ntype=drop rate=2 burst_size=3" in dumped, dumped
        with pytest.raises(OvsError, match="invalid value for meter"):
            sb.ofctl("add-meter", "mt", "meter=4294967293,pktps,bands=type=drop,rate=2")
