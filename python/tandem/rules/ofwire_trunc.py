"""Open vSwitch's NXAST_OUTPUT_TRUNC on the wire <-> IR ``OutputTrunc``.

``nx_action_output_trunc``: the Nicira experimenter header (subtype 39), the
port as a 16-bit OpenFlow 1.0 number (0xff00 and up: the reserved ports) and
max_len in 32 bits, 16 bytes in all. As Open vSwitch refuses them: a port in
0xff00..0xfff7 (``OFPBAC_BAD_OUT_PORT``), max_len below 14 (``BAD_ARGUMENT``),
another length (``BAD_LEN``). Used by ``ofwire``. Pure.
"""

from __future__ import annotations

import struct

from tandem.rules.ofwire_nx import NxError
from tandem.rules.ir import OutputTrunc

NXAST_OUTPUT_TRUNC = 39
_NX_VENDOR_ID = 0x0000_2320
_BAD_ACTION = 2
_BAD_LEN, _BAD_OUT_PORT, _BAD_ARGUMENT = 1, 4, 5


def is_output_trunc(body: bytes) -> bool:
    """Is this experimenter action (its whole bytes) Nicira's output_trunc?"""
    return len(body) >= 10 and struct.unpack_from("!IH", body, 4) == (_NX_VENDOR_ID, NXAST_OUTPUT_TRUNC)


def encode_output_trunc(a: OutputTrunc) -> bytes:
    port = a.port - 0xFFFF_0000 if a.port >= 0xFFFF_FF00 else a.port  # a 16-bit OpenFlow 1.0 port
    return struct.pack("!HHIHHI", 0xFFFF, 16, _NX_VENDOR_ID, NXAST_OUTPUT_TRUNC, port, a.max_len)


def decode_output_trunc(body: bytes) -> OutputTrunc:
    if len(body) != 16:
        raise NxError(_BAD_ACTION, _BAD_LEN, f"output_trunc of {len(body)} bytes, expected 16")
    port, max_len = struct.unpack_from("!HI", body, 10)
    if 0xFF00 <= port < 0xFFF8:
        raise NxError(_BAD_ACTION, _BAD_OUT_PORT, f"output_trunc to port {port:#x}")
    if max_len < 14:
        raise NxError(_BAD_ACTION, _BAD_ARGUMENT, f"output_trunc max_len {max_len} < 14 (the Ethernet header)")
    return OutputTrunc(port + 0xFFFF_0000 if port >= 0xFF00 else port, max_len)
