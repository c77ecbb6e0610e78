"""OVS-POF-TC Figs. 4/5: the two POF-FTs of §IV-A run on the emulated sNIC and
produce exactly the Fig. 5 packets; `dump` shows both in_hw."""

from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from tandem.pof_offload import experiments as E
from tandem.pof_offload.scenario import run_scenario
from tandem.pof_offload.system import HOST_PORT

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pof_offload" / "fig4.yaml"


def _expected_set() -> bytes:
    # built independently by scapy with the new destination (scapy computes both checksums)
    p = Ether(src="00:15:4d:00:00:01", dst="00:15:4d:00:00:02") / IP(src="2.2.2.3", dst="10.2.2.2", ttl=64) / UDP(
        sport=23130, dport=23130)
    return bytes(p / (b"\x00" * (60 - len(p))))


def _expected_add(orig: bytes) -> bytes:
    return orig[:14] + bytes.fromhex("0a0a0908") + orig[14:]


def test_fig5_packets_byte_for_byte_on_the_snic_path():
    s = E.fig4_system()
    assert s.fts["ft1"].in_hw and s.fts["ft2"].in_hw
    sent = E.fig5_traffic()
    got = [s.send(f, 1) for f in sent]
    assert all(path == "hw" for path, _, _ in got)  # never crossed to the host
    for frame, (_, outs, drops) in zip(sent, got):
        assert drops == [] and len(outs) == 1 and outs[0][0] == 5
        if len(frame) == 60:
            assert outs[0][1] == _expected_set()
            assert IP(outs[0][1][14:]).dst == "10.2.2.2"
        else:
            assert len(outs[0][1]) == 128  # Fig. 5(a): 124 B + the 4-byte field
            assert outs[0][1] == _expected_add(frame)
    # the host's kernel pipeline processed nothing; per-path counters in the dump
    kc, nc = s.kernel.counters(), s.snic.counters()
    assert kc["table.0.lookups"] == 0 and kc[f"port.{HOST_PORT}.rx_packets"] == 0
    assert nc["port.1.rx_packets"] == 8 and nc["port.5.tx_packets"] == 8 and nc[f"port.{HOST_PORT}.tx_packets"] == 0
    st = {i: s.stats(ft) for i, ft in s.fts.items()}
    assert st["ft1"]["hw"] == (6, 360) and st["ft1"]["kernel"] == (0, 0)
    assert st["ft2"]["hw"] == (2, 248) and st["ft2"]["kernel"] == (0, 0)
    dump = s.dump()
    blocks = dump.split("filter protocol")[1:]
    assert len(blocks) == 2 and all("\n  in_hw" in b for b in blocks)
    assert "match <208,32,0x02020203>" in blocks[0] and "set_field:240/32=0x0a020202,output:5" in blocks[0]
    assert "match <208,32,0x02020202>" in blocks[1] and "add_field:112/32=0x0a0a0908,output:5" in blocks[1]
    assert "Sent 360 bytes 6 pkt (sNIC hardware path)" in blocks[0]
    assert "Sent 0 bytes 0 pkt (kernel path)" in blocks[1]


def test_without_offload_the_same_packets_cross_to_the_kernel():
    s = E.fig4_system(policy="fifo")
    s.capacity = 0
    for i in list(s.fts):
        s.delete(i)
    from tandem.pof_offload.system import PofFt
    s.add(PofFt("k", E.FIG4_FT1.match, E.FIG4_FT1.actions))
    s.advance(1.0)
    assert not s.fts["k"].in_hw
    frame = E.fig5_traffic()[1]
    path, outs, _ = s.send(frame, 1)
    assert path == "kernel" and outs == [(5, _expected_set())]
    assert s.stats(s.fts["k"])["kernel"] == (1, 60)
    # a packet no POF-FT matches: explicit drop on the kernel path
    path, outs, drops = s.send(E.fig5_traffic()[0], 1)
    assert path == "kernel" and outs == [] and drops


def test_scenario_run_writes_the_fig5_packets_to_pcap(tmp_path):
    s = run_scenario(EXAMPLE, tmp_path)
    pk = [bytes(p) for p in rdpcap(str(tmp_path / "egress.pcap"))]
    assert len(pk) == 8
    a_orig = E.udp_frame("2.2.2.3", "2.2.2.1", 60)
    b_orig = E.udp_frame("2.2.2.2", "2.2.2.1", 124)
    assert sorted(pk) == sorted([_expected_set()] * 4 + [_expected_add(b_orig)] * 4)
    assert a_orig not in pk
    assert all(ft.in_hw for ft in s.fts.values())
    assert (tmp_path / "state.json").exists() and (tmp_path / "throughput.csv").exists()
    assert HOST_PORT not in s.ports


def test_dump_shows_a_pending_offload_as_not_in_hw_until_tau_add():
    from tandem.pof_offload.system import OffloadSystem, PofFt
    s = OffloadSystem(policy="actions")
    s.add(PofFt(E.FIG4_FT1.id, E.FIG4_FT1.match, E.FIG4_FT1.actions))
    assert "\n  not_in_hw (pending: offload)\n" in s.dump()
    # a packet now still takes the kernel path (the kernel holds every POF-FT)
    path, outs, _ = s.send(E.fig5_traffic()[1], 1)
    assert path == "kernel" and outs == [(5, _expected_set())]
    s.advance(s.model.tau_add_s)
    assert "\n  in_hw\n" in s.dump()
    assert "Sent 60 bytes 1 pkt (kernel path)" in s.dump()
