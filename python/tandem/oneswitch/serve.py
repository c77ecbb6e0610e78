"""`tandem serve`: run OneSwitch as an OpenFlow 1.3 switch on a backend.

A thin shell: load the topology, start the backend (build bridges, links,
ports), start the endpoint (``--controller tcp:HOST:PORT`` active and/or
``--listen ptcp:PORT[:IP]`` passive), run until SIGINT/SIGTERM, then remove
everything it created. User errors (bad topology, bad spec, OVS missing) are
one-line messages with exit code 2, never tracebacks.

With ``--scenario S.yaml`` (emu backend) the machine is the scenario's: the
topology is derived from it for the placement `tandem run` would take
(``--place`` pins on top), every device runs a dp-core pipeline that starts
empty (the controller's FLOW_MODs, translated by OneSwitch, are all it
holds), the NFs run on their devices and the scenario's traffic sources
send while simulated time advances at ``--speed`` simulated seconds per
wall second. On exit the emulator's metrics go to ``--metrics`` (JSON).
With ``--api HOST:PORT`` the NF agent's REST API (tandem.agent) runs beside
the endpoint on the same OneSwitch state, kept in ``--state-db``.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import signal
import sys
from pathlib import Path
from typing import Optional

import typer


def _fail(msg: str, code: int = 2) -> None:
    """One line, then exit: 2 bad input (a flag, the topology), 3 the machine refused
    (README "Exit codes")."""
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def check_ifaces(names: dict, backend: str) -> None:
    """--port-iface names must be network interfaces of this machine (the ovs backend attaches them)."""
    import socket

    for name in names.values():
        if backend != "ovs":
            typer.echo(f"warning: --port-iface {name}: only the ovs backend attaches interfaces; the {backend} backend ignores it", err=True)
            continue
        try:
            socket.if_nametoindex(name)
        except OSError:
            _fail(f"--port-iface: no network interface named {name!r} on this machine (`ip link` lists them)")


def check_specs(controllers: list[str], listens: list[str]) -> None:
    for spec in controllers:
        parts = spec.split(":")
        if len(parts) != 3 or parts[0] != "tcp" or not parts[1] or not parts[2].isdigit() or not 0 < int(parts[2]) < 65536:
            _fail(f"--controller {spec!r}: expected tcp:HOST:PORT, e.g. tcp:127.0.0.1:6653")
    for spec in listens:
        parts = spec.split(":")
        if len(parts) not in (2, 3) or parts[0] != "ptcp" or not parts[1].isdigit() or int(parts[1]) > 65535:
            _fail(f"--listen {spec!r}: expected ptcp:PORT or ptcp:PORT:IP, e.g. ptcp:6633")


def parse_port_ifaces(items: list[str], topo: object) -> dict[tuple[str, int], str]:
    """``VPORT=IFNAME`` items -> {(switch, physical port): IFNAME}."""
    out = {}
    for it in items:
        v, sep, name = it.partition("=")
        if not sep or not v.strip().isdigit() or not name:
            _fail(f"--port-iface {it!r}: expected VPORT=IFNAME, e.g. 1=veth1")
        ref = topo.port_map.get(int(v))  # type: ignore[attr-defined]
        if ref is None:
            _fail(f"--port-iface {it!r}: virtual port {v} is not in the topology")
        out[(ref.switch, ref.port)] = name
    return out


def event_loop_factory():
    """uvloop's event loop where it is installed (Linux, macOS), else asyncio's own.
    A switch's work is mostly turns of the loop (a FLOW_MOD + BARRIER round trip is two
    reads and two writes): uvloop runs them in C, about a quarter fewer instructions
    per round trip in `tandem serve` (benches/flowmod.py)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _scenario_setup(path: Path, place: list[str]):
    """(scenario, decision, derived topology) for ``--scenario``; user errors exit 2."""
    from tandem.model.load import ScenarioError, load_scenario
    from tandem.oneswitch.scenario import ScenarioOneSwitchError, derive_topology
    from tandem.placement.from_scenario import DecisionError, decide

    try:
        sc = load_scenario(path)
    except ScenarioError as e:
        _fail(str(e))
    pins = {}
    for item in place:
        nf, sep, dev = item.partition("=")
        if not sep or nf not in sc.nfs() or dev not in sc.devices:
            _fail(f"--place {item!r}: write NF=DEVICE with an NF ({', '.join(sc.nfs())}) and a device ({', '.join(sc.devices)})")
        pins[nf] = dev
    try:
        decision = decide(sc, None, pins)
        topo = derive_topology(sc, decision.placement)
    except (DecisionError, ScenarioOneSwitchError, ValueError) as e:
        _fail(f"{path}: {e}")
    return sc, decision, topo



