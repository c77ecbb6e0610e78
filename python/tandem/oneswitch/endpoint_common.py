"""What the OneSwitch endpoint and its sessions share: role constants, the
pending-operation limit, and how an update plan and an exception become
OpenFlow steps and errors. A leaf of the endpoint modules (``endpoint`` holds
the switch, ``endpoint_session`` one connection, ``endpoint_multipart`` the
stats replies); it imports none of them, so they form no import cycle."""

from __future__ import annotations

from tandem.rules import ofwire as W

ROLE_NOCHANGE, ROLE_EQUAL, ROLE_MASTER, ROLE_SLAVE = 0, 1, 2, 3
MAX_PENDING_OPS = 4000


def plan_steps(plan: object) -> list[list]:
    steps = getattr(plan, "steps", plan)
    return [list(s) for s in steps if s]  # type: ignore[union-attr]


def error_of(exc: Exception, default: tuple[int, int]) -> tuple[int, int]:
    """The OpenFlow (type, code) an exception from the state carries, if any:
    an ``of_error`` pair, ``etype``/``code`` ints, or a ``code`` naming an
    OFPFMFC_* constant (OneSwitch's ``FlowModError``)."""
    v = getattr(exc, "of_error", None)
    if isinstance(v, tuple) and len(v) == 2:
        return v
    code = getattr(exc, "code", None)
    if isinstance(code, int) and isinstance(getattr(exc, "etype", None), int):
        return (exc.etype, code)  # type: ignore[attr-defined]
    if isinstance(code, str) and code.startswith("OFPFMFC_") and isinstance(getattr(W, code, None), int):
        return (W.OFPET_FLOW_MOD_FAILED, getattr(W, code))
    return default
