"""OpenFlow 1.3 wire codec, meters: METER_MOD, meter bands, and the bodies of
the METER, METER_CONFIG and METER_FEATURES multiparts (OpenFlow 1.3.5 §7.3.4.4,
§7.3.5.12–14). The meter instruction itself is in ``ofwire.py``.

Pure functions between ``rules.meters`` and bytes; decoding raises
``OFError`` with the error a switch must answer (``METER_MOD_FAILED/*``).
State: none. Cost: linear in the number of bands.
"""

from __future__ import annotations

import struct

from tandem.rules.ir import RuleError
from tandem.rules.meters import (
    BAND_TYPES, METER_MOD_COMMANDS, OFPM_ALL, OFPM_MAX, OFPM_VIRTUAL, Meter, MeterBand, MeterFeatures, MeterMod, MeterStats,
)
from tandem.rules.ofwire import OFError, OFPET_METER_MOD_FAILED, OFPT_METER_MOD, header, need

# METER_MOD_FAILED codes
(OFPMMFC_UNKNOWN, OFPMMFC_METER_EXISTS, OFPMMFC_INVALID_METER, OFPMMFC_UNKNOWN_METER, OFPMMFC_BAD_COMMAND,
 OFPMMFC_BAD_FLAGS, OFPMMFC_BAD_RATE, OFPMMFC_BAD_BURST, OFPMMFC_BAD_BAND, OFPMMFC_BAD_BAND_VALUE,
 OFPMMFC_OUT_OF_METERS, OFPMMFC_OUT_OF_BANDS) = range(12)
OFPMBT_DROP, OFPMBT_DSCP_REMARK, OFPMBT_EXPERIMENTER = 1, 2, 0xFFFF
_BAND_WIRE = {"drop": OFPMBT_DROP, "dscp_remark": OFPMBT_DSCP_REMARK}
BAND = struct.Struct("!HHIIB3x")  # type, len, rate, burst_size, prec_level (drop: pad)
METER_MOD_FIXED = struct.Struct("!HHI")
METER_STATS = struct.Struct("!IH6xIQQII")
BAND_STATS = struct.Struct("!QQ")
METER_CONFIG = struct.Struct("!HHI")
METER_FEATURES = struct.Struct("!IIIBB2x")
METER_REQ = struct.Struct("!I4x")


def encode_bands(bands: tuple[MeterBand, ...]) -> bytes:
    return b"".join(BAND.pack(_BAND_WIRE[b.type], BAND.size, b.rate, b.burst_size, b.prec_level) for b in bands)


def decode_bands(buf: bytes, meter_id: int) -> tuple[MeterBand, ...]:
    out, off = [], 0
    while off < len(buf):
        need(buf[off:], 4, f"meter {meter_id} band at byte {off}", OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND)
        btype, blen = struct.unpack_from("!HH", buf, off)
        if btype not in (OFPMBT_DROP, OFPMBT_DSCP_REMARK):
            raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND, f"meter {meter_id}: band type {btype} is not drop (1) or dscp_remark (2)")
        if blen != BAND.size or off + blen > len(buf):
            raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND, f"meter {meter_id}: band at byte {off} has length {blen}, expected 16")
        _, _, rate, burst, prec = BAND.unpack_from(buf, off)
        if rate == 0:
            raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_RATE, f"meter {meter_id}: band rate 0")
        out.append(MeterBand(BAND_TYPES[btype - 1], rate, burst, prec if btype == OFPMBT_DSCP_REMARK else 0))
        off += blen
    return tuple(out)


def encode_meter_mod(xid: int, mod: MeterMod) -> bytes:
    m = mod.meter
    bands = encode_bands(m.bands) if mod.command != "delete" else b""
    flags = m.flags if mod.command != "delete" else 0
    return header(OFPT_METER_MOD, xid, METER_MOD_FIXED.pack(METER_MOD_COMMANDS.index(mod.command), flags, m.meter_id) + bands)


