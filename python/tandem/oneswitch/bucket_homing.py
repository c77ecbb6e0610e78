"""A GROUP_MOD's port extensions at the OneSwitch endpoint: while a virtual group
holds ``ct`` in a bucket every virtual port's pipeline runs on the host, as while a
rule has a ``ct`` action (``bucket_ct.py``, ``extension.CT``).

``group_homing`` queues, before the GROUP_MOD's own plan, the extensions the new
group table needs (``endpoint_meters.plan_extensions`` with those groups), and
returns what to run after it, carried out or refused: the releases of the extended
ports that neither the rules nor the groups then in place need (a deleted or
modified group, or the rules a deleted group took with it; a refused GROUP_MOD
leaves the old groups, so what it extended goes back). The ports move whichever of
a group and the rules that apply it comes first: a group's ct is enough.
State: none (the extensions are the OneSwitch state's). Cost: a scan of the groups'
buckets per GROUP_MOD, and of the virtual rules while ports are extended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from tandem.rules import ofwire as W

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint_session import Session
    from tandem.rules.ofwire_msgs import RawMessage

_OFPGMFC_EPERM = 14  # (OFPET_GROUP_MOD_FAILED) permissions error, as a FLOW_MOD's EPERM for the same cause


def group_homing(session: "Session", m: "RawMessage", groups: list) -> Callable[[], None]:
    """Queue the extensions ``groups`` (the group table after the GROUP_MOD) need; the
    returned function queues the releases (module doc)."""
    from tandem.oneswitch.endpoint_meters import plan_extensions, plan_releases

    ep = session.ep
    try:
        plans = plan_extensions(ep, None, groups)
    except W.OFError as e:
        raise W.OFError(W.OFPET_GROUP_MOD_FAILED, _OFPGMFC_EPERM, e.args[0]) from None
    for plan in plans:
        session.queue(m, plan)

    def release() -> None:
        if getattr(ep.state, "extensions", None):
            for plan in plan_releases(ep):
                session.queue(m, plan)

    return release