async def serve(topology: Path | None, backend_name: str, controllers: list[str], listens: list[str], ovs_db: str | None,
                run_dir: Path | None, port_ifaces: list[str], dpid: int | None, ready_file: Path | None,
                ovs_rundir: str = "/var/run/openvswitch", scenario: Path | None = None, place: list[str] = (),
                speed: float = 1.0, metrics: Path | None = None, api: str | None = None, state_db: Path | None = None) -> None:
    from tandem.backends.base import BackendError
    from tandem.backends.factory import make_backend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import TopologyError, load_topology
    from tandem.oneswitch.translate import TranslationError

    sc = None
    if scenario is not None:
        if api is not None:  # after a restart the NFs are where the agent's database says
            from tandem.agent.api_server import stored_placement

            place = [f"{n}={d}" for n, d in stored_placement(state_db).items()] + list(place)
        sc, decision, topo = _scenario_setup(scenario, list(place))
        typer.echo("placement: " + ", ".join(f"{n}->{d}" for n, d in sorted(decision.placement.items())))
    else:
        try:
            topo = load_topology(topology)
        except TopologyError as e:
            _fail(str(e))
    names = parse_port_ifaces(port_ifaces, topo)
    check_ifaces(names, backend_name)
    options: dict = {}
    if backend_name == "ovs":
        options = {"run_dir": run_dir, "ovs_db": ovs_db, "ovs_rundir": ovs_rundir}
    elif backend_name == "emu":
        from tandem.oneswitch.ids import N_PHYSICAL_TABLES

        options = {"n_tables": N_PHYSICAL_TABLES}  # every table the translator may name, 254 included
    try:
        if sc is not None:
            from tandem.backends.emu_scenario import ScenarioEmuBackend

            backend = ScenarioEmuBackend(sc, decision.placement)
            if api is not None:
                from tandem.agent.api_server import agent_backend

                backend = agent_backend(sc, decision.placement)
        else:
            backend = make_backend(backend_name, **options)
    except BackendError as e:
        _fail(str(e), 3)
    # shared PCIe transit/delivery rules stay installed: a FLOW_MOD is then one plan step, one barrier
    try:
        state = OneSwitchState(topo, pin_infrastructure=True)
    except TranslationError as e:  # e.g. more destinations than PCIe flow-id tags
        _fail(f"cannot translate the topology's shared rules: {e}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await backend.start(layout_for(topo, names))
    except Exception as e:  # OvsError, BackendError, OSError: all user-facing set-up problems
        _fail(f"cannot start the {backend_name} backend: {e}", 3)
    try:
        await backend.apply_steps(state.take_plan().steps)  # the pinned shared rules
    except BackendError as e:
        await backend.close()
        _fail(f"the {backend_name} backend refused OneSwitch's shared rules: {e}", 3)
    ep = OneSwitchEndpoint(state, topo, backend, dpid=dpid)
    api_server = None
    # A switch holds many long-lived rule objects and allocates a few per FLOW_MOD: collect
    # young objects less often (the default 700 makes the collector a tenth of FLOW_MOD time),
    # and leave what start-up built (modules, topology, shared rules) out of every later
    # collection (gc.freeze): a full collection then walks the rules added since, not the
    # whole interpreter. Restored on return (serve also runs in-process, in tests).
    gc_was = gc.get_threshold()
    gc.set_threshold(50_000, 20, 100)
    gc.collect()
    gc.freeze()
    try:
        for spec in listens:
            try:
                port = await ep.listen(spec)
            except OSError as e:
                why = "the port is already in use (another switch or controller listens there)" if e.errno == errno.EADDRINUSE else e.strerror or str(e)
                _fail(f"--listen {spec}: cannot listen: {why}", 3)
            typer.echo(f"listening on ptcp:{port}")
        for spec in controllers:
            ep.connect(spec)
            typer.echo(f"connecting to {spec}")
        typer.echo(f"OneSwitch dpid {ep.dpid:016x}: {len(ep.vports)} virtual ports over {', '.join(backend.switches())}")
        if api is not None:
            from tandem.agent.api_server import start_api

            api_server = await start_api(sc, state_db, backend, state, api)
            typer.echo(f"REST API on {api_server.url}")
        if ready_file is not None:
            ready_file.write_text(f"{ep.dpid:016x}\n")
        from tandem.backends.emu import advance_in_real_time

        clock = asyncio.create_task(advance_in_real_time(backend, speed)) if sc is not None else None
        await stop.wait()
        if clock is not None:
            clock.cancel()
            if metrics is not None:
                import json

                metrics.write_text(json.dumps(backend.metrics(), indent=2) + "\n")
                typer.echo(f"wrote {metrics}")
    except ValueError as e:
        _fail(str(e))
    finally:
        if api_server is not None:
            await api_server.close()
        await ep.close()
        await backend.close()
        gc.unfreeze()
        gc.set_threshold(*gc_was)
        typer.echo("stopped; removed what was created")


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_cmd(
        topology: Optional[Path] = typer.Option(None, "--topology", help="OneSwitch topology YAML (switches, links, ports)."),
        scenario: Optional[Path] = typer.Option(None, "--scenario", help="Serve a scenario's machine (emu backend): derived topology, its NFs and traffic."),
        place: Optional[list[str]] = typer.Option(None, "--place", help="With --scenario: NF=DEVICE (repeatable); the others go where run.placement decides."),
        speed: float = typer.Option(1.0, "--speed", help="With --scenario: simulated seconds per wall-clock second."),
        metrics: Optional[Path] = typer.Option(None, "--metrics", help="With --scenario: write the emulator's metrics (JSON) here on exit."),
        backend: str = typer.Option("ovs", "--backend", help="ovs, emu or fake."),
        controller: Optional[list[str]] = typer.Option(None, "--controller", help="tcp:HOST:PORT to connect to (repeatable)."),
        listen: Optional[list[str]] = typer.Option(None, "--listen", help="ptcp:PORT[:IP] to accept controllers on (repeatable)."),
        ovs_db: Optional[str] = typer.Option(None, "--ovs-db", help="Attach to a running OVS (e.g. unix:/var/run/openvswitch/db.sock) instead of starting a private one."),
        ovs_rundir: str = typer.Option("/var/run/openvswitch", "--ovs-rundir", help="With --ovs-db: where that OVS keeps its <bridge>.mgmt sockets."),
        run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Run directory of the private ovs-vswitchd (default: a temp dir)."),
        port_iface: Optional[list[str]] = typer.Option(None, "--port-iface", help="VPORT=IFNAME: attach kernel interface IFNAME (e.g. a veth) as the physical port of a virtual port."),
        dpid: Optional[str] = typer.Option(None, "--dpid", help="Datapath id in hex (default: derived from the topology)."),
        ready_file: Optional[Path] = typer.Option(None, "--ready-file", help="Write the dpid here once serving (for scripts)."),
        api: Optional[str] = typer.Option(None, "--api", help="With --scenario: serve the NF agent's REST API on HOST:PORT."),
        state_db: Path = typer.Option(Path("tandem-agent.db"), "--state-db", help="With --api: the agent's SQLite state database."),
        verbose: bool = typer.Option(False, "--verbose", "-v"),
    ) -> None:
        """Run OneSwitch: one OpenFlow 1.3 switch made of the topology's physical switches."""
        logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
        if not controller and not listen:
            _fail("give --controller tcp:HOST:PORT and/or --listen ptcp:PORT")
        if (topology is None) == (scenario is None):
            _fail("give exactly one of --topology or --scenario")
        if topology is not None and not topology.is_file():
            _fail(f"--topology {topology}: no such file")
        if scenario is not None and not scenario.is_file():
            _fail(f"--scenario {scenario}: no such file")
        if backend not in ("ovs", "emu", "fake"):
            _fail(f"--backend {backend!r}: expected ovs, emu or fake")
        if scenario is not None and backend != "emu":
            _fail("--scenario runs the scenario's NFs and traffic, which only the emu backend has; use --backend emu")
        if not speed > 0:
            _fail(f"--speed {speed}: must be > 0")
        if api is not None and scenario is None:
            _fail("--api runs the NF agent, which needs the scenario's machine: give --scenario (emu backend)")
        if api is not None:
            from tandem.agent.api_server import parse_api

            parse_api(api)
        check_specs(controller or [], listen or [])
        try:
            dp = int(dpid, 16) if dpid else None
        except ValueError:
            _fail(f"--dpid {dpid!r}: expected hexadecimal digits")
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            runner.run(serve(topology, backend, controller or [], listen or [], ovs_db, run_dir, port_iface or [], dp,
                             ready_file, ovs_rundir, scenario, place or [], speed, metrics, api, state_db))
