"""What a replay source's pcap file holds, checked the way the emulator reads it.

Input: a path. Output: a ``Recording`` (frame count, bytes, span from the first
to the last timestamp, whole nanoseconds) or ``PcapFileError`` whose message
names what is wrong: a missing or unreadable file, a pcapng file, a bad magic,
a link type other than Ethernet, a truncated record or one timestamped before
its predecessor. Records count from 1, as Wireshark numbers frames, and each
error gives the record's byte offset. Accepts classic pcap with µs or ns
timestamps in either byte order, like ``dp_emu::pcap::parse_pcap`` (which
reads the file again when the emulator runs). Reads the file once; one pass
over its record headers; no state.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

HEADER = 24
RECORD_HEADER = 16
MAGICS = {0xA1B2C3D4: 1_000, 0xA1B23C4D: 1}  # magic -> ns per timestamp tick


class PcapFileError(ValueError):
    """The file cannot be replayed; the message says why (and where)."""


@dataclass(frozen=True)
class Recording:
    frames: int
    bytes: int
    span_ns: int  # last timestamp - first timestamp

    @property
    def mean_gap_s(self) -> float:
        """Mean time between consecutive frames (0 for fewer than two)."""
        return self.span_ns / 1e9 / (self.frames - 1) if self.frames > 1 else 0.0


def read_recording(path: Path) -> Recording:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PcapFileError("no such file") from None
    except IsADirectoryError:
        raise PcapFileError("is a directory, expected a pcap file") from None
    except OSError as e:
        raise PcapFileError(f"cannot read: {e.strerror}") from None
    return parse_recording(data)


def parse_recording(data: bytes) -> Recording:
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        raise PcapFileError("a pcapng file, not pcap: convert it with `editcap -F pcap IN OUT`")
    if len(data) < HEADER:
        raise PcapFileError(f"not a pcap file: {len(data)} bytes is shorter than the 24-byte file header")
    for order in "<>":
        tick_ns = MAGICS.get(struct.unpack(order + "I", data[:4])[0])
        if tick_ns is not None:
            break
    else:
        raise PcapFileError(f"not a pcap file: bad magic {struct.unpack('<I', data[:4])[0]:#010x} at byte 0")
    (linktype,) = struct.unpack(order + "I", data[20:24])
    if linktype != 1:
        raise PcapFileError(f"link type {linktype} at byte 20 is not Ethernet (1)")
    frames = total = 0
    first = prev = None
    off = HEADER
    while off < len(data):
        n = frames + 1
        if off + RECORD_HEADER > len(data):
            raise PcapFileError(f"record {n} at byte {off}: truncated header ({len(data) - off} of 16 bytes)")
        sec, frac, incl, _orig = struct.unpack(order + "IIII", data[off:off + RECORD_HEADER])
        left = len(data) - off - RECORD_HEADER
        if incl > left:
            raise PcapFileError(f"record {n} at byte {off}: claims {incl} bytes but only {left} remain (truncated file)")
        t = sec * 1_000_000_000 + frac * tick_ns
        first = t if first is None else first
        if prev is not None and t < prev:
            raise PcapFileError(f"record {n} at byte {off}: timestamp is {prev - t} ns before record {n - 1}'s;"
                                " replay needs records in time order (sort with `reordercap`)")
        prev = t
        frames += 1
        total += incl
        off += RECORD_HEADER + incl
    return Recording(frames, total, 0 if first is None else prev - first)
