"""A private, throw-away Open vSwitch for oracle tests and benchmarks.

``OvsSandbox`` starts its own ``ovsdb-server`` and ``ovs-vswitchd
--enable-dummy --disable-system`` in a temporary directory (no kernel module,
no tap devices, many sandboxes can run at once), builds ``datapath_type=dummy``
bridges with ``type=dummy`` ports whose transmitted frames are recorded with
``options:tx_pcap``, injects raw frames with ``netdev-dummy/receive`` and reads
back what every port sent. Everything it started is stopped and removed on
``close()`` (it is a context manager).

Users: the OVS backend (``backends/ovs.py``) runs its switches in a sandbox
when no existing OVS database is given, and the oracle tests and benchmarks
use it to compare Tandem's data paths with real OVS. The backend itself
speaks OpenFlow to the bridges; only set-up and packet injection shell out.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

OVS_SCHEMA_CANDIDATES = (
    "/usr/share/openvswitch/vswitch.ovsschema",
    "/usr/local/share/openvswitch/vswitch.ovsschema",
)


class OvsError(RuntimeError):
    """An OVS tool failed; the message carries the command and its stderr."""


def ovs_available() -> bool:
    return all(shutil.which(t) for t in ("ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"))


def read_pcap(path: Path) -> list[bytes]:
    """Frames of a classic little- or big-endian pcap file (as OVS writes it)."""
    data = path.read_bytes() if path.exists() else b""
    if len(data) < 24:
        return []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise OvsError(f"{path}: not a pcap file (magic {magic.hex()})")
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack_from(endian + "IIII", data, off)
        off += 16
        if off + incl > len(data):
            break  # a record still being written
        frames.append(data[off : off + incl])
        off += incl
    return frames


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` runs. A zombie counts as exited: detached OVS
    daemons are not our children, so nobody here can reap them, and both
    ``kill(pid, 0)`` and ``/proc/PID`` still succeed for a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


@dataclass
class Bridge:
    name: str
    ports: dict[int, str] = field(default_factory=dict)  # ofport -> interface name


_CPL_IN_BUCKET = re.compile(r",check_pkt_larger\(")


class OvsSandbox:
    """One private ovsdb-server + ovs-vswitchd. Use as a context manager."""

    def __init__(self, base_dir: str | os.PathLike | None = None) -> None:
        if not ovs_available():
            raise OvsError("Open vSwitch tools not found (ovsdb-server, ovs-vswitchd, ovs-vsctl, ovs-ofctl, ovs-appctl); `make test` installs openvswitch-switch")
        self._own_dir = base_dir is None
        self.dir = Path(tempfile.mkdtemp(prefix="tandem-ovs-")) if base_dir is None else Path(base_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db_sock = self.dir / "db.sock"
        self.vswitchd_ctl = self.dir / "vswitchd.ctl"
        self.bridges: dict[str, Bridge] = {}
        self._pcap_offsets: dict[str, int] = {}
        self.tlv_map = ""  # an add-tlv-map argument each new bridge gets (tun_metadata), or none
        self._env = dict(os.environ, OVS_RUNDIR=str(self.dir), OVS_DBDIR=str(self.dir), OVS_LOGDIR=str(self.dir))
        self._started = False
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ process control
    def _run(self, args: Sequence[str], input: str | None = None, check: bool = True) -> str:
        p = subprocess.run(list(args), env=self._env, input=input, capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise OvsError(f"{' '.join(args[:6])}{' …' if len(args) > 6 else ''} failed ({p.returncode}): {p.stderr.strip()}")
        return p.stdout

    def _start(self) -> None:
        schema = next((s for s in OVS_SCHEMA_CANDIDATES if Path(s).exists()), None)
        if schema is None:
            raise OvsError("vswitch.ovsschema not found; is openvswitch-common installed?")
        d = self.dir
        self._run(["ovsdb-tool", "create", str(d / "conf.db"), schema])
        self._run(
            ["ovsdb-server", f"--remote=punix:{self.db_sock}", f"--unixctl={d / 'ovsdb.ctl'}",
             f"--pidfile={d / 'ovsdb.pid'}", "--detach", "--no-chdir", f"--log-file={d / 'ovsdb.log'}",
             "-vconsole:off", str(d / "conf.db")]
        )
        self._started = True
        self.vsctl("--no-wait", "init")
        self._run(
            ["ovs-vswitchd", f"unix:{self.db_sock}", "--enable-dummy", "--disable-system",
             f"--unixctl={self.vswitchd_ctl}", f"--pidfile={d / 'vswitchd.pid'}", "--detach", "--no-chdir",
             f"--log-file={d / 'vswitchd.log'}", "-vconsole:off"]
        )

    _alive = staticmethod(lambda pid: pid_alive(pid))

    def close(self) -> None:
        if self._started:
            for name, ctl in (("vswitchd", self.vswitchd_ctl), ("ovsdb", self.dir / "ovsdb.ctl")):
                try:
                    pid = int((self.dir / f"{name}.pid").read_text().strip())
                except (FileNotFoundError, ValueError):
                    continue
                # Ask politely first (fast, lets OVS tidy up), then insist.
                subprocess.run(["ovs-appctl", "-t", str(ctl), "exit"], env=self._env, capture_output=True, timeout=10)
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    deadline = time.monotonic() + 2.0
                    while self._alive(pid) and time.monotonic() < deadline:
                        time.sleep(0.01)
                    if not self._alive(pid):
                        break
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        break
            self._started = False
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "OvsSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ tools
    def vsctl(self, *args: str) -> str:
        return self._run(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=30", *args])

    def appctl(self, *args: str) -> str:
        return self._run(["ovs-appctl", "-t", str(self.vswitchd_ctl), *args])

    def mgmt(self, bridge: str) -> str:
        return f"unix:{self.dir / (bridge + '.mgmt')}"

    def ofctl(self, cmd: str, bridge: str, *args: str, input: str | None = None) -> str:
        return self._run(["ovs-ofctl", "-O", "OpenFlow13", cmd, self.mgmt(bridge), *args], input=input)

    # ------------------------------------------------------------ topology
    def add_bridge(self, name: str, ports: Iterable[int] = (), datapath_id: int | None = None) -> Bridge:
        """A dummy bridge in secure fail mode (no flows = drop), OpenFlow 1.3 only,
        with a dummy interface ``<name>-p<N>`` at OpenFlow port N for each N."""
        args = ["add-br", name, "--", "set", "bridge", name, "datapath_type=dummy",
                "protocols=OpenFlow13", "fail-mode=secure"]
        if datapath_id is not None:
            args += [f"other-config:datapath-id={datapath_id:016x}"]
        br = Bridge(name)
        self.bridges[name] = br
        for n in ports:
            args += self._port_args(br, n)
        self.vsctl(*args)
        if self.tlv_map:  # (ovs-ofctl add-tlv-map's argument: every bridge maps tun_metadata alike)
            self.ofctl("add-tlv-map", name, self.tlv_map)
        return br

    def _port_args(self, br: Bridge, ofport: int) -> list[str]:
        iface = f"{br.name}-p{ofport}"
        br.ports[ofport] = iface
        return ["--", "add-port", br.name, iface, "--", "set", "interface", iface, "type=dummy",
                f"ofport_request={ofport}", f"options:tx_pcap={self.dir / (iface + '.pcap')}"]

    LOCAL = 0xFFFFFFFE  # OFPP_LOCAL: the bridge's own (internal) port

    def capture_local(self, bridge: str) -> None:
        """Record what the bridge's LOCAL port transmits, like any dummy port
        (``take_output(bridge, LOCAL)``); frames go in with ``inject(bridge, LOCAL, ...)``."""
        self.vsctl("set", "interface", bridge, f"options:tx_pcap={self.dir / (bridge + '.pcap')}")
        self.bridges[bridge].ports[self.LOCAL] = bridge

    def del_bridge(self, name: str) -> None:
        """Remove a bridge and forget its ports (their captures stay on disk)."""
        self.vsctl("--if-exists", "del-br", name)
        br = self.bridges.pop(name, None)
        for iface in (br.ports.values() if br else ()):
            self._pcap_offsets.pop(iface, None)

    def add_port(self, bridge: str, ofport: int) -> str:
        br = self.bridges[bridge]
        self.vsctl(*self._port_args(br, ofport)[1:])
        return br.ports[ofport]

    def add_patch(self, a_bridge: str, a_port: int, b_bridge: str, b_port: int) -> None:
        """Join two bridges with a patch-port pair at the given OpenFlow port numbers."""
        a, b = f"{a_bridge}-x{a_port}", f"{b_bridge}-x{b_port}"
        self.vsctl(
            "--", "add-port", a_bridge, a, "--", "set", "interface", a, "type=patch", f"options:peer={b}", f"ofport_request={a_port}",
            "--", "add-port", b_bridge, b, "--", "set", "interface", b, "type=patch", f"options:peer={a}", f"ofport_request={b_port}",
        )

    def no_flood(self, bridge: str, ports: Iterable[int]) -> None:
        set_no_flood(self.vsctl, self._run, self.mgmt(bridge), bridge, ports)

    # ------------------------------------------------------------ flows
    def add_flows(self, bridge: str, flows: Iterable[str]) -> None:
        """Load ovs-ofctl flow lines into a bridge (one ovs-ofctl call for all)."""
        text = "\n".join(flows) + "\n"
        self.ofctl("add-flows", bridge, "-", input=text)

    def add_flow_mods(self, bridge: str, flow_mods: Iterable[bytes]) -> None:
        """Send OpenFlow 1.3 FLOW_MOD messages (whole, as bytes) to a bridge over its
        management socket, then a barrier; OvsError on any error reply. For flows
        ovs-ofctl cannot send in OpenFlow 1.3 (a partly masked ``vlan_tci``, whose
        OXM form loses the mask: Open vSwitch takes it as NXM_OF_VLAN_TCI only)."""
        import socket

        def read(s: socket.socket) -> tuple[int, int, bytes]:
            head = b""
            while len(head) < 8:
                chunk = s.recv(8 - len(head))
                if not chunk:
                    raise OvsError(f"{bridge}: connection closed")
                head += chunk
            _, mtype, length, xid = struct.unpack("!BBHI", head)
            body = b""
            while len(body) < length - 8:
                body += s.recv(length - 8 - len(body))
            return mtype, xid, body

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(self.mgmt(bridge).removeprefix("unix:"))
            s.sendall(struct.pack("!BBHI", 4, 0, 8, 0))  # HELLO, OpenFlow 1.3
            read(s)
            s.sendall(b"".join(flow_mods) + struct.pack("!BBHI", 4, 20, 8, 0xB0B0))  # ... BARRIER_REQUEST
            while True:
                mtype, xid, body = read(s)
                if mtype == 1:  # OFPT_ERROR
                    raise OvsError(f"{bridge}: FLOW_MOD xid {xid} refused: {body[:4].hex()}")
                if mtype == 21 and xid == 0xB0B0:
                    return

    def add_groups(self, bridge: str, groups: Iterable[str]) -> None:
        # (ovs-ofctl 3.1 reads a bucket's check_pkt_larger only as the first action of an
        # ``actions=``, though it prints it anywhere: each gets an ``actions=`` of its own)
        text = "\n".join(_CPL_IN_BUCKET.sub(",actions=check_pkt_larger(", g) for g in groups) + "\n"
        self.ofctl("add-groups", bridge, "-", input=text)

    def replace_flows(self, bridge: str, flows: Iterable[str]) -> None:
        self.ofctl("replace-flows", bridge, "-", input="\n".join(flows) + "\n")

    def del_flows(self, bridge: str, match: str | None = None, strict: bool = False) -> None:
        args = ["--strict"] if strict else []
        self._run(["ovs-ofctl", "-O", "OpenFlow13", *args, "del-flows", self.mgmt(bridge), *([match] if match else [])])

    def dump_flows(self, bridge: str) -> list[str]:
        out = self.ofctl("dump-flows", bridge, "--no-stats")
        return [ln.strip() for ln in out.splitlines() if ln.strip() and not ln.startswith("OFPST_FLOW")]

    # ------------------------------------------------------------ packets
    # netdev-dummy queues at most 100 received frames per port and silently drops
    # the rest, so frames go in chunks below that, each waited for.
    INJECT_BATCH = 90
    # netdev-dummy/receive sizes a frame's buffer by its hex argument's length, so trailing
    # blanks leave room past the frame, as a port's receive buffer has: Open vSwitch's FTP
    # ALG rewrites a message under NAT only with 8 (IPv4) / 45 (IPv6) octets of room.
    INJECT_ROOM = 64
    _RX_PKTS = re.compile(r"rx pkts=(\d+)")

    def rx_count(self, bridge: str, ofport: int) -> int:
        """Frames the port has taken from its receive queue (live, not the 5 s DB stats)."""
        m = self._RX_PKTS.search(self.ofctl("dump-ports", bridge, "LOCAL" if ofport == self.LOCAL else str(ofport)))
        return int(m.group(1)) if m else 0

    def inject(self, bridge: str, ofport: int, frames: Sequence[bytes], batch: int = INJECT_BATCH,
               timeout_s: float = 60.0) -> None:
        """Hand raw Ethernet frames to the dummy port as if received from the wire.
        Chunks of at most ``batch`` (< 100) frames; each chunk is waited for until
        the port has taken it, so none is dropped by the dummy receive queue."""
        if not 0 < batch < 100:
            raise ValueError(f"inject batch {batch}: must be 1..99 (netdev-dummy keeps at most 100 queued frames)")
        iface = self.bridges[bridge].ports[ofport]
        done = self.rx_count(bridge, ofport)
        for i in range(0, len(frames), batch):
            chunk = frames[i : i + batch]
            self.appctl("netdev-dummy/receive", iface, *(f.hex() + "  " * self.INJECT_ROOM for f in chunk))
            done += len(chunk)
            deadline = time.monotonic() + timeout_s
            while self.rx_count(bridge, ofport) < done:
                if time.monotonic() > deadline:
                    raise OvsError(f"{bridge} port {ofport}: injected frames not received within {timeout_s} s")
                time.sleep(0.005)

    def _pcap_path(self, iface: str) -> Path:
        return self.dir / f"{iface}.pcap"

    def settle(self, quiet_s: float = 0.05, timeout_s: float = 10.0, round_trips: int = 3) -> None:
        """Wait until the datapath is idle: every port's capture stayed the same size
        across ``round_trips`` unixctl round trips to ovs-vswitchd (dummy ports are
        polled by its main thread, so each answered command means another pass of
        the main loop) and a quiet period of ``quiet_s``."""
        def sizes() -> tuple[int, ...]:
            return tuple(
                self._pcap_path(i).stat().st_size if self._pcap_path(i).exists() else 0
                for br in self.bridges.values() for i in br.ports.values()
            )
        deadline = time.monotonic() + timeout_s
        prev, stable = sizes(), 0
        while time.monotonic() < deadline:
            self.appctl("version")
            if stable + 1 >= round_trips:
                time.sleep(quiet_s)
            cur = sizes()
            stable = stable + 1 if cur == prev else 0
            prev = cur
            if stable >= round_trips:
                return
        raise OvsError(f"datapath did not settle within {timeout_s}s")

    def take_output(self, bridge: str, ofport: int) -> list[bytes]:
        """Frames the port transmitted since the previous call (call ``settle`` first)."""
        iface = self.bridges[bridge].ports[ofport]
        frames = read_pcap(self._pcap_path(iface))
        seen = self._pcap_offsets.get(iface, 0)
        self._pcap_offsets[iface] = len(frames)
        return frames[seen:]

    def take_all_output(self) -> dict[tuple[str, int], list[bytes]]:
        self.settle()
        return {(b, p): self.take_output(b, p) for b, br in self.bridges.items() for p in br.ports}


def set_no_flood(vsctl, run, mgmt: str, bridge: str, ports: Iterable[int]) -> None:
    """Set OFPPC_NO_FLOOD on ``ports`` of ``bridge``: Open vSwitch's NORMAL (and FLOOD)
    then leave them out. OpenFlow 1.3 has no such bit and Open vSwitch takes it in
    OpenFlow 1.0 only, so the bridge speaks 1.0 too for the port mods, then 1.3 only
    again (the bit stays). ``run`` runs a command line; ``mgmt`` is the bridge's
    management target."""
    ports = list(ports)
    if not ports:
        return
    vsctl("set", "bridge", bridge, "protocols=OpenFlow10,OpenFlow13")
    try:
        for p in ports:
            run(["ovs-ofctl", "-O", "OpenFlow10", "mod-port", mgmt, str(p), "no-flood"])
    finally:
        vsctl("set", "bridge", bridge, "protocols=OpenFlow13")
