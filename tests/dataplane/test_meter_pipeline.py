"""dp-core meters through the pipeline, driven with modelled timestamps:
a 1 Mb/s drop band holds a 10 Mb/s flow to 1 Mb/s, the meter's counters
count every dropped packet and byte, a dscp_remark band remarks AF DSCPs,
and deleting a meter deletes the rules that use it (OpenFlow 1.3 §5.7)."""

import pytest

from tandem._dp import Pipeline
from tandem.dataplane.convert import meter_args, rule_args
from tandem.rules.meters import Meter, MeterBand
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame


def _pipeline(meter: Meter, rule: str) -> Pipeline:
    p = Pipeline(2)
    for port in (1, 2):
        p.add_port(port)
    p.meter_mod("add", **meter_args(meter))
    p.flow_mod({"command": "add", **rule_args(parse_rule(rule))})
    return p


@pytest.mark.parametrize("pkt_bytes", [1250, 64, 1500])
def test_drop_band_holds_ten_megabits_to_one(pkt_bytes):
    # burst 20 kbit: more than one 1500-byte packet (12 kbit), or none could ever pass
    p = _pipeline(Meter(1, (MeterBand("drop", 1000, 20),), burst=True, stats=True), "in_port=1,actions=meter:1,output:2")
    frame = build_frame(eth_type=0x0800, ip_proto=17, udp_dst=9, payload=bytes(pkt_bytes - 42))
    assert len(frame) == pkt_bytes
    gap_ns = pkt_bytes * 8 * 1e9 / 10e6  # 10 Mb/s offered
    seconds = 5
    n = int(seconds * 1e9 / gap_ns)
    passed = dropped = 0
    for i in range(n):
        p.set_now_ns(int(i * gap_ns))
        fates = p.process(1, frame)
        if fates[0][0] == "output":
            passed += 1
        else:
            assert fates[0][:2] == ("drop", "meter")
            dropped += 1
    rate = passed * pkt_bytes * 8 / seconds
    assert abs(rate - 1e6) / 1e6 <= 0.05, rate
    pin, bin_, bands, _ = p.meter_stats(1)
    assert (pin, bin_) == (n, n * pkt_bytes)
    assert bands == [(dropped, dropped * pkt_bytes)]
    assert dict(p.counters())["drop.meter"] == dropped


def test_below_the_rate_nothing_is_dropped():
    p = _pipeline(Meter(1, (MeterBand("drop", 1000, 10),), burst=True), "in_port=1,actions=meter:1,output:2")
    frame = build_frame(eth_type=0x0800, ip_proto=17, payload=bytes(1208))  # 1250 bytes
    for i in range(1000):  # 0.9 Mb/s
        p.set_now_ns(int(i * 1250 * 8 * 1e9 / 0.9e6))
        assert p.process(1, frame)[0][0] == "output"
    assert p.meter_stats(1)[2] == [(0, 0)]


def test_dscp_remark_band_raises_drop_precedence_of_excess():
    p = _pipeline(Meter(2, (MeterBand("dscp_remark", 10, 2, 1),), pktps=True, burst=True),
                  "in_port=1,ip,actions=meter:2,output:2")
    af11 = build_frame(eth_type=0x0800, ip_proto=17, ip_dscp=10, payload=bytes(20))
    outs = [p.process(1, af11) for _ in range(4)]  # all at t=0: 2 within the burst, 2 beyond
    dscps = [o[0][2][15] >> 2 for o in outs]
    assert dscps == [10, 10, 12, 12]  # AF11 -> AF12 for the excess; forwarded, not dropped
    assert p.meter_stats(2)[2] == [(2, 2 * len(af11))]


def test_unknown_meter_is_refused_and_deleting_a_meter_deletes_its_rules():
    p = Pipeline(1)
    p.add_port(1)
    p.add_port(2)
    with pytest.raises(ValueError, match="meter 9 does not exist"):
        p.flow_mod({"command": "add", **rule_args(parse_rule("actions=meter:9,output:2"))})
    p.meter_mod("add", **meter_args(Meter(9, (MeterBand("drop", 5),))))
    p.flow_mod({"command": "add", **rule_args(parse_rule("actions=meter:9,output:2"))})
    p.flow_mod({"command": "add", **rule_args(parse_rule("priority=1,actions=output:2"))})
    assert p.n_rules() == 2
    with pytest.raises(ValueError, match="exists"):
        p.meter_mod("add", **meter_args(Meter(9, (MeterBand("drop", 5),))))
    assert p.meter_mod("delete", 9) is True
    assert p.n_rules() == 1 and p.meter_ids() == []


def test_meter_behind_a_goto_runs_for_every_packet_of_a_cached_path():
    """The path cache must not skip a metered rule: same frame, same path, meter each time."""
    p = _pipeline(Meter(3, (MeterBand("drop", 8, 8),), burst=True), "table=1,actions=meter:3,output:2")
    p.flow_mod({"command": "add", **rule_args(parse_rule("in_port=1,actions=write_metadata:0x1,goto_table:1"))})
    frame = build_frame(eth_type=0x0800, ip_proto=17, payload=bytes(458))  # 500 bytes; burst 8 kbit = 1000 bytes
    kinds = [p.process(1, frame)[0][0] for _ in range(4)]  # all at t=0
    assert kinds == ["output", "output", "drop", "drop"]
    p.set_now_ns(500_000_000)  # 8 kb/s refills 500 bytes in 0.5 s
    assert [p.process(1, frame)[0][0] for _ in range(2)] == ["output", "drop"]
    assert p.meter_stats(3)[:2] == (6, 3000)
