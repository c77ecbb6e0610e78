"""A packet-in through an Open vSwitch bridge's meter, for OneSwitch's PACKET_OUT
``controller(meter_id=M)`` (docs/endpoint.md, "Meters").

OneSwitch's endpoint sends a PACKET_OUT's packet-ins itself, but their budget is meter
M's token bucket on the bridge where M's rules run. So the backend asks that bridge:
a physical PACKET_OUT of the frame (from CONTROLLER) whose actions are
``controller(meter_id=M,userdata=PROBE+n+pass)`` then ``controller(userdata=PROBE+n+done)``.
The bridge runs the first through meter M exactly as it runs a flow's or its own
PACKET_OUT's metered packet-in (the datapath meter: the same bucket, the frame's length
for kb/s, the meter's counters), and sends its packet-ins on the connection in the order
of the actions, so when ``done`` arrives, ``pass`` has arrived before it unless M dropped
it. Neither is relayed to a controller (``take``). PROBE is random per backend, so no
virtual rule's packet-in (whose userdata starts with packet_in_ext's tag) is taken for
one. State: the probes waiting for their ``done``. Cost: one PACKET_OUT and two
packet-ins, a round trip, per metered packet-in.
"""

from __future__ import annotations

import asyncio
import os
import struct

from tandem.rules import ofwire as W
from tandem.rules.ir import OFPCML_NO_BUFFER, OFPP_CONTROLLER, Controller
from tandem.rules.ofwire_msgs import WirePacketOut, encode_packet_out

_N = struct.Struct("!QB")  # probe number, PASS or DONE
PASS, DONE = 1, 2
TIMEOUT_S = 5.0


class MeterProbes:
    def __init__(self) -> None:
        self.prefix = b"tandem-meter" + os.urandom(8)
        self._next = 0
        self._waiting: dict[int, tuple[list[bool], asyncio.Future]] = {}

    def _action(self, n: int, kind: int, meter_id: int | None = None) -> Controller:
        return Controller(OFPCML_NO_BUFFER, 0, 1, self.prefix + _N.pack(n, kind), meter_id=meter_id)

    async def run(self, conn, meter_id: int, frame: bytes) -> bool:
        """Whether meter ``meter_id`` of the bridge behind ``conn`` passes a packet-in of
        ``frame`` now (TimeoutError if the bridge does not answer)."""
        n, self._next = self._next, self._next + 1
        passed: list[bool] = []
        done = asyncio.get_running_loop().create_future()
        self._waiting[n] = (passed, done)
        actions = (self._action(n, PASS, meter_id), self._action(n, DONE))
        try:
            conn.send(encode_packet_out(conn.next_xid(), WirePacketOut(W.OFP_NO_BUFFER, OFPP_CONTROLLER, actions, frame)))
            await asyncio.wait_for(done, TIMEOUT_S)
        finally:
            del self._waiting[n]
        return bool(passed)

    def take(self, userdata: bytes) -> bool:
        """Whether a packet-in with ``userdata`` is a probe's (then it is settled here)."""
        if not userdata.startswith(self.prefix) or len(userdata) != len(self.prefix) + _N.size:
            return False
        n, kind = _N.unpack_from(userdata, len(self.prefix))
        waiting = self._waiting.get(n)
        if waiting is not None:
            if kind == PASS:
                waiting[0].append(True)
            elif not waiting[1].done():
                waiting[1].set_result(None)
        return True


__all__ = ["MeterProbes"]
