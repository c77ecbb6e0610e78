"""A live os-ken controller drives `tandem serve --scenario examples/uno-sdwan.yaml
--backend emu`: the scenario's machine (host + TILE-Gx-like sNIC, SECGW and L7FW
where `tandem run` places them, the 4 Gbps source) with empty dp-core pipelines.
os-ken runs simple_switch_13 (table-miss to the controller, MAC learning) and
chain_rules.py, which installs the chain's virtual rules as printed by
`tandem rules from-chains`; OneSwitch translates those FLOW_MODs onto the host
and sNIC switches while the traffic runs. The frames reach the VM through both
NFs; before the rules arrive they miss the tables (counted as table_miss)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import sys
from pathlib import Path

import pytest

from test_endpoint_controllers import controllers, free_port, process  # noqa: F401  (fixture)
from netns_hosts import wait_for

REPO = Path(__file__).resolve().parents[2]
SDWAN = REPO / "examples" / "uno-sdwan.yaml"
APPS = [REPO / "scripts" / "osken_apps" / "simple_switch_13.py", REPO / "scripts" / "osken_apps" / "chain_rules.py"]


def test_osken_drives_the_sdwan_scenario_through_both_nfs(tmp_path, controllers):  # noqa: F811
    flows = tmp_path / "sdwan.flows"
    r = subprocess.run([sys.executable, "-m", "tandem.cli", "rules", "from-chains", str(SDWAN)], capture_output=True,
                       text=True, timeout=60, cwd=REPO)
    assert r.returncode == 0, r.stderr
    flows.write_text(r.stdout)
    port = free_port()
    manager = [str(controllers / "bin" / "osken-manager"), "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port",
               str(port), *map(str, APPS)]
    osken_log, serve_log = tmp_path / "osken.log", tmp_path / "serve.log"
    metrics, ready = tmp_path / "metrics.json", tmp_path / "ready"
    with process(manager, osken_log, env=dict(os.environ, TANDEM_CHAIN_RULES=str(flows))):
        assert wait_for(lambda: "instantiating app" in osken_log.read_text(), 30), osken_log.read_text()
        serve = [sys.executable, "-m", "tandem.cli", "serve", "--scenario", str(SDWAN), "--backend", "emu",
                 "--controller", f"tcp:127.0.0.1:{port}", "--metrics", str(metrics), "--ready-file", str(ready),
                 "--speed", "0.5"]
        with process(serve, serve_log) as p:
            assert wait_for(lambda: ready.exists(), 60), serve_log.read_text()
            assert wait_for(lambda: "chain rules: installed 3 flows" in osken_log.read_text(), 30), osken_log.read_text()
            time.sleep(2)  # let the traffic run
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(30)
        assert p.returncode == 0, serve_log.read_text()
    assert "connected" in osken_log.read_text()
    m = json.loads(metrics.read_text())
    assert m["placement"] == {"l7fw1": "snic0", "secgw1": "snic0"}  # UNO's decision, as tandem run takes it
    f = m["flows"]["wan-in"]
    assert f["rx_packets"] > 10_000, f  # the VM received the chain's traffic ...
    assert m["nfs"]["secgw1"]["packets"] >= f["rx_packets"] and m["nfs"]["l7fw1"]["packets"] >= f["rx_packets"]  # ... via both NFs
    assert set(m["drops"]) <= {"table_miss"}  # only what came before the controller's rules
    assert m["drops"].get("table_miss", 0) < f["tx_packets"] // 4
