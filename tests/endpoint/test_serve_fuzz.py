"""The OpenFlow fuzz against a live `tandem serve` process on 127.0.0.1.

10,000+ seeded corrupted and truncated messages (test_endpoint_fuzz's corpus
and mutations) go to `tandem serve --backend fake` over TCP. Afterwards: the
process is still running (0 crashes), every message was answered with an
error, accepted, or - for a broken length field only - its connection closed
as OpenFlow 1.3 requires, ECHO is still answered, and the server's resident
memory grew by less than 5 MB across the fuzz (measured after a warm-up).
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M

from endpoint_helpers import OFClient
from test_endpoint_fuzz import SEED, corpus, mutate

TOPO = Path(__file__).with_name("three_switches.yaml")
N_WARMUP = 1_000
N_MESSAGES = 10_000
BATCH = 100


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def fuzz(port: int, rng: random.Random, n: int, first_xid: int) -> dict[str, int]:
    base = corpus()
    c = await OFClient.connect(port)
    counts = {"refused": 0, "accepted": 0, "closed": 0, "internal": 0}
    sent, xid = 0, first_xid
    while sent < n:
        batch, broken = {}, False
        for _ in range(min(BATCH, n - sent)):
            xid += 1
            raw, broken = mutate(rng, rng.choice(base), xid)
            batch[xid] = raw
            c.send(raw)
            sent += 1
            if broken:
                break
        if broken:  # an impossible length: an error, then the switch closes the connection
            replies = []
            try:
                while True:
                    replies.append(await c.recv(timeout=5))
            except ConnectionError:
                pass
            counts["closed"] += 1
            batch.popitem()
            c.close()
            c = await OFClient.connect(port)
        else:
            echo = 0xE0000000 + sent
            c.send(M.encode_echo_request(echo, b"alive"))
            replies = await c.until(W.OFPT_ECHO_REPLY, echo, timeout=10)
        errs = set()
        for m in replies:
            if m.type == W.OFPT_ERROR:
                errs.add(m.xid)
                if struct.unpack_from("!HH", m.body) == (W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM):
                    counts["internal"] += 1
        counts["refused"] += len(errs & set(batch))
        counts["accepted"] += len(set(batch) - errs)
    assert await c.echo_ok()
    c.close()
    return counts


def test_ten_thousand_malformed_messages_against_a_live_serve(tmp_path):
    port = free_port()
    ready = tmp_path / "ready"
    p = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve", "--topology", str(TOPO), "--backend", "fake",
                          "--listen", f"ptcp:{port}:127.0.0.1", "--ready-file", str(ready)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        rng = random.Random(SEED)
        asyncio.run(fuzz(port, rng, N_WARMUP, 1))  # caches, imports, first rules
        before = rss_kb(p.pid)
        counts = asyncio.run(fuzz(port, rng, N_MESSAGES, 1_000_000))
        after = rss_kb(p.pid)
        assert p.poll() is None, "tandem serve died"
        # a fresh connection: handshake, echo, a valid FLOW_MOD confirmed by a barrier
        async def still_works() -> bool:
            from tandem.rules.ir import ApplyActions, FlowMod, Match, Output, Rule

            c = await OFClient.connect(port)
            ok = await c.echo_ok()
            c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", Rule(Match.of(in_port=4), (ApplyActions((Output(1),)),), priority=7))))
            msgs = await c.barrier()
            c.close()
            return ok and not [m for m in msgs if m.type == W.OFPT_ERROR]
        assert asyncio.run(still_works())
    finally:
        p.terminate()
        out, err = p.communicate(timeout=30)
    assert "Traceback" not in err, err[-2000:]
    assert counts["refused"] + counts["accepted"] + counts["closed"] == N_MESSAGES
    assert counts["internal"] == 0
    assert counts["refused"] > N_MESSAGES * 0.35 and counts["closed"] > 50
    growth_mb = (after - before) / 1024
    print(f"serve fuzz: {N_MESSAGES} messages: {counts}; RSS {before / 1024:.1f} -> {after / 1024:.1f} MB")
    assert growth_mb < 5, growth_mb
