"""Faucet drives OneSwitch on the emulator backend (``tandem serve --backend emu``,
in process): it learns two hosts from their frames and installs its host flows with
timeouts; dp-core ages them in emulated time, so once the clock passes their longest
timeout they are gone, as on an Open vSwitch bridge (before, the emulator backend
dropped an ordinary rule's timeouts and Faucet's learned hosts never expired).

Faucet runs from the controllers' venv (`make controllers`; TANDEM_CONTROLLERS_VENV);
a missing venv fails the test with that instruction."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, emu_endpoint
from test_endpoint_controllers import REPO, faucet_command, process
from test_endpoint_learn import TOPOLOGY
from test_endpoint_ovs_view import flow_stats
from test_endpoint_protocol import async_test
from tandem.rules.packets import build_frame

DPID = 0x7A4D_0000_0000_0006
A, B = 0x0200_0000_00A1, 0x0200_0000_00B2


def controllers_venv() -> Path:
    venv = Path(os.environ.get("TANDEM_CONTROLLERS_VENV", str(REPO / ".venv" / "controllers")))
    if not os.access(venv / "bin" / "faucet", os.X_OK):
        pytest.fail(f"controllers venv {venv} lacks faucet: run `make controllers` (or set TANDEM_CONTROLLERS_VENV)",
                    pytrace=False)
    return venv


async def _until(check, timeout: float = 60.0):
    for _ in range(int(timeout / 0.2)):
        got = await check()
        if got:
            return got
        await asyncio.sleep(0.2)
    raise AssertionError("timed out")


def _hosts_in(entries) -> list:
    """Faucet's flows that name host A or B (its learned hosts), as (mac, idle, hard)."""
    out = []
    for e in entries:
        for f in ("eth_src", "eth_dst"):
            fm = e.rule.match.get(f)
            if fm is not None and fm.value in (A, B) and (e.rule.idle_timeout or e.rule.hard_timeout):
                out.append((fm.value, e.rule.idle_timeout, e.rule.hard_timeout))
    return out


@async_test
async def test_faucet_learned_host_flows_expire_on_the_emulator(tmp_path):
    faucet, env, port = faucet_command(controllers_venv(), tmp_path, DPID)
    ep, backend = await emu_endpoint(TOPOLOGY, dpid=DPID)
    with process(faucet, tmp_path / "faucet.out", env):
        task = ep.connect(f"tcp:127.0.0.1:{port}", max_backoff=0.5)
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))  # a second controller, to read the flows
        try:
            log = tmp_path / "faucet.log"

            async def configured():
                return log.exists() and "Configuring VLAN office" in log.read_text() and len(await flow_stats(c)) > 10

            await _until(configured)
            where = {v: (vp.switch, vp.port) for v, vp in ep.vports.items()}

            async def learned():
                for v, mac, other in ((1, A, B), (3, B, A)):  # A on virtual 1 (host), B on virtual 3 (snic1)
                    backend.inject(*where[v], build_frame(eth_src=mac, eth_dst=other))
                backend.run_for(0.01)
                await asyncio.sleep(0.3)
                hosts = _hosts_in(await flow_stats(c))
                return hosts if {m for m, _, _ in hosts} == {A, B} else None

            hosts = await _until(learned)
            timeouts = [t for _, i, h in hosts for t in (i, h) if t]
            backend.run_for(min(timeouts) - 2)
            await asyncio.sleep(0.5)
            assert {m for m, _, _ in _hosts_in(await flow_stats(c))} == {A, B}, "expired early"
            backend.run_for(max(timeouts) - min(timeouts) + 4)  # past every timeout (looked at within a modelled second)
            await asyncio.sleep(1.0)
            assert _hosts_in(await flow_stats(c)) == []
            assert "OFError" not in log.read_text()
        finally:
            task.cancel()
            c.close()
            await ep.close()
            await backend.close()
