"""Running the agent's REST API inside an asyncio program (I/O shell).

``open_agent`` builds what ``tandem agent`` needs from a scenario and a state
database: the emulator backend (the database's placement, every NF port
declared), the OneSwitch state, the ``AgentService`` reconciled with the
database. ``ApiServer`` serves the FastAPI app with uvicorn on a socket bound
here (so a busy port is one clear error and port 0 picks a free one), keeps
the database's rule table in step with the switch (a controller may write
rules too) and stops cleanly. ``run_agent`` is the whole `tandem agent`
command: the above plus the emulator clock, until SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
from pathlib import Path
from typing import Optional

from tandem.agent.service import AgentService
from tandem.agent.store import Store, StoreError
from tandem.errors import ENVIRONMENT, INPUT, TandemError


def parse_api(spec: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); refuses anything else with the expected form."""
    host, sep, port = spec.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise TandemError(f"--api {spec!r}: expected HOST:PORT, e.g. 127.0.0.1:8181", INPUT)
    return host, int(port)


def bind(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        fam = infos[0][0]
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it: no Nagle stall
        s.bind((host, port))
        s.listen(128)
        s.setblocking(False)
        return s
    except OSError as e:
        why = "the port is already in use" if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
        raise TandemError(f"--api {host}:{port}: cannot listen: {why}", ENVIRONMENT) from None


def open_store(path: Path) -> Store:
    try:
        return Store(path)
    except StoreError as e:
        raise TandemError(str(e), INPUT) from None


def stored_placement(path: Optional[Path]) -> dict[str, str]:
    """Scenario NF -> device recorded in a state database (empty if none yet): what
    `tandem serve --api` builds the emulator with after a restart."""
    if path is None or not Path(path).exists():
        return {}
    st = open_store(path)
    try:
        return {r.name: r.device for r in st.nfs() if r.origin == "scenario"}
    finally:
        st.close()


class ApiServer:
    """uvicorn serving the agent app on an already bound socket, in the running loop."""

    def __init__(self, svc: AgentService, sock: socket.socket, sync_period_s: float = 0.5,
                 store: Optional[Store] = None) -> None:
        import uvicorn

        from tandem.agent.rest import make_app

        class _Server(uvicorn.Server):
            def install_signal_handlers(self) -> None:  # the program owns SIGINT/SIGTERM
                pass

            @contextlib.contextmanager
            def capture_signals(self):
                yield

        self.svc, self.sock = svc, sock
        self.server = _Server(uvicorn.Config(make_app(svc), log_level="warning", lifespan="off", access_log=False))
        self.task: Optional[asyncio.Task] = None
        self.sync: Optional[asyncio.Task] = None
        self.sync_period_s = sync_period_s
        self.store = store  # closed with the server when given

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> None:
        self.task = asyncio.create_task(self.server.serve(sockets=[self.sock]))
        self.sync = asyncio.create_task(self._sync())
        while not self.server.started:
            if self.task.done():
                self.task.result()
                raise TandemError("the REST server stopped while starting", ENVIRONMENT)
            await asyncio.sleep(0.01)

    async def _sync(self) -> None:
        while True:
            await asyncio.sleep(self.sync_period_s)
            self.svc.sync_rules()

    async def close(self) -> None:
        if self.sync is not None:
            self.sync.cancel()
        self.server.should_exit = True
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, 5)
        await self.svc.wait_migrations()
        self.svc.sync_rules()
        if self.store is not None:
            self.store.close()



def agent_backend(sc, placement: dict[str, str]):
    """The emulator backend of an agent on ``sc`` (every NF port declared on every device)."""
    from tandem.agent.emu_backend import AgentEmuBackend

    return AgentEmuBackend(sc, placement, extra_ports=AgentService(sc, None).declared_ports())


async def start_api(sc, state_db: Path, backend, state, api: str) -> "ApiServer":
    """`tandem serve --api`: the agent on serve's started backend and OneSwitch state (the
    controller writes rules too), reconciled with ``state_db``, its API serving."""
    host, port = parse_api(api)
    sock = bind(host, port)
    store = open_store(state_db)
    svc = AgentService(sc, store, owns_rules=False)
    await _start(svc, backend, state)
    server = ApiServer(svc, sock, store=store)
    await server.start()
    return server


async def _start(svc: AgentService, backend, state) -> None:
    """Reconcile with the database; what does not fit the scenario is bad input (exit 2)."""
    from tandem.agent.service import AgentError

    try:
        await svc.start(backend, state)
    except AgentError as e:
        raise TandemError(str(e), INPUT) from None


async def open_agent(sc, store: Store):
    """(service, backend, state) for ``sc``, reconciled with ``store``."""
    from tandem.backends.base import BackendError
    from tandem.oneswitch.endpoint import layout_for
    from tandem.oneswitch.scenario import derive_topology
    from tandem.oneswitch.state import OneSwitchState

    from tandem.placement.from_scenario import DecisionError

    svc = AgentService(sc, store, owns_rules=True)
    try:
        placement = svc.placement()
    except (DecisionError, ValueError) as e:
        raise TandemError(f"scenario {sc.name}: no placement for its NFs: {e}", INPUT) from None
    topo = derive_topology(sc, placement)
    backend = agent_backend(sc, placement)
    try:
        await backend.start(layout_for(topo))
    except BackendError as e:
        raise TandemError(f"cannot start the emulator: {e}", ENVIRONMENT) from None
    state = OneSwitchState(topo)
    await _start(svc, backend, state)
    return svc, backend, state


async def run_agent(scenario: Path, api: str, state_db: Path, speed: float, ready_file: Optional[Path],
                    echo=print) -> None:
    from tandem.model.load import ScenarioError, load_scenario

    host, port = parse_api(api)
    try:
        sc = load_scenario(scenario)
    except ScenarioError as e:
        raise TandemError(str(e), INPUT) from None
    sock = bind(host, port)
    store = open_store(state_db)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    svc, backend, _ = await open_agent(sc, store)
    server = ApiServer(svc, sock)
    from tandem.backends.emu import advance_in_real_time

    clock = asyncio.create_task(advance_in_real_time(backend, speed))
    try:
        await server.start()
        echo(f"agent: {len(svc.nfs)} NFs ({', '.join(f'{n}->{i.record.device}' for n, i in sorted(svc.nfs.items()))}), "
             f"{len(svc.state.virtual_rules())} virtual rules; REST API on {server.url} (state: {state_db})")
        if ready_file is not None:
            ready_file.write_text(server.url + "\n")
        await stop.wait()
    finally:
        clock.cancel()
        await server.close()
        await backend.close()
        store.close()
        echo("agent stopped")
