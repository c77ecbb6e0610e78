"""Hosts in network namespaces for the controller tests: each host is a netns
with a veth whose peer (in the root namespace) becomes one physical switch
port. Names carry the test process id so parallel runs do not collide.
Everything created is removed by ``close()`` (also on failure: use ``with``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PYPING = str(Path(__file__).with_name("pyping.py"))


def netns_available() -> bool:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    probe = f"tndprobe{os.getpid() % 100000}"
    ok = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ok


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p


class Hosts:
    def __init__(self, n: int, subnet: str = "10.77.0") -> None:
        tag = os.getpid() % 100000
        self.names = [f"tnd{tag}h{i}" for i in range(1, n + 1)]
        self.veths = [f"tnd{tag}v{i}" for i in range(1, n + 1)]
        self.ips = [f"{subnet}.{i}" for i in range(1, n + 1)]
        self.macs = [f"02:77:00:00:00:{i:02x}" for i in range(1, n + 1)]
        self._made: list[tuple[str, str]] = []
        try:
            for ns, veth, ip, mac in zip(self.names, self.veths, self.ips, self.macs):
                sh("ip", "netns", "add", ns)
                self._made.append(("netns", ns))
                sh("ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "n")
                self._made.append(("link", veth))
                sh("ip", "link", "set", veth + "n", "netns", ns)
                sh("ip", "-n", ns, "link", "set", veth + "n", "name", "eth0")
                sh("ip", "-n", ns, "link", "set", "eth0", "address", mac)
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
                sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
                sh("ip", "-n", ns, "link", "set", "eth0", "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                sh("sysctl", "-qw", f"net.ipv6.conf.{veth}.disable_ipv6=1", check=False)
                sh("ip", "link", "set", veth, "up")
        except BaseException:
            self.close()
            raise

    def ping(self, src: int, dst: int, wait_s: float = 1.0) -> bool:
        """One ICMP echo from host ``src`` to host ``dst`` (indices)."""
        p = subprocess.run(["ip", "netns", "exec", self.names[src], sys.executable, PYPING, self.ips[dst], str(wait_s)],
                           capture_output=True, text=True, timeout=30)
        return p.returncode == 0

    def pairs(self) -> list[tuple[int, int]]:
        n = len(self.names)
        return [(a, b) for a in range(n) for b in range(n) if a != b]

    def ping_all(self, attempts: int = 8) -> dict[tuple[int, int], bool]:
        """Ping every ordered pair (in parallel), retrying failures a few times
        (the first packets of a pair go to the controller)."""
        result = {p: False for p in self.pairs()}
        for _ in range(attempts):
            todo = [p for p, ok in result.items() if not ok]
            if not todo:
                break
            with ThreadPoolExecutor(len(todo)) as ex:
                for p, ok in zip(todo, ex.map(lambda ab: self.ping(*ab), todo)):
                    result[p] = ok
        return result

    def close(self) -> None:
        for kind, name in reversed(self._made):
            if kind == "link":
                sh("ip", "link", "del", name, check=False)
            else:
                sh("ip", "netns", "del", name, check=False)
        self._made.clear()

    def __enter__(self) -> "Hosts":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_for(pred, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False
