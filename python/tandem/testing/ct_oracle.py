"""The OneSwitch oracle for rules that use connection tracking.

Open vSwitch's userspace datapath keeps one connection tracker per datapath, and
all bridges of one ``ovs-vswitchd`` (``datapath_type=dummy``) share that datapath:
a connection the reference bridge commits would be found by the physical bridges
too. ``SplitSandbox`` therefore runs the reference bridges (``Oracle``'s ``vref*``)
in a second sandbox, its own ``ovs-vswitchd`` with its own tracker, and looks like
one ``OvsSandbox`` to ``Oracle`` (each call goes to the sandbox that holds the
bridge it names). ``run_traces`` injects connection traces round by round
(``generate_ct.ct_traces``): each round's packets go in, both sides settle, and
outputs are compared, so every connection is replayed in order on both trackers.

Used by tests/oneswitch/test_ct_oracle.py and ``tandem bench ct_oracle``.
"""

from __future__ import annotations

from typing import Sequence

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.testing.oneswitch_oracle import Oracle, OracleReport

_REF_PREFIX = "vref"


class SplitSandbox:
    """Two sandboxes behind ``OvsSandbox``'s interface: reference bridges in ``ref``."""

    def __init__(self) -> None:
        self.main = OvsSandbox()
        try:
            self.ref = OvsSandbox()
        except BaseException:
            self.main.close()
            raise

    def _of(self, bridge: str) -> OvsSandbox:
        return self.ref if bridge.startswith(_REF_PREFIX) else self.main

    def __getattr__(self, name: str):
        if name in ("settle", "appctl", "vsctl"):
            def both(*a, **k):
                out = getattr(self.main, name)(*a, **k)
                getattr(self.ref, name)(*a, **k)
                return out
            return both

        def one(bridge: str, *a, **k):
            return getattr(self._of(bridge), name)(bridge, *a, **k)
        return one

    @property
    def bridges(self) -> dict:
        return {**self.main.bridges, **self.ref.bridges}

    def add_patch(self, a_bridge: str, a_port: int, b_bridge: str, b_port: int) -> None:
        self.main.add_patch(a_bridge, a_port, b_bridge, b_port)

    def take_all_output(self) -> dict:
        return {**self.main.take_all_output(), **self.ref.take_all_output()}

    def close(self) -> None:
        try:
            self.main.close()
        finally:
            self.ref.close()

    def __enter__(self) -> "SplitSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_traces(o: Oracle, rounds: Sequence[Sequence[tuple[int, bytes]]]) -> OracleReport:
    """Inject ``rounds`` one after the other into both sides; the reports summed."""
    total = OracleReport()
    for packets in rounds:
        r = o.compare(list(packets))
        total.packets += r.packets
        total.outputs += r.outputs
        total.mismatches += r.mismatches
        total.expected_by_port.update(r.expected_by_port)
    return total
