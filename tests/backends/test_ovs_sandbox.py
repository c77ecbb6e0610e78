"""The private OVS sandbox: bridges, patch ports, flow loading, injection, capture."""

from tandem.backends.ovs_sandbox import OvsSandbox, read_pcap

FRAME = bytes.fromhex("020000000002" "020000000001" "0800" "4500001c00000000401100000a0000010a000002" "04d2003500080000")


def test_sandbox_forwards_across_patch_ports_and_cleans_up():
    with OvsSandbox() as ovs:
        ovs.add_bridge("a", ports=[1])
        ovs.add_bridge("b", ports=[2])
        ovs.add_patch("a", 100, "b", 100)
        ovs.add_flows("a", ["in_port=1,actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:100"])
        ovs.add_flows("b", ["in_port=100,actions=output:2"])
        assert len(ovs.dump_flows("a")) == 1
        ovs.inject("a", 1, [FRAME, FRAME])
        out = ovs.take_all_output()
        sent = out[("b", 2)]
        assert len(sent) == 2
        assert sent[0][12:16] == bytes.fromhex("81000005")
        assert sent[0][:12] + sent[0][16:] == FRAME
        assert out[("a", 1)] == []
        # A second take returns only new frames.
        assert ovs.take_output("b", 2) == []
        d = ovs.dir
    assert not d.exists()


def test_read_pcap_missing_file_is_empty(tmp_path):
    assert read_pcap(tmp_path / "nope.pcap") == []
