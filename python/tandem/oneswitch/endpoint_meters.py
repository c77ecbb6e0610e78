"""Meters at the OneSwitch endpoint: METER_MOD, the meter instruction's checks,
the METER / METER_CONFIG / METER_FEATURES multiparts in virtual terms, and the
port extensions that keep each virtual meter one budget.

**One budget per virtual meter.** Each packet runs the whole virtual pipeline
on one switch (docs/oneswitch.md §1), so the meter instruction of a virtual
rule runs there, once: frames that cross PCIe afterwards meet only delivery
rules, which carry no meter, so the verdict travels with the frame (a dropped
frame never crosses; a remarked one crosses remarked). A meter's token bucket
is per physical switch, so a virtual meter is one budget exactly when all the
rules that use it run on one switch. When a FLOW_MOD would put a meter's
rules on two or more switches (a wildcard ``in_port`` with virtual ports on
several switches, or an ``in_port`` on another switch than the meter's other
rules), ``plan_extensions`` first *extends* the sNIC ports those rules can
match to the host (``extension.py``): each such port's pipeline moves to the
host through a chain of port pairs on the PCIe links from its sNIC to the
host, by the consistent remap plan, and the meter's rules then run on the host
alone. Moving a port can split another meter, so ports are moved until every
meter runs on one switch. When FLOW_MODs (or a meter's deletion) leave an
extended port that no meter needs on the host, ``plan_releases`` moves it back
(``extension.release``), so its unmetered traffic stops crossing PCIe (unless
rules added meanwhile would have coinciding copies on its sNIC: it then stays
extended). Refused
(``FLOW_MOD_FAILED/EPERM``) only when the backend cannot build port pairs or a
switch has no port numbers left for one. Every meter is configured on every
physical switch (so a remap never waits for one); only one switch's copy sees
a meter's traffic. During an extension (or an NF port remap) of a port whose
rules use a meter, the old and the new switch both hold copies for the steps
between ``plan.new_ingress_ready`` and ``plan.old_ingress_until``; the new
copy's bucket starts full, so for that moment up to one extra burst can pass.

Virtual meter statistics are the sums of the physical meters' counters
(every switch's copy, so nothing counted before a move is lost);
``flow_count`` counts virtual rules. State: ``ep.meters`` (virtual meter
table); the extensions are the OneSwitch state's. Cost: one round trip per
physical switch for statistics; a scan of the virtual rules per metered
FLOW_MOD, and per FLOW_MOD that removes a metered rule while ports are extended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.backends.base import MeterOp
from tandem.oneswitch.extension import ONE_SWITCH_NAMES, ExtensionError, extend, ports_to_extend, ports_to_release, release, split_meters
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.meters import OFPM_ALL, OFPM_CONTROLLER, Meter, MeterFeatures, MeterMod, MeterStats
from tandem.rules.ofwire_meter import (
    OFPMMFC_BAD_BAND, OFPMMFC_INVALID_METER, OFPMMFC_METER_EXISTS, OFPMMFC_UNKNOWN_METER, decode_meter_mod, encode_meter_config,
    encode_meter_features, encode_meter_stats,
)

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint import OneSwitchEndpoint
    from tandem.oneswitch.endpoint_session import Session


def check_meter_rule(ep: "OneSwitchEndpoint", r: ir.Rule) -> None:
    """A rule's meter instruction names a meter that exists (as OVS checks it)."""
    mid = r.meter
    if mid is not None and mid not in ep.meters:  # Open vSwitch answers INVALID_METER here (UNKNOWN_METER to METER_MOD)
        raise W.OFError(W.OFPET_METER_MOD_FAILED, OFPMMFC_INVALID_METER, f"meter {mid} does not exist")


def plan_extensions(ep: "OneSwitchEndpoint", r: ir.Rule | None, groups: list | None = None) -> list:
    """The extension plans that make every meter's rules, with ``r`` added (and
    ``groups`` as the virtual groups, None: as they are), run on one switch (module
    doc); empty when they already do. ``FLOW_MOD_FAILED/EPERM`` if a port must move
    and cannot."""
    state = ep.state
    vports = ports_to_extend(state, r, groups)
    if not vports:
        return []
    split = split_meters(state, r, groups)
    what = "; ".join(f"{ONE_SWITCH_NAMES.get(m, m if isinstance(m, str) else f'meter {m}')}: switches {', '.join(sorted(sws))}"
                     for m, sws in sorted(split.items(), key=str))
    if not getattr(ep.backend, "extension_pairs", True):
        raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_EPERM,
                        f"{what}: virtual ports {vports} would have to move to {state.topo.host} through port pairs, "  # type: ignore[attr-defined]
                        f"which the {ep.backend.name} backend cannot build (a OneSwitch meter is one budget on one switch, "
                        "and connection tracking, learning and NORMAL run on one switch)")
    try:
        return extend(state, vports)
    except ExtensionError as e:
        raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_EPERM, f"{what}: {e}") from None


