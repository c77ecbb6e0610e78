"""Random Open vSwitch ``controller(reason=…,max_len=…,id=…,userdata=…)`` actions
for rule generators (opt-in feature ``nx_controller``: other rule sets draw as
before). Controller ids are mostly 0 (the id a monitor or OneSwitch's default
controller has), reasons every one OVS names, userdata of 0..12 bytes. With the feature
``nx_controller_meter`` too, each names a meter, 1..3 (``meter_id``), or now and then an id
above 0xffff0000 (Open vSwitch's slowpath and controller meters, OFPM_ALL, 0xffff0001). With
``nx_controller_pause``, half of them pause (``controller(pause)``: the oracle resumes them), but not
those of reason invalid_ttl, which a controller with Open vSwitch's default async config (the oracle's
monitors) never receives, and so never resumes (OneSwitch's physical packet-in carries the reason in its
userdata: its monitor would)."""

from __future__ import annotations

import random

from dataclasses import replace

from .ir import CONTROLLER_REASONS, ApplyActions, Clone, Controller, Rule, WriteActions

CONTROLLER_FEATURE = "nx_controller"
CONTROLLER_METER_FEATURE = "nx_controller_meter"
CONTROLLER_PAUSE_FEATURE = "nx_controller_pause"
_MAX_LENS = (0xFFFF, 0xFFFF, 0, 14, 64, 100)
_METER_IDS = (1, 2, 3, 1, 2, 3, 1, 2, 3, 0xFFFF0001, 0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF)


def controller_actions(rng: random.Random, metered: bool = False, paused: bool = False) -> list[Controller]:
    """Zero, one or two ``controller(...)`` actions (each naming a meter if ``metered``, half pausing if ``paused``)."""
    out = []
    for _ in range(rng.choice((0, 1, 1, 2))):
        userdata = bytes(rng.randrange(256) for _ in range(rng.choice((0, 0, 1, 3, 5, 8, 12))))
        cid, reason = rng.choice((0, 0, 0, 3)), rng.randrange(len(CONTROLLER_REASONS))
        if reason == 1 and not cid and not userdata:  # (that one is an output to CONTROLLER, in text as in OVS)
            reason = 0
        out.append(Controller(rng.choice(_MAX_LENS), cid, reason, userdata, meter_id=rng.choice(_METER_IDS) if metered else None,
                              pause=paused and reason != 2 and rng.random() < 0.5))
    return out


def resumable_pauses(rule: Rule) -> Rule:
    """``rule`` without pauses if it has write_actions: Open vSwitch 3.1 sends such a pause's
    packet-in but refuses to resume it (its continuation holds the instruction, which it cannot
    read back, BAD_ACTION/BAD_LEN: measured), and ovs-ofctl cannot print it; OneSwitch's endpoint
    refuses the resume alike (oneswitch/endpoint_pause.py), which the oracle's monitors, resuming
    the physical switches' packet-ins themselves, do not model."""
    if not any(type(i) is WriteActions for i in rule.instructions):
        return rule

    def plain(actions: tuple) -> tuple:
        return tuple(replace(a, pause=False) if type(a) is Controller else Clone(plain(a.actions)) if type(a) is Clone
                     else a for a in actions)
    return replace(rule, instructions=tuple(ApplyActions(plain(i.actions)) if type(i) is ApplyActions else i
                                            for i in rule.instructions))


__all__ = ["resumable_pauses", "CONTROLLER_FEATURE", "CONTROLLER_METER_FEATURE", "CONTROLLER_PAUSE_FEATURE", "controller_actions"]
