"""A TCP port write on a segment whose data offset is below 5 words or beyond the segment:
Open vSwitch 3.1 writes nothing (``odp_set_tcp`` needs ``dp_packet_get_tcp_payload``), and
neither does dp-core; a write to the IP address still updates the TCP checksum. Against one
plain OVS bridge, frames byte for byte."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_rule
from tandem.testing.dataplane_oracle import OvsOracle

RULES = [
    "priority=5,tcp,in_port=1,actions=set_field:99->tcp_src,mod_tp_dst:7,output:2",
    "priority=5,tcp,in_port=3,actions=set_field:10.9.9.9->ip_src,set_field:99->tcp_src,output:2",
]


def _tcp_frame(data_offset: int, payload: int = 30) -> bytes:
    ip = bytes.fromhex("4500") + (40 + payload).to_bytes(2, "big") + bytes.fromhex("000000004006") + bytes(2) \
        + bytes.fromhex("0a0000010a000002")
    tcp = bytes.fromhex("1234abcd0000000100000000") + bytes([data_offset << 4, 0x18]) + bytes.fromhex("ffff00000000")
    return bytes.fromhex("020000000002020000000001" "0800") + ip + tcp + bytes(range(payload))


OFFSETS = (0, 4, 5, 12, 13, 15)  # (13 words: 52 bytes of a 50-byte segment)


def test_dp_core_writes_tcp_ports_only_when_the_data_offset_fits():
    sw = Switch([1, 2, 3], 1, drop_malformed=False)
    sw.add_rules([parse_rule(RULES[0])])
    for d in OFFSETS:
        frame = _tcp_frame(d)
        ((port, out),) = sw.process(1, frame)
        written = out[34:38] == bytes.fromhex("00630007")
        assert port == 2 and written == (5 <= d <= 12), d
        assert out == frame if not written else out[38:] != frame[38:]  # (the checksum follows the ports)


@pytest.mark.ovs
def test_tcp_port_writes_by_data_offset_as_one_ovs_bridge():
    rules = [parse_rule(t) for t in RULES]
    packets = [(p, _tcp_frame(d)) for d in OFFSETS for p in (1, 3)]
    with OvsSandbox() as sb:
        res = OvsOracle(sb).compare(rules, [], packets, 1)
    assert res.mismatches == [] and res.frames_compared == len(packets)
