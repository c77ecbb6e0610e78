"""Metered packet-ins in the PACKET_OUT oracle (``packet_out_oracle``, ``--meters``): the
``controller(…)`` packet-ins of ``--packet-ins`` name meters now and then (also inside
clones), and OneSwitch must pass and drop the same ones as the plain bridge, with the same
meter counters (oneswitch/packet_out_meter.py).

Each batch starts from fresh meters on both sides (``METERS``: pktps drop bands of rate 1,
bursts 2 and 5, and OpenFlow's slowpath meter 0xfffffffd, burst 3, which Open vSwitch runs
for ``controller(meter_id=0xfffffffd)`` as any other; meter 9 named but not configured, so
unmetered on both). A pktps bucket of
rate 1 starts full and gains under one token in under a second, so a batch whose PACKET_OUTs
are all carried out within a second passes exactly each meter's burst on either side, and
which packet-ins pass is decided by their order alone: such a batch is exact.
``SLOW_S``: a batch that took longer is counted (``Result.slow``), its mismatches named as
such. Pure but for the connections' messages.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Sequence

from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import Action, Clone, Controller
from tandem.rules.meters import OFPM_ALL, OFPM_SLOWPATH, Meter, MeterBand, MeterMod
from tandem.rules.ofwire_meter import decode_meter_stats, encode_meter_mod

METERS = (Meter(1, (MeterBand("drop", 1, 2),), pktps=True, burst=True, stats=True),
          Meter(2, (MeterBand("drop", 1, 5),), pktps=True, burst=True, stats=True),
          Meter(OFPM_SLOWPATH, (MeterBand("drop", 1, 3),), pktps=True, burst=True, stats=True))
_IDS = (1, 1, 2, 2, OFPM_SLOWPATH, OFPM_SLOWPATH, 9)  # (9: no such meter)
SLOW_S = 0.9


def with_meters(rng: random.Random, acts: Sequence[Action]) -> tuple[Action, ...]:
    """``acts`` with most ``controller(…)`` actions (also in clones) naming a meter."""
    out: list[Action] = []
    for a in acts:
        if type(a) is Controller and rng.random() < 0.7:
            a = dataclasses.replace(a, meter_id=rng.choice(_IDS))
        elif type(a) is Clone:
            a = Clone(with_meters(rng, a.actions))
        out.append(a)
    return tuple(out)


def metered_actions(acts: Sequence[Action]) -> int:
    """How many ``controller(…)`` actions of ``acts`` (clones included) name a meter of ``METERS``."""
    ids = {m.meter_id for m in METERS}
    return sum(metered_actions(a.actions) if type(a) is Clone else type(a) is Controller and a.meter_id in ids for a in acts)


def reset_meters(conn) -> None:
    """Send ``conn`` (the oracle's ``_Conn``) every meter deleted, then ``METERS`` added."""
    conn.send(lambda x: encode_meter_mod(x, MeterMod("delete", Meter(OFPM_ALL))))
    for m in METERS:
        conn.send(lambda x, m=m: encode_meter_mod(x, MeterMod("add", m)))


def scratch_with_meters(sw):
    """dp-core's scratch ``Switch`` (run_dp) with ``METERS`` added."""
    for m in METERS:
        sw.pipeline.meter_mod("add", m.meter_id, m.pktps, m.burst, m.stats,
                              [(b.type, b.rate, b.burst_size, b.prec_level) for b in m.bands])
    return sw


def scratch_meter_counts(sw) -> list[tuple]:
    """``meter_counts`` of the scratch switch's meters."""
    out = []
    for m in METERS:
        pkts, byts, bands, _ = sw.pipeline.meter_stats(m.meter_id)
        out.append((m.meter_id, pkts, byts, tuple(tuple(b) for b in bands)))
    return out


def ask_meter_stats(conn) -> None:
    """Send ``conn`` a METER stats request for every meter (its reply read at the barrier)."""
    conn.send(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=OFPM_ALL)))


def meter_counts(replies: list[M.RawMessage]) -> list[tuple]:
    """(meter, packets in, bytes in, band counters) of the METER stats replies."""
    out = []
    for m in replies:
        kind, _, body = S.decode_multipart_reply(m.body)
        if kind == S.OFPMP_METER:
            out += [(st.meter_id, st.packet_in_count, st.byte_in_count, tuple(st.band_stats)) for st in decode_meter_stats(body)]
    return sorted(out)


__all__ = ["METERS", "SLOW_S", "ask_meter_stats", "meter_counts", "metered_actions", "reset_meters", "scratch_meter_counts",
           "scratch_with_meters", "with_meters"]
