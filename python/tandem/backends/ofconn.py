"""An asyncio OpenFlow 1.3 controller-side connection to one physical switch.

Used by the OVS backend to program each bridge over its management socket
(``unix:<rundir>/<bridge>.mgmt``) or TCP. It does the HELLO/FEATURES
handshake, answers ECHO, pipelines requests, matches replies to requests by
xid (multipart replies are reassembled), confirms batches with a barrier and
reports any OFPT_ERROR the switch sent for a batch. Asynchronous messages
(PACKET_IN, FLOW_REMOVED, PORT_STATUS) go to ``on_async(msg)``.
State: pending requests by xid, errors by xid. Cost: one socket per switch (and one per other
controller id its rules send packet-ins to, which only receives those: ``backends/ovs.py``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from typing import Callable

from tandem.rules import ofwire as W
from tandem.rules.ofwire_msgs import (
    RawMessage, decode_error, decode_features_reply, encode_barrier_request, encode_echo_reply,
    encode_features_request, encode_hello, split_messages,
)
from tandem.rules.ofwire_stats import MultipartRequest, decode_multipart_reply, encode_multipart_request
from tandem.rules.ofwire_packet_in2 import NXPIF_NXT_PACKET_IN2, encode_set_controller_id, encode_set_packet_in_format

ASYNC_TYPES = (W.OFPT_PACKET_IN, W.OFPT_FLOW_REMOVED, W.OFPT_PORT_STATUS, W.OFPT_EXPERIMENTER)  # (NXT_PACKET_IN2)
log = logging.getLogger("tandem.ofconn")


class SwitchError(RuntimeError):
    def __init__(self, message: str, errors: list[tuple[int, int, int, bytes]]) -> None:
        super().__init__(message)
        self.errors = errors  # (xid, type, code, data)


class OFSwitchConnection(asyncio.Protocol):
    """The connection is its own asyncio protocol: a reply is matched to its
    request in ``data_received``, so the waiting request resumes on the next
    loop turn (a reader task would take one turn more per reply)."""

    def __init__(self, name: str, on_async: Callable[[RawMessage], None] | None = None) -> None:
        self.name = name
        self.on_async = on_async or (lambda m: None)
        self.dpid = 0
        self.n_tables = 0
        self._xids = itertools.count(0x1000)
        self._pending: dict[int, asyncio.Future] = {}
        self._multipart: dict[int, list[bytes]] = {}
        self._errors: dict[int, tuple[int, int, bytes]] = {}
        self._deadlines: dict[int, float] = {}  # xid -> loop time its reply is due by
        self._watchdog: asyncio.TimerHandle | None = None
        self._buf = bytearray()
        self._transport: asyncio.Transport | None = None
        self.closed = asyncio.Event()

    def next_xid(self) -> int:
        return next(self._xids) & 0xFFFFFFFF

    async def connect(self, target: str, timeout: float = 10.0, controller_id: int = 0) -> None:
        """``target`` is ``unix:PATH`` or ``tcp:HOST:PORT``; retries until the
        switch listens or ``timeout`` passes. A ``controller_id`` other than 0 makes a
        connection for the packet-ins to that id only (NXT_SET_CONTROLLER_ID; no port
        status or flow-removed messages, which the id-0 connection gets)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                if target.startswith("unix:"):
                    await loop.create_unix_connection(lambda: self, target[5:])
                else:
                    _, host, port = target.split(":")
                    await loop.create_connection(lambda: self, host, int(port))
                break
            except (FileNotFoundError, ConnectionRefusedError, OSError):
                if loop.time() > deadline:
                    raise ConnectionError(f"switch {self.name}: cannot connect to {target} within {timeout}s") from None
                await asyncio.sleep(0.05)
        self.send(encode_hello())
        xid = self.next_xid()
        reply = await self._request(encode_features_request(xid), xid, timeout)
        self.dpid, _, self.n_tables, _ = decode_features_reply(reply.body)
        # A service (management-socket) connection gets no asynchronous
        # messages unless asked for: enable packet-in, port-status, flow-removed.
        # (packet-in, port-status, flow-removed masks, master and slave; port status and flow removed: id 0's only)
        masks = (0x7, 0x7, 0, 0, 0, 0) if controller_id else (0x7, 0x7, 0x7, 0x7, 0xF, 0xF)
        self.send(W.header(W.OFPT_SET_ASYNC, self.next_xid(), struct.pack("!6I", *masks)))
        # packet-ins as NXT_PACKET_IN2, which carry controller(userdata=...) (OneSwitch: packet_in_ext.py)
        self.send(encode_set_packet_in_format(self.next_xid(), NXPIF_NXT_PACKET_IN2))
        if controller_id:
            self.send(encode_set_controller_id(self.next_xid(), controller_id))

    async def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            await self.closed.wait()  # connection_lost, after the transport let go of the socket
        self.closed.set()

    # ------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self.closed.clear()

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        for msg in split_messages(buf):
            self._dispatch(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError(f"switch {self.name}: connection closed"))
        self.closed.set()

    def _dispatch(self, msg: RawMessage) -> None:
        if msg.type == W.OFPT_ECHO_REQUEST:
            self.send(encode_echo_reply(msg.xid, msg.body))
        elif msg.type in ASYNC_TYPES:
            try:
                self.on_async(msg)
            except Exception:  # a listener's bug must not take the switch connection down
                log.exception("switch %s: handling asynchronous message type %d", self.name, msg.type)
        elif msg.type == W.OFPT_ERROR:
            etype, code, data = decode_error(msg.body)
            fut = self._pending.pop(msg.xid, None)
            self._deadlines.pop(msg.xid, None)
            if fut is not None and not fut.done():
                fut.set_exception(SwitchError(f"switch {self.name} refused xid {msg.xid}: type {etype} code {code}", [(msg.xid, etype, code, data)]))
            else:
                self._errors[msg.xid] = (etype, code, data)
        elif msg.type == W.OFPT_MULTIPART_REPLY:
            _, flags, _ = decode_multipart_reply(msg.body)
            parts = self._multipart.setdefault(msg.xid, [])
            parts.append(msg.body)
            if not flags & 1:
                fut = self._pending.pop(msg.xid, None)
                self._deadlines.pop(msg.xid, None)
                bodies = self._multipart.pop(msg.xid)
                if fut is not None and not fut.done():
                    fut.set_result(bodies)
        else:
            fut = self._pending.pop(msg.xid, None)
            if fut is not None:
                self._deadlines.pop(msg.xid, None)
                if not fut.done():
                    fut.set_result(msg)

    def send(self, data: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            raise ConnectionError(f"switch {self.name}: not connected")
        self._transport.write(data)

    def start(self, data: bytes, xid: int, timeout: float = 30.0) -> asyncio.Future:
        """Write ``data`` now; the returned future gets the reply to ``xid`` (a list of
        bodies for a multipart), or ``SwitchError`` / ``TimeoutError`` after ``timeout``
        seconds without one. Deadlines are checked by one timer per connection, not
        one per request."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._pending[xid] = fut
        self.send(data)
        deadline = loop.time() + timeout
        self._deadlines[xid] = deadline
        if self._watchdog is None or deadline < self._watchdog.when():
            if self._watchdog is not None:
                self._watchdog.cancel()
            self._watchdog = loop.call_at(deadline, self._expire)
        return fut

    def _expire(self) -> None:
        """Fail the requests past their deadline; re-arm for the next deadline."""
        self._watchdog = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        for xid, deadline in list(self._deadlines.items()):
            if deadline <= now:
                del self._deadlines[xid]
                fut = self._pending.pop(xid, None)
                if fut is not None and not fut.done():
                    fut.set_exception(asyncio.TimeoutError(f"switch {self.name}: no reply to xid {xid} in time"))
        if self._deadlines:
            self._watchdog = loop.call_at(min(self._deadlines.values()), self._expire)

    async def _request(self, data: bytes, xid: int, timeout: float = 30.0):
        try:
            return await self.start(data, xid, timeout)
        finally:
            self._pending.pop(xid, None)
            self._deadlines.pop(xid, None)

    def start_batch(self, xids: list[int], msgs: list[bytes], timeout: float = 30.0) -> tuple[asyncio.Future, int]:
        """Write the messages and a barrier after them in one write (one wake-up of the
        switch); returns the barrier's future and xid, for ``finish_batch``."""
        xid = self.next_xid()
        msgs.append(encode_barrier_request(xid))
        fut = self.start(b"".join(msgs), xid, timeout)
        msgs.pop()
        return fut, xid

    async def finish_batch(self, fut: asyncio.Future, barrier_xid: int, xids: list[int]) -> None:
        """Wait for a ``start_batch`` barrier; ``SwitchError`` if the switch refused any
        of the batch's messages (its errors arrive before the barrier reply)."""
        try:
            await fut
        finally:
            self._pending.pop(barrier_xid, None)
            self._deadlines.pop(barrier_xid, None)
        if self._errors:
            errors = [(x, *self._errors.pop(x)) for x in xids if x in self._errors]
            if errors:
                xid, etype, code, _ = errors[0]
                raise SwitchError(f"switch {self.name} refused {len(errors)} of {len(xids)} messages (first: xid {xid} type {etype} code {code})", errors)

    async def send_batch(self, messages: list[tuple[int, bytes]], timeout: float = 30.0) -> None:
        """Send (xid, bytes) messages then a barrier; raise ``SwitchError`` if
        the switch refused any of them."""
        await self.send_all([x for x, _ in messages], [m for _, m in messages], timeout)

    async def send_all(self, xids: list[int], msgs: list[bytes], timeout: float = 30.0) -> None:
        """``send_batch`` with the xids and the messages in two lists."""
        await self.finish_batch(*self.start_batch(xids, list(msgs), timeout), xids)

    async def barrier(self, timeout: float = 30.0) -> None:
        xid = self.next_xid()
        await self._request(encode_barrier_request(xid), xid, timeout)

    async def multipart(self, req: MultipartRequest, timeout: float = 30.0) -> bytes:
        """Concatenated bodies of every reply part."""
        xid = self.next_xid()
        bodies = await self._request(encode_multipart_request(xid, req), xid, timeout)
        return b"".join(decode_multipart_reply(b)[2] for b in bodies)
