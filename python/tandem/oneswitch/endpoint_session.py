"""One controller connection to the OneSwitch endpoint: handshake, dispatch, errors.

Reads OpenFlow 1.3 messages, answers each request (see ``endpoint.py`` for
ordering and barrier semantics), keeps the connection's role and async
configuration, and probes an idle controller with ECHO (closing after 3 silent
probes). Never raises on bad input: an ``OFError`` becomes an OFPT_ERROR
echoing the request's xid and first 64 bytes.
State: negotiated flag, role, async masks, queued update plans.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING

from tandem.backends.base import BackendError
from tandem.oneswitch import endpoint_stats as V
from tandem.oneswitch import endpoint_normal
from tandem.oneswitch.packet_out_whole import check_frame, homing_plans, ports_to_home, whole_on_host
from tandem.oneswitch.endpoint_output_reg import check_output_reg_frame
from tandem.oneswitch.carried_counters import carry
from tandem.oneswitch.endpoint_nsh_ttl import check as check_nsh_ttl
from tandem.oneswitch.extension import homed
from tandem.oneswitch.learn_translate import learned_deletes
from tandem.oneswitch.nx_session import on_nicira_message, packet_in_wanted
from tandem.oneswitch.endpoint_pause import RESUME_HEAD, on_resume
from tandem.oneswitch.endpoint_tun_metadata import tun_metadata_decoding
from tandem.oneswitch.bucket_homing import group_homing
from tandem.oneswitch.endpoint_common import (
    MAX_PENDING_OPS, ROLE_EQUAL, ROLE_MASTER, ROLE_NOCHANGE, ROLE_SLAVE, error_of, plan_steps,
)
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import FlowMod, Output
from tandem.rules.matching import overlaps

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint import OneSwitchEndpoint

log = logging.getLogger("tandem.endpoint")
ECHO_IDLE_S = 15.0
# a long chunk of FLOW_MODs goes to the switches in batches of about this many ops, so they
# install one batch while the next is translated (the last batch is all that is left to wait for)
BATCH_OPS = 256
DRAIN_ABOVE = 1 << 16  # replies buffered for the controller beyond which reading waits for it
ENDS_HOMING = frozenset({W.OFPT_FLOW_MOD, W.OFPT_GROUP_MOD, W.OFPT_METER_MOD, W.OFPT_EXPERIMENTER})  # (TLV map, bundles)
MODIFYING = {W.OFPT_FLOW_MOD, W.OFPT_GROUP_MOD, W.OFPT_PACKET_OUT, W.OFPT_PORT_MOD, W.OFPT_TABLE_MOD, W.OFPT_METER_MOD}


_NOTHING = object()  # a batch with no ops: nothing to confirm


def unknown_buffer(buffer_id: int) -> W.OFError:
    """A buffer id from a controller: OneSwitch, as Open vSwitch 3.1, buffers no packets
    (every packet-in is the whole frame, unbuffered)."""
    return W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BUFFER_UNKNOWN, f"buffer {buffer_id}: no packet is buffered "
                     "(packet-ins carry the whole frame, as Open vSwitch 3.1 sends them)")


def _release(waiters: list[asyncio.Future]) -> None:
    for w in waiters:
        if not w.done():
            w.set_result(None)
    waiters.clear()


class Session:
    def __init__(self, ep: "OneSwitchEndpoint", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.ep = ep
        self.reader = reader
        self.writer = writer
        self.negotiated = False
        self.role = ROLE_EQUAL
        self.async_masks = (0x3, 0x0, 0x7, 0x7, 0xF, 0x0)  # (as Open vSwitch 3.1's default: no invalid_ttl packet-ins)
        self.packet_in_format = 0  # NXT_SET_PACKET_IN_FORMAT: 0 OpenFlow's, 2 NXT_PACKET_IN2
        self.controller_id = 0  # NXT_SET_CONTROLLER_ID
        self.miss_send_len = 128  # SET_CONFIG, per connection as in Open vSwitch (packet-ins are whole whatever it is)
        self.pending: list[tuple[M.RawMessage, list[list]]] = []
        self.pending_ops = 0
        self.after_flush: list = []
        self.flush_task: asyncio.Task | None = None
        self.flush_waiters: list[asyncio.Future] = []  # flushes waiting for flush_task
        self.written_through = False  # flush_task's batch was written by kick (so were all before it)
        self.inflight_ops = 0
        self.heard, self.silent = False, 0  # input since the last idle tick; unanswered echo probes
        self._idle: asyncio.TimerHandle | None = None
        self.peer = writer.get_extra_info("peername")

    # ------------------------------------------------------------ I/O
    def send(self, data: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(data)

    def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()

    def error(self, xid: int, raw: bytes, etype: int, code: int) -> None:
        self.send(M.encode_error(xid, etype, code, raw[:64]))

    def wants_packet_in(self, reason: int) -> bool:
        """Does the async config take a packet-in of Open vSwitch's reason (0..5)? (``nx_session.py``)"""
        return packet_in_wanted(self, reason)

    def wants(self, kind: int, reason: int) -> bool:
        if not self.negotiated:
            return False
        mask = self.async_masks[2 * kind + (1 if self.role == ROLE_SLAVE else 0)]
        return bool(mask >> reason & 1)

    async def run(self) -> None:
        self.ep.sessions.add(self)
        self.send(M.encode_hello())
        buf = bytearray()
        # idle probing runs on a timer, not as a timeout on every read (asyncio.wait_for
        # would wrap each read in a task of its own: two more loop turns per message)
        self._idle = asyncio.get_running_loop().call_later(ECHO_IDLE_S, self._idle_tick)
        try:
            while not self.writer.is_closing():
                chunk = await self.reader.read(1 << 16)
                if not chunk:
                    break
                self.heard = True
                buf += chunk
                try:
                    msgs = M.split_messages(buf)
                except M.FramingError:
                    self.error(0, bytes(buf[:64]), W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN)
                    break
                for m in msgs:
                    if self.ep.homed_on_demand and m.type in ENDS_HOMING:  # (packet_out_whole.py)
                        await self._end_homing(m)
                    if m.type == W.OFPT_FLOW_MOD and self.negotiated and m.version == W.OFP_VERSION:
                        self.handle_flow_mod(m)  # the bulk of a controller's stream: no coroutine per message
                    else:
                        await self.handle(m)
                    if self.writer.is_closing():
                        break
                    if self.pending_ops >= BATCH_OPS:  # the switches take this batch while the rest is translated
                        self.kick()
                self.kick()
                if self.inflight_ops > 4 * MAX_PENDING_OPS:  # back-pressure: let the switches catch up
                    await self.flush()
                if self.writer.transport.get_write_buffer_size() > DRAIN_ABOVE:  # a controller slow to read
                    await self.writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            try:
                await self.flush()  # what was accepted is applied, even if the controller left
            except Exception:
                log.exception("applying changes after the connection closed")
            self.ep.sessions.discard(self)
            self.close()

    def _idle_tick(self) -> None:
        """Every ECHO_IDLE_S: a controller heard from since the last tick is alive; else
        probe it with ECHO, and drop it after 3 probes went unanswered (closing the
        writer ends ``run``'s read with EOF)."""
        if self.heard:
            self.heard, self.silent = False, 0
        else:
            self.silent += 1
            if self.silent > 3:
                self.close()
                return
            self.send(M.encode_echo_request(0xEC0 + self.silent))
        if self._idle is not None:
            self._idle = asyncio.get_running_loop().call_later(ECHO_IDLE_S, self._idle_tick)

    # ------------------------------------------------------------ dispatch
    async def handle(self, m: M.RawMessage) -> None:
        if not self.negotiated:
            if m.type != W.OFPT_HELLO:
                self.send(M.encode_error(m.xid, W.OFPET_HELLO_FAILED, W.OFPHFC_INCOMPATIBLE, b"expected HELLO first"))
                self.close()
                return
            if W.OFP_VERSION not in M.hello_versions(m.version, m.body):
                self.send(M.encode_error(m.xid, W.OFPET_HELLO_FAILED, W.OFPHFC_INCOMPATIBLE, b"OneSwitch speaks OpenFlow 1.3 (0x04) only"))
                self.close()
                return
            self.negotiated = True
            return
        if m.version != W.OFP_VERSION:
            self.error(m.xid, m.raw, W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_VERSION)
            return
        if m.type not in (W.OFPT_FLOW_MOD, W.OFPT_GROUP_MOD, W.OFPT_ECHO_REQUEST, W.OFPT_ECHO_REPLY):
            await self.flush()
        try:
            if self.role == ROLE_SLAVE and m.type in MODIFYING:
                raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_IS_SLAVE, "this connection is a slave")
            handler = HANDLERS.get(m.type)
            if handler is None:
                raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_TYPE, f"message type {m.type} is not accepted by a switch")
            with tun_metadata_decoding(self.ep):  # (values longer than the TLV map: endpoint_tun_metadata.py)
                await handler(self, m)
        except W.OFError as e:
            log.debug("xid %d: %s", m.xid, e)
            self.error(m.xid, m.raw, e.etype, e.code)
        except Exception:  # a bug of ours must not take the connection down
            log.exception("handling message type %d xid %d", m.type, m.xid)
            self.error(m.xid, m.raw, W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM)

    def handle_flow_mod(self, m: M.RawMessage) -> None:
        """``handle`` for a FLOW_MOD after the handshake, in the session's version:
        the same checks and error replies, called without a coroutine. The common
        ADD goes through the endpoint's fast lane (fastlane.py), which declines
        everything else, errors included, to the general path."""
        if self.ep.tlv_map:  # (values longer than the TLV map: endpoint_tun_metadata.py)
            with tun_metadata_decoding(self.ep):
                return self._handle_flow_mod(m)
        self._handle_flow_mod(m)

    def _handle_flow_mod(self, m: M.RawMessage) -> None:
        lane = self.ep.add_lane
        if lane is not None and self.role != ROLE_SLAVE:
            try:
                if lane.take(self, m):
                    return
            except Exception:  # a bug of ours: the general path decides (the lane changes nothing until it commits)
                log.exception("fast lane, message type %d xid %d", m.type, m.xid)
        try:
            if self.role == ROLE_SLAVE:
                raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_IS_SLAVE, "this connection is a slave")
            self.flow_mod(m)
        except W.OFError as e:
            log.debug("xid %d: %s", m.xid, e)
            self.error(m.xid, m.raw, e.etype, e.code)
        except Exception:  # a bug of ours must not take the connection down
            log.exception("handling message type %d xid %d", m.type, m.xid)
            self.error(m.xid, m.raw, W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM)

    def kick(self) -> None:
        """Start carrying out the queued plans in the background while the connection
        goes on reading and translating. A batch of one-step plans is written to the
        switches on the spot when everything before it is written too (nothing in
        flight, or only such batches) and no other plan holds the gate; otherwise it
        is chained after the earlier batch, so order is kept either way."""
        if not self.pending and not self.after_flush:
            return
        pending, n, after = self._take()
        prev = self.flush_task
        written = self._write_at_once(pending) if prev is None or self.written_through else None
        self.written_through = written is not None
        waiters: list[asyncio.Future] = []
        self.flush_waiters = waiters
        self.flush_task = task = asyncio.get_running_loop().create_task(
            self._apply(prev, pending, n, after, waiters, written))
        task.add_done_callback(lambda _: _release(waiters))  # also if cancelled before it ran

    def _take(self) -> tuple[list, int, list]:
        """What is queued (plans, their op count, what waits for them), now in flight."""
        pending, n, self.pending, self.pending_ops = self.pending, self.pending_ops, [], 0
        after, self.after_flush = self.after_flush, []
        self.inflight_ops += n
        return pending, n, after

    def _write_at_once(self, pending: list) -> object:
        """Write a batch of one-step plans to the switches now, if the backend writes on
        submit and the gate is free (the caller checked that all before it is written):
        the awaitable for its confirmation, the ``BackendError`` raised at once, or
        ``_NOTHING`` for no ops; None if it must go the chained way."""
        if not self.ep.backend.writes_on_submit or not all(len(steps) == 1 for _, steps in pending):
            return None
        gate = self.ep.apply_lock
        if not gate.try_hold():
            return None
        try:
            batch = [op for _, steps in pending for op in steps[0]]
            if not batch:
                return _NOTHING
            try:
                return self.ep.backend.submit(batch)
            except BackendError as e:
                return e
        finally:
            gate.release()

    async def flush(self) -> None:
        """Return once everything queued so far is confirmed by every switch."""
        if self.flush_task is None and (self.pending or self.after_flush):
            # nothing in flight (a BARRIER after a few FLOW_MODs): carry the batch out here, which
            # saves starting a task and waking this one from it (two loop turns of its latency)
            pending, n, after = self._take()
            await self._apply(None, pending, n, after, [], self._write_at_once(pending))
            return
        self.kick()
        if self.flush_task is not None and not self.flush_task.done():
            # a future of our own that the last batch resolves as it ends: cancelling this
            # wait leaves the batch running, and the wake-up takes no extra loop turn
            waiter = asyncio.get_running_loop().create_future()
            self.flush_waiters.append(waiter)
            await waiter

    async def _apply(self, prev: asyncio.Task | None, pending: list, n_ops: int, after: list,
                     waiters: list[asyncio.Future], written: object = None) -> None:
        """After the earlier batch: carry out ``pending`` (or wait for its confirmation
        if ``kick`` already wrote it), then what waited for it (buffered packet-outs)."""
        try:
            if prev is not None:
                await asyncio.shield(prev)
            if written is None:
                await self._apply_batches(pending)
            elif isinstance(written, BackendError):
                self._refused(pending, written)
            elif written is not _NOTHING:
                confirm, written = written, _NOTHING
                try:
                    await confirm
                except BackendError as e:
                    self._refused(pending, e)
            for fn in after:
                await fn()
        except Exception:  # never let a background batch die silently
            log.exception("applying queued changes")
        finally:
            if written is not None and hasattr(written, "close"):
                written.close()  # a confirmation never awaited (cancelled before its turn)
            self.inflight_ops -= n_ops
            if self.flush_task is asyncio.current_task():
                self.flush_task = None
            _release(waiters)

    async def _apply_batches(self, pending: list) -> None:
        """Carry out update plans (one batch for every run of one-step plans, a batch
        per step of the others); report a refusal by the xid of the request whose
        plan held the refused op."""
        if not pending:
            return
        batches: list[list] = [[]]
        for _, steps in pending:
            if len(steps) == 1:
                batches[-1] += steps[0]
            else:
                batches += steps
                batches.append([])
        async with self.ep.apply_lock:
            for batch in batches:
                if not batch:
                    continue
                try:
                    await self.ep.backend.apply(batch)
                except BackendError as e:
                    self._refused(pending, e)

    def _refused(self, pending: list, e: BackendError) -> None:
        """A switch refused an op: the OpenFlow error goes to the request whose plan held it."""
        m = next((m for m, steps in pending if any(e.op is o for s in steps for o in s)), pending[0][0])
        etype, code = e.of_error or (W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_UNKNOWN)
        log.warning("physical switch refused a change (xid %d): %s", m.xid, e)
        self.error(m.xid, m.raw, etype, code)

    def queue(self, m: M.RawMessage, plan: object) -> None:
        """Queue the update plan of request ``m`` (its xid and bytes name it in errors)."""
        steps = plan_steps(plan)
        if steps:
            self.pending.append((m, steps))
            self.pending_ops += sum([len(s) for s in steps])

    # ------------------------------------------------------------ handlers
    async def on_echo_request(self, m: M.RawMessage) -> None:
        self.send(M.encode_echo_reply(m.xid, m.body))

    async def on_nothing(self, m: M.RawMessage) -> None:
        pass

    async def on_hello(self, m: M.RawMessage) -> None:
        pass  # a second HELLO is harmless

    async def on_features(self, m: M.RawMessage) -> None:
        caps = M.OFPC_FLOW_STATS | M.OFPC_TABLE_STATS | M.OFPC_PORT_STATS | M.OFPC_GROUP_STATS
        self.send(M.encode_features_reply(m.xid, self.ep.dpid, 0, self.ep.n_tables, caps))  # (no buffers)

    async def on_get_config(self, m: M.RawMessage) -> None:
        self.send(M.encode_get_config_reply(m.xid, self.ep.config_flags, self.miss_send_len))

    async def on_set_config(self, m: M.RawMessage) -> None:
        flags, miss = M.decode_switch_config(m.body)
        if flags & ~0x3:
            raise W.OFError(W.OFPET_SWITCH_CONFIG_FAILED, 0, f"config flags {flags:#x} unknown")
        self.ep.config_flags, self.miss_send_len = flags, miss  # (the flags are the switch's, miss_send_len the connection's)

    async def on_barrier(self, m: M.RawMessage) -> None:
        self.send(M.encode_barrier_reply(m.xid))

    async def on_role(self, m: M.RawMessage) -> None:
        role, gen = M.decode_role_request(m.body)
        ep = self.ep
        if role in (ROLE_MASTER, ROLE_SLAVE):
            if ep.generation_id is not None and ((gen - ep.generation_id) & (1 << 64) - 1) >= 1 << 63:
                raise W.OFError(W.OFPET_ROLE_REQUEST_FAILED, W.OFPRRFC_STALE, f"generation id {gen} is stale")
            ep.generation_id = gen
        if role == ROLE_MASTER:
            for s in ep.sessions:
                if s is not self and s.role == ROLE_MASTER:
                    s.role = ROLE_SLAVE
        if role != ROLE_NOCHANGE:
            self.role = role
        self.send(M.encode_role_reply(m.xid, self.role, ep.generation_id if ep.generation_id is not None else gen))

    async def on_get_async(self, m: M.RawMessage) -> None:
        if m.body:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN, "get async request has a body")
        self.send(M.encode_get_async_reply(m.xid, self.async_masks))  # type: ignore[arg-type]

    async def on_set_async(self, m: M.RawMessage) -> None:
        self.async_masks = M.decode_async_config(m.body)  # type: ignore[assignment]

    async def on_table_mod(self, m: M.RawMessage) -> None:
        if len(m.body) != 8:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN, f"table mod body is {len(m.body)} bytes, expected 8")
        if m.body[0] >= self.ep.n_tables and m.body[0] != ir.OFPTT_ALL:
            raise W.OFError(W.OFPET_TABLE_MOD_FAILED, 0, f"table {m.body[0]} does not exist")

    async def on_port_mod(self, m: M.RawMessage) -> None:
        if len(m.body) != 32:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN, f"port mod body is {len(m.body)} bytes, expected 32")
        (port,) = struct.unpack_from("!I", m.body, 0)
        if port not in self.ep.vports:
            raise W.OFError(W.OFPET_PORT_MOD_FAILED, 0, f"port {port} does not exist")

    async def on_experimenter(self, m: M.RawMessage) -> None:
        from tandem.oneswitch.endpoint_tlv import is_tlv_message, on_tlv_message

        if is_tlv_message(m.body):
            await on_tlv_message(self, m)
            return
        if m.body[:8] == RESUME_HEAD:  # (NXT_RESUME: endpoint_pause.py)
            await on_resume(self, m.body)
            return
        on_nicira_message(self, m)

    async def on_queue_get_config(self, m: M.RawMessage) -> None:
        """QUEUE_GET_CONFIG: as Open vSwitch with no QoS configured, every port has one
        queue, 0, with no properties; OFPP_ANY lists every port; another number is
        ``QUEUE_OP_FAILED/BAD_PORT``."""
        if len(m.body) != 8:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN, f"queue get config body is {len(m.body)} bytes, expected 8")
        (port,) = struct.unpack_from("!I", m.body, 0)
        if port != ir.OFPP_ANY and port not in self.ep.vports:
            raise W.OFError(9, 0, f"port {port} does not exist")  # OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_PORT
        ports = sorted(self.ep.vports) if port == ir.OFPP_ANY else [port]
        queues = b"".join(struct.pack("!IIH6x", 0, p, 16) for p in ports)
        self.send(W.header(23, m.xid, struct.pack("!I4x", port) + queues))  # OFPT_QUEUE_GET_CONFIG_REPLY

    async def on_meter_mod(self, m: M.RawMessage) -> None:
        from tandem.oneswitch.endpoint_meters import on_meter_mod

        await on_meter_mod(self, m)

    async def on_flow_mod(self, m: M.RawMessage) -> None:
        self.flow_mod(m)

    def flow_mod(self, m: M.RawMessage) -> None:
        ep = self.ep
        wf = M.decode_flow_mod(m.body)
        mod = wf.mod
        if mod.command in ("add", "modify", "modify_strict"):
            ep.check_rule(mod.rule)
        elif not mod.all_tables and mod.rule.table >= ep.n_tables:
            raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_BAD_TABLE_ID, f"table {mod.rule.table} >= {ep.n_tables} tables")
        deleting = mod.command.startswith("delete")
        needs_view = deleting or (mod.command == "add" and mod.check_overlap)
        before = {V.rule_key(r): r for r in ep.state.virtual_rules()} if needs_view else {}  # type: ignore[attr-defined]
        if mod.command == "add" and mod.check_overlap:
            r = mod.rule
            for k, other in before.items():
                if k[0] == r.table and k[1] == r.priority and k[2] != r.match and overlaps(other.match, r.match):
                    raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_OVERLAP, "an entry of the same priority overlaps")
        extended = False
        if homed(mod.rule) and mod.command in ("add", "modify", "modify_strict"):
            from tandem.oneswitch.endpoint_meters import plan_extensions

            for plan in plan_extensions(ep, mod.rule):  # one switch per meter and for ct (endpoint_meters.py)
                self.queue(m, plan)
                extended = True
        # a metered (or ct) rule may go (modified, replaced, deleted: below): extended ports may then come back
        release = bool(getattr(ep.state, "extensions", None)) and (mod.command.startswith("modify") or (
            mod.command == "add" and homed(ep.state.comp.vrules.get(V.rule_key(mod.rule)))))  # type: ignore[attr-defined]
        try:
            try:
                plan = ep.state.apply(mod)  # type: ignore[attr-defined]
            except Exception:
                if extended:
                    self._undo_extensions(m)
                raise
        except W.OFError:
            raise
        except Exception as e:  # the translator refuses (unsupported construct, ...)
            etype, code = error_of(e, (W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_UNKNOWN))
            raise W.OFError(etype, code, f"OneSwitch cannot translate this flow mod: {e}") from None
        self.queue(m, plan)
        if deleting:  # (and the flows the host learned that it covers: learn_translate.py)
            self.queue(m, [learned_deletes(ep.state, mod, ep.n_tables)] if getattr(ep.state, "comp", None) else [])
        now = time.monotonic()
        if mod.command == "add":
            ep.rule_meta[V.rule_key(mod.rule)] = (now, wf.flags)
        elif deleting:
            after = {V.rule_key(r) for r in ep.state.virtual_rules()}  # type: ignore[attr-defined]
            for k, r in before.items():
                if k not in after:
                    ep.notify_removed(r, M.OFPRR_DELETE)
                    release = release or (homed(r) and bool(getattr(ep.state, "extensions", None)))
        if release:
            from tandem.oneswitch.endpoint_meters import plan_releases

            for p in plan_releases(ep):
                self.queue(m, p)
        if wf.buffer_id != W.OFP_NO_BUFFER and mod.command in ("add", "modify", "modify_strict"):
            raise unknown_buffer(wf.buffer_id)  # (the flow mod is carried out, as by Open vSwitch)
        if self.pending_ops > MAX_PENDING_OPS:
            self.kick()

    def _undo_extensions(self, m: M.RawMessage) -> None:
        """The flow mod whose rule extended ports was refused: the ports no rule needs on
        the host any more go back (queued after the extension, so the switches end as they
        were and a refused FLOW_MOD changes nothing)."""
        from tandem.oneswitch.endpoint_meters import plan_releases

        for p in plan_releases(self.ep):
            self.queue(m, p)

    async def on_group_mod(self, m: M.RawMessage) -> None:
        ep = self.ep
        cmd, group = M.decode_group_mod(m.body)
        if cmd == "add" and group.group_id in ep.groups:
            raise W.OFError(W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_GROUP_EXISTS, f"group {group.group_id} exists")
        if cmd == "modify" and group.group_id not in ep.groups:
            raise W.OFError(W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_UNKNOWN_GROUP, f"group {group.group_id} does not exist")
        for b in group.buckets:
            ep.check_actions([a for a in b.actions if not isinstance(a, ir.GroupAction)])
            watched = b.watch_port != ir.OFPP_ANY or b.watch_group != ir.OFPG_ANY
            if cmd != "delete" and group.type in ("all", "indirect") and watched:  # as Open vSwitch answers
                raise W.OFError(W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_WATCH_UNSUPPORTED,
                                f"group {group.group_id}: an {group.type} group's buckets cannot watch a port or group")
            if cmd != "delete" and group.type == "fast_failover" and not watched:
                raise W.OFError(W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_INVALID_GROUP,
                                f"group {group.group_id}: a fast-failover bucket needs a watch_port or watch_group")
        if cmd == "delete":
            gone = sorted(ep.groups) if group.group_id == M.OFPG_ALL else [group.group_id] if group.group_id in ep.groups else []
            groups = {g: v for g, v in ep.groups.items() if g not in gone}
        else:
            gone = []
            groups = {**ep.groups, group.group_id: group}
        try:
            if gone or cmd != "delete":
                for gid in gone:  # OpenFlow: deleting a group deletes the flows that use it
                    before = {V.rule_key(r): r for r in ep.state.virtual_rules()}  # type: ignore[attr-defined]
                    self.queue(m, ep.state.apply(FlowMod("delete", ir.Rule(), all_tables=True, out_group=gid)))  # type: ignore[attr-defined]
                    after = {V.rule_key(r) for r in ep.state.virtual_rules()}  # type: ignore[attr-defined]
                    for k, r in before.items():
                        if k not in after:
                            ep.notify_removed(r, M.OFPRR_GROUP_DELETE)
                homing = group_homing(self, m, list(groups.values()))  # (ct in a bucket: bucket_ct.py)
                try:  # consistent update: flow ids kept, new items before the old ones go (plan.py)
                    self.queue(m, ep.state.set_groups(groups.values()))  # type: ignore[attr-defined]
                finally:
                    homing()  # (the ports no rule or group needs on the host go back)
        except W.OFError:
            raise
        except Exception as e:  # the translator cannot place the group (or a rule using it)
            etype, code = error_of(e, (W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_BAD_BUCKET))
            if etype == W.OFPET_FLOW_MOD_FAILED:
                etype, code = W.OFPET_GROUP_MOD_FAILED, W.OFPGMFC_BAD_BUCKET
            raise W.OFError(etype, code, f"OneSwitch cannot translate this group mod: {e}") from None
        ep.groups = groups

    async def on_packet_out(self, m: M.RawMessage) -> None:
        ep = self.ep
        po = M.decode_packet_out(m.body)
        if po.in_port not in ep.vports and po.in_port not in (ir.OFPP_CONTROLLER, ir.OFPP_ANY, ir.OFPP_LOCAL):
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_PORT, f"in_port {po.in_port} is not a port of this switch")
        ep.check_actions(po.actions, packet_out=True)
        endpoint_normal.check(ep, po.in_port, po.actions)
        if po.buffer_id != W.OFP_NO_BUFFER:
            raise unknown_buffer(po.buffer_id)
        frame = po.data
        if not frame:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_PACKET, "packet out without a packet")
        check_nsh_ttl(po.actions, frame, ep.groups, whole_on_host(ep, po.actions))  # (dec_nsh_ttl: endpoint_nsh_ttl.py)
        check_frame(ep, po.actions, frame)  # (ct's prerequisite, as Open vSwitch: packet_out_whole.py)
        check_output_reg_frame(po.actions, frame)  # (a header source's prerequisite: endpoint_output_reg.py)
        away = ports_to_home(ep, po.actions)  # (every port to the host first: packet_out_whole.py)
        if away:
            await carry(ep, lambda: self._home(m, away))  # (the moved copies' counters: carried_counters.py)
        await ep.packet_out(po.in_port, po.actions, frame)

    async def _home(self, m: M.RawMessage, away: list[int]) -> None:
        for plan in homing_plans(self.ep, away):
            self.queue(m, plan)
        await self.flush()
        self.ep.homed_on_demand = True

    async def _end_homing(self, m: M.RawMessage) -> None:
        """Before a change to the tables: the ports a PACKET_OUT homed go back (those nothing
        else keeps on the host), so the change is checked and translated as without it;
        their host copies' counters carried (the reads also take in the host's packet-ins
        of the PACKET_OUT before the ports' map changes)."""
        self.ep.homed_on_demand = False
        await self.flush()
        await carry(self.ep, lambda: self._release(m))

    async def _release(self, m: M.RawMessage) -> None:
        from tandem.oneswitch.endpoint_meters import plan_releases

        for plan in plan_releases(self.ep):
            self.queue(m, plan)
        await self.flush()

    async def on_multipart(self, m: M.RawMessage) -> None:
        from tandem.oneswitch.endpoint_multipart import answer

        req = S.decode_multipart_request(m.body)
        for msg in await answer(self.ep, m.xid, req):
            self.send(msg)