def decode_meter_mod(body: bytes) -> MeterMod:
    need(body, METER_MOD_FIXED.size, "meter mod", OFPET_METER_MOD_FAILED, OFPMMFC_UNKNOWN)
    command, flags, meter_id = METER_MOD_FIXED.unpack_from(body, 0)
    if command >= len(METER_MOD_COMMANDS):
        raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_COMMAND, f"meter mod command {command} is not 0..2")
    cmd = METER_MOD_COMMANDS[command]
    if not (1 <= meter_id <= OFPM_MAX or meter_id in OFPM_VIRTUAL or (cmd == "delete" and meter_id == OFPM_ALL)):
        raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_INVALID_METER,
                      f"meter id {meter_id:#x} is not 1..{OFPM_MAX:#x}, slowpath (0xfffffffd) or controller (0xfffffffe)")
    if cmd == "delete":
        return MeterMod(cmd, Meter(meter_id))
    if flags & ~0xF or (flags & 1 and flags & 2):
        raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_FLAGS, f"meter {meter_id}: flags {flags:#x}")
    bands = decode_bands(body[METER_MOD_FIXED.size :], meter_id)
    if not bands:
        raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND, f"meter {meter_id}: no bands")
    try:
        return MeterMod(cmd, Meter.from_flags(meter_id, flags, bands))
    except RuleError as e:
        raise OFError(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND_VALUE, str(e)) from None


# ---------------------------------------------------------------- multipart bodies


def encode_meter_request(meter_id: int = OFPM_ALL) -> bytes:
    """Body of a METER or METER_CONFIG request (after the multipart header)."""
    return METER_REQ.pack(meter_id)


def decode_meter_request(rest: bytes) -> int:
    if len(rest) != METER_REQ.size:
        from tandem.rules.ofwire import OFPBRC_BAD_LEN, OFPET_BAD_REQUEST

        raise OFError(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN, f"meter request body is {len(rest)} bytes, expected 8")
    return METER_REQ.unpack(rest)[0]


def encode_meter_stats(s: MeterStats) -> bytes:
    bands = b"".join(BAND_STATS.pack(p, b) for p, b in s.band_stats)
    return METER_STATS.pack(s.meter_id, METER_STATS.size + len(bands), s.flow_count, s.packet_in_count, s.byte_in_count,
                            s.duration_sec, s.duration_nsec) + bands


def decode_meter_stats(buf: bytes) -> list[MeterStats]:
    out, off = [], 0
    while off < len(buf):
        need(buf[off:], METER_STATS.size, "meter stats entry")
        mid, length, flows, pkts, byts, sec, nsec = METER_STATS.unpack_from(buf, off)
        if length < METER_STATS.size or (length - METER_STATS.size) % BAND_STATS.size or off + length > len(buf):
            raise ValueError(f"meter stats entry at byte {off}: bad length {length}")
        bands = tuple(BAND_STATS.unpack_from(buf, o) for o in range(off + METER_STATS.size, off + length, BAND_STATS.size))
        out.append(MeterStats(mid, flows, pkts, byts, sec, nsec, bands))
        off += length
    return out


def encode_meter_config(m: Meter) -> bytes:
    bands = encode_bands(m.bands)
    return METER_CONFIG.pack(METER_CONFIG.size + len(bands), m.flags, m.meter_id) + bands


def decode_meter_configs(buf: bytes) -> list[Meter]:
    out, off = [], 0
    while off < len(buf):
        need(buf[off:], METER_CONFIG.size, "meter config entry")
        length, flags, mid = METER_CONFIG.unpack_from(buf, off)
        if length < METER_CONFIG.size or off + length > len(buf):
            raise ValueError(f"meter config entry at byte {off}: bad length {length}")
        out.append(Meter.from_flags(mid, flags, decode_bands(buf[off + METER_CONFIG.size : off + length], mid)))
        off += length
    return out


def encode_meter_features(f: MeterFeatures) -> bytes:
    return METER_FEATURES.pack(f.max_meter, f.band_types, f.capabilities, f.max_bands, f.max_color)


def decode_meter_features(buf: bytes) -> MeterFeatures:
    need(buf, METER_FEATURES.size, "meter features")
    return MeterFeatures(*METER_FEATURES.unpack_from(buf, 0))
