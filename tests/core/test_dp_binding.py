"""The Rust extension is built and exposes dp-core's frame parser."""

import pytest

from tandem import _dp


def _udp_frame() -> bytes:
    eth = bytes.fromhex("020000000002" "020000000001" "0800")
    ip = bytes.fromhex("4500001c00000000401100000a0000010a000002")
    udp = bytes.fromhex("04d2003500080000")
    return eth + ip + udp


def test_parse_frame_returns_header_fields():
    h = _dp.parse_frame(_udp_frame())
    assert h["eth_src"] == "02:00:00:00:00:01"
    assert h["eth_dst"] == "02:00:00:00:00:02"
    assert h["eth_type"] == 0x0800
    assert (h["ipv4_src"], h["ipv4_dst"]) == ("10.0.0.1", "10.0.0.2")
    assert (h["ip_proto"], h["l4_src"], h["l4_dst"]) == (17, 1234, 53)
    assert h["truncated"] is None


def test_parse_frame_reports_truncation_and_runts():
    assert _dp.parse_frame(_udp_frame()[:30])["truncated"] == "ipv4"
    with pytest.raises(ValueError, match="runt frame"):
        _dp.parse_frame(b"\x00" * 10)
