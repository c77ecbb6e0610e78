"""Meters at the OneSwitch endpoint: METER_MOD, the meter instruction's checks,
and the METER / METER_CONFIG / METER_FEATURES multiparts in virtual terms.

**One budget per virtual meter.** Each packet runs the whole virtual pipeline
on its ingress switch (docs/oneswitch.md §1), so the meter instruction of a
virtual rule runs there, once: frames that cross PCIe afterwards meet only
delivery rules, which carry no meter, so the verdict taken at ingress is
carried with the frame (a dropped frame never crosses; a remarked one
crosses remarked). A meter's token bucket is per physical switch, so a
virtual meter is one budget exactly when all the rules that use it live on
one switch — its *owner*. The endpoint enforces that: a FLOW_MOD whose rule
would put a metered copy on a second switch (a wildcard ``in_port`` on a
machine with virtual ports on several switches, or an ``in_port`` on another
switch than the meter's other rules) is refused with
``FLOW_MOD_FAILED/EPERM`` naming the meter and both switches. Every meter is
configured on every physical switch (so a port remap never waits for one);
only the owner's copy sees traffic. During a remap of a port whose rules use
a meter, the old and new switch both hold copies for the steps between
``plan.new_ingress_ready`` and ``plan.old_ingress_until``; the new copy's
bucket starts full, so for that moment up to one extra burst can pass.

Virtual meter statistics are the sums of the physical meters' counters
(only the owner's are non-zero); ``flow_count`` counts virtual rules.
State: ``ep.meters`` (virtual meter table). Cost: one round trip per
physical switch for statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.backends.base import MeterOp
from tandem.oneswitch import endpoint_stats as V
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.meters import OFPM_ALL, Meter, MeterFeatures, MeterMod, MeterStats
from tandem.rules.ofwire_meter import (
    OFPMMFC_BAD_BAND, OFPMMFC_METER_EXISTS, OFPMMFC_UNKNOWN_METER, decode_meter_mod, encode_meter_config,
    encode_meter_features, encode_meter_stats,
)

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint import OneSwitchEndpoint
    from tandem.oneswitch.endpoint_session import Session


def rule_switches(ep: "OneSwitchEndpoint", r: ir.Rule) -> set[str]:
    """The physical switches that hold copies of virtual rule ``r`` (its ingress switches)."""
    fm = r.match.get("in_port")
    if fm is not None and fm.value in ep.vports:
        return {ep.vports[fm.value].switch}
    return {vp.switch for vp in ep.vports.values()}


def meter_owner(ep: "OneSwitchEndpoint", meter_id: int, skip: ir.Rule | None = None) -> dict[str, ir.Rule]:
    """Switch -> one virtual rule using ``meter_id`` there (other than ``skip``'s key)."""
    skip_key = V.rule_key(skip) if skip is not None else None
    out: dict[str, ir.Rule] = {}
    for vr in ep.state.virtual_rules():  # type: ignore[attr-defined]
        if vr.meter == meter_id and V.rule_key(vr) != skip_key:
            for sw in rule_switches(ep, vr):
                out.setdefault(sw, vr)
    return out


def check_meter_rule(ep: "OneSwitchEndpoint", r: ir.Rule) -> None:
    """A rule's meter instruction: the meter exists and stays one budget (module doc)."""
    mid = r.meter
    if mid is None:
        return
    if mid not in ep.meters:
        raise W.OFError(W.OFPET_METER_MOD_FAILED, OFPMMFC_UNKNOWN_METER, f"meter {mid} does not exist")
    mine = rule_switches(ep, r)
    if len(mine) > 1:
        raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_EPERM,
                        f"meter {mid}: this rule runs on switches {', '.join(sorted(mine))} (no in_port on one switch); "
                        "a OneSwitch meter is one budget on one switch")
    others = meter_owner(ep, mid, skip=r)
    if others and set(others) != mine:
        raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_EPERM,
                        f"meter {mid} runs on switch {', '.join(sorted(others))}; this rule would run it on "
                        f"{', '.join(sorted(mine))} too (a OneSwitch meter is one budget on one switch)")


async def on_meter_mod(session: "Session", m: M.RawMessage) -> None:
    ep = session.ep
    mod = decode_meter_mod(m.body)
    meter = mod.meter
    mid = meter.meter_id
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