HANDLERS = {
    W.OFPT_HELLO: Session.on_hello,
    W.OFPT_ECHO_REQUEST: Session.on_echo_request,
    W.OFPT_ECHO_REPLY: Session.on_nothing,
    W.OFPT_EXPERIMENTER: Session.on_experimenter,
    W.OFPT_FEATURES_REQUEST: Session.on_features,
    W.OFPT_GET_CONFIG_REQUEST: Session.on_get_config,
    W.OFPT_SET_CONFIG: Session.on_set_config,
    W.OFPT_PACKET_OUT: Session.on_packet_out,
    W.OFPT_FLOW_MOD: Session.on_flow_mod,
    W.OFPT_GROUP_MOD: Session.on_group_mod,
    W.OFPT_PORT_MOD: Session.on_port_mod,
    W.OFPT_TABLE_MOD: Session.on_table_mod,
    W.OFPT_MULTIPART_REQUEST: Session.on_multipart,
    W.OFPT_BARRIER_REQUEST: Session.on_barrier,
    W.OFPT_ROLE_REQUEST: Session.on_role,
    W.OFPT_GET_ASYNC_REQUEST: Session.on_get_async,
    W.OFPT_SET_ASYNC: Session.on_set_async,
    W.OFPT_METER_MOD: Session.on_meter_mod,
    22: Session.on_queue_get_config,  # OFPT_QUEUE_GET_CONFIG_REQUEST
}
