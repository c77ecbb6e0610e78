"""What the OneSwitch endpoint and its sessions share: role constants, the
pending-operation limit, the gate for writing plans to the switches, and how
an update plan and an exception become OpenFlow steps and errors. A leaf of the endpoint modules (``endpoint`` holds
the switch, ``endpoint_session`` one connection, ``endpoint_multipart`` the
stats replies); it imports none of them, so they form no import cycle."""

from __future__ import annotations

import asyncio
from collections import deque

from tandem.rules import ofwire as W

ROLE_NOCHANGE, ROLE_EQUAL, ROLE_MASTER, ROLE_SLAVE = 0, 1, 2, 3
MAX_PENDING_OPS = 4000


class ApplyGate:
    """Who may write update plans to the physical switches: one holder at a time, in
    the order they asked. ``async with gate`` waits its turn (a multi-step plan holds
    it from its first step's write to its last step's confirmation); ``try_hold()``
    takes it at once, without waiting, only when nobody holds it or waits for it
    (a batch written on the spot, then ``release()``)."""

    def __init__(self) -> None:
        self._held = False
        self._waiting: deque[asyncio.Future] = deque()

    def locked(self) -> bool:
        return self._held

    def try_hold(self) -> bool:
        if self._held or self._waiting:
            return False
        self._held = True
        return True

    def release(self) -> None:
        while self._waiting:  # hand it to the next live waiter (it stays held)
            fut = self._waiting.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self._held = False

    async def __aenter__(self) -> None:
        if self.try_hold():
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed over, then cancelled: pass it on
                self.release()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.release()


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