def plan_releases(ep: "OneSwitchEndpoint") -> list:
    """Plans that move back the extended ports no meter needs any more (module doc)."""
    return release(ep.state) if ports_to_release(ep.state) else []


async def on_meter_mod(session: "Session", m: M.RawMessage) -> None:
    ep = session.ep
    mod = decode_meter_mod(m.body)
    meter = mod.meter
    mid = meter.meter_id
    if mid == OFPM_CONTROLLER:  # (the slowpath meter is one like any other: module doc)
        raise W.OFError(W.OFPET_METER_MOD_FAILED, OFPMMFC_INVALID_METER,
                        "meter 0xfffffffe (OpenFlow's controller meter): OneSwitch's packet-ins come from every physical "
                        "switch and from the endpoint, so no one token bucket sees them all")
    if mod.command == "add" and mid in ep.meters:
        raise W.OFError(W.OFPET_METER_MOD_FAILED, OFPMMFC_METER_EXISTS, f"meter {mid} exists")
    if mod.command == "modify" and mid not in ep.meters:
        raise W.OFError(W.OFPET_METER_MOD_FAILED, OFPMMFC_UNKNOWN_METER, f"meter {mid} does not exist")
    bad = [b.type for b in meter.bands if b.type not in ep.backend.meter_band_types]
    if bad:
        raise W.OFError(W.OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND,
                        f"meter {mid}: band type {bad[0]} is not run by the {ep.backend.name} backend's switches")
    switches = ep.backend.switches()
    if mod.command == "delete":
        gone = sorted(ep.meters) if mid == OFPM_ALL else [mid] if mid in ep.meters else []
        for g in gone:  # OpenFlow: deleting a meter deletes the flows that use it
            for vr in [r for r in ep.state.virtual_rules() if r.meter == g]:  # type: ignore[attr-defined]
                session.queue(m, ep.state.apply(ir.FlowMod("delete_strict", vr)))  # type: ignore[attr-defined]
                ep.notify_removed(vr, M.OFPRR_DELETE)
            del ep.meters[g]
        if gone:
            for plan in plan_releases(ep):
                session.queue(m, plan)
            session.queue(m, [[MeterOp(sw, "delete", Meter(g)) for sw in switches for g in gone]])
        return
    ep.meters[mid] = meter
    session.queue(m, [[MeterOp(sw, mod.command, meter) for sw in switches]])


async def meter_multipart(ep: "OneSwitchEndpoint", req: S.MultipartRequest) -> list[bytes]:
    t = req.type
    if t == S.OFPMP_METER_FEATURES:
        types = sum(1 << {"drop": 1, "dscp_remark": 2}[b] for b in ep.backend.meter_band_types)
        return [encode_meter_features(MeterFeatures(band_types=types))]
    if req.meter_id != OFPM_ALL and req.meter_id not in ep.meters:
        raise W.OFError(W.OFPET_METER_MOD_FAILED, OFPMMFC_UNKNOWN_METER, f"meter {req.meter_id} does not exist")
    ids = sorted(ep.meters) if req.meter_id == OFPM_ALL else [req.meter_id]
    if t == S.OFPMP_METER_CONFIG:
        return [encode_meter_config(ep.meters[i]) for i in ids]
    totals = {i: [0, 0, [[0, 0] for _ in ep.meters[i].bands], 0, 0] for i in ids}
    for sw in ep.backend.switches():
        for ms in await ep.backend.meter_stats(sw):
            tot = totals.get(ms.meter_id)
            if tot is None:
                continue
            tot[0] += ms.packet_in_count
            tot[1] += ms.byte_in_count
            for acc, (p, b) in zip(tot[2], ms.band_stats):
                acc[0] += p
                acc[1] += b
            tot[3], tot[4] = max((tot[3], tot[4]), (ms.duration_sec, ms.duration_nsec))  # the oldest copy
    flows = {i: sum(1 for r in ep.state.virtual_rules() if r.meter == i) for i in ids}  # type: ignore[attr-defined]
    return [encode_meter_stats(MeterStats(i, flows[i], totals[i][0], totals[i][1], totals[i][3], totals[i][4],
                                          tuple((p, b) for p, b in totals[i][2]))) for i in ids]
