"""`tandem agent`, `tandem nf …` and `tandem placement …`: the NF agent's commands.

`tandem agent --scenario S.yaml` runs the agent (emulator backend) with its REST
API; the others are a thin httpx client of that API (``--url``, default
``$TANDEM_AGENT_URL`` or http://127.0.0.1:8181) printing rich tables, or the
API's JSON with ``--json``. An agent that cannot be reached is one line on
stderr and exit code 3; a request the agent refuses (4xx) prints its field and
message and exits 2.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from tandem.errors import ENVIRONMENT, INPUT, INTERNAL, TandemError

DEFAULT_URL = "http://127.0.0.1:8181"

nf_app = typer.Typer(help="NF instances of a running agent (REST client).", no_args_is_help=True)
placement_app = typer.Typer(help="Placement of a running agent's NFs (REST client).", no_args_is_help=True)
console = Console()

URL_OPT = typer.Option(None, "--url", help=f"Agent URL (default: $TANDEM_AGENT_URL or {DEFAULT_URL}).")
JSON_OPT = typer.Option(False, "--json", help="Print the API's JSON.")


def _url(url: Optional[str]) -> str:
    return (url or os.environ.get("TANDEM_AGENT_URL") or DEFAULT_URL).rstrip("/")


def call(method: str, url: Optional[str], path: str, body: Optional[dict] = None, timeout: float = 30.0) -> Any:
    """One request; the decoded JSON (None for 204). Errors become TandemError with the exit code."""
    import httpx

    base = _url(url)
    try:
        r = httpx.request(method, base + path, json=body, timeout=timeout)
    except httpx.TransportError as e:
        raise TandemError(f"cannot reach the agent at {base}: {e or type(e).__name__} (is `tandem agent` running?)",
                          ENVIRONMENT) from None
    if r.status_code == 204:
        return None
    try:
        data = r.json()
    except ValueError:
        data = None
    if r.status_code >= 400:
        err = (data or {}).get("error") if isinstance(data, dict) else None
        if err:
            where = f"{err['field']}: " if err.get("field") else ""
            raise TandemError(f"agent refused ({r.status_code}): {where}{err['message']}",
                              INPUT if r.status_code < 500 else INTERNAL)
        raise TandemError(f"agent answered {r.status_code} to {method} {path}", INPUT if r.status_code < 500 else INTERNAL)
    return data


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def _nf_table(nfs: list[dict]) -> Table:
    t = Table("name", "type", "device", "ports", "origin", "id")
    for nf in nfs:
        t.add_row(nf["name"], nf["type"], nf["device"], ",".join(map(str, nf["ports"])), nf["origin"], nf["id"])
    return t


@nf_app.command("list")
def nf_list(url: Optional[str] = URL_OPT, as_json: bool = JSON_OPT) -> None:
    """List the agent's NF instances."""
    data = call("GET", url, "/v1/nfs")
    _print_json(data) if as_json else console.print(_nf_table(data["nfs"]))


@nf_app.command("create")
def nf_create(
    name: str = typer.Argument(..., help="NF name."),
    nf_type: str = typer.Option(..., "--type", help="dp-nf kind (l7fw, secgw, ...)."),
    config: Optional[str] = typer.Option(None, "--config", help="Configuration: JSON text, or @FILE with JSON."),
    ports: int = typer.Option(2, "--ports", help="Virtual ports (1 or 2)."),
    device: Optional[str] = typer.Option(None, "--device", help="Device to run on (default: the host)."),
    url: Optional[str] = URL_OPT, as_json: bool = JSON_OPT,
) -> None:
    """Create an NF instance."""
    cfg: Any = {}
    if config:
        text = config
        if config.startswith("@"):
            try:
                text = Path(config[1:]).read_text()
            except OSError as e:
                raise TandemError(f"--config {config}: {e.strerror or e}", INPUT) from None
        try:
            cfg = json.loads(text)
        except ValueError as e:
            raise TandemError(f"--config: not JSON: {e}", INPUT) from None
    body = {"name": name, "type": nf_type, "config": cfg, "ports": ports}
    if device:
        body["device"] = device
    data = call("POST", url, "/v1/nfs", body)
    _print_json(data) if as_json else console.print(_nf_table([data["nf"]]))


@nf_app.command("delete")
def nf_delete(nf: str = typer.Argument(..., help="NF name or id."), url: Optional[str] = URL_OPT) -> None:
    """Delete an NF created through the API."""
    call("DELETE", url, f"/v1/nfs/{nf}")
    console.print(f"deleted {nf}")


@nf_app.command("migrate")
def nf_migrate(
    nf: str = typer.Argument(..., help="NF name or id."),
    to: str = typer.Option(..., "--to", help="Destination device."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait until the migration finished."),
    url: Optional[str] = URL_OPT, as_json: bool = JSON_OPT,
) -> None:
    """Move an NF (with its state) to another device."""
    import time

    mig = call("POST", url, "/v1/migrations", {"nf": nf, "destination": to})["migration"]
    deadline = time.monotonic() + 60
    while wait and mig["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.05)
        mig = call("GET", url, f"/v1/migrations/{mig['id']}")["migration"]
    if as_json:
        _print_json({"migration": mig})
    else:
        t = Table("step", "wall ms", "details")
        for s in mig["steps"]:
            t.add_row(s["step"], str(s["wall_ms"]), ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("step", "wall_ms")))
        console.print(f"migration {mig['id']}: {mig['nf']} {mig['source']} -> {mig['destination']}: {mig['status']}"
                      f"{' (' + mig['error'] + ')' if mig.get('error') else ''}, {mig['state_bytes']} state bytes")
        console.print(t)
    if mig["status"] == "failed":
        raise typer.Exit(INTERNAL)


def _placement_table(placement: dict[str, str]) -> Table:
    t = Table("nf", "device")
    for n, d in sorted(placement.items()):
        t.add_row(n, d)
    return t


@placement_app.command("show")
def placement_show(url: Optional[str] = URL_OPT, as_json: bool = JSON_OPT) -> None:
    """Where every NF runs, and the last placement decision."""
    data = call("GET", url, "/v1/placements")
    if as_json:
        _print_json(data)
        return
    console.print(_placement_table(data["placement"]))
    d = data.get("decision")
    if d:
        console.print(f"last decision #{d['id']}: {d.get('mode')} ({d.get('method')})")


@placement_app.command("optimize")
def placement_optimize(
    apply: bool = typer.Option(False, "--apply", help="Migrate the NFs whose device changes."),
    pin: Optional[list[str]] = typer.Option(None, "--pin", help="NF=DEVICE to keep (repeatable)."),
    url: Optional[str] = URL_OPT, as_json: bool = JSON_OPT,
) -> None:
    """Run the UNO engine on the agent's NFs."""
    pins = {}
    for item in pin or []:
        n, sep, d = item.partition("=")
        if not sep or not n or not d:
            raise TandemError(f"--pin {item!r}: expected NF=DEVICE", INPUT)
        pins[n] = d
    data = call("POST", url, "/v1/placements:optimize", {"pins": pins, "apply": apply})
    if as_json:
        _print_json(data)
        return
    p = data["placement"]
    console.print(_placement_table(p["placement"]))
    obj = f"objective {p['objective']:.6g} ({p.get('objective_label')}), " if p.get("objective") is not None else ""
    console.print(f"{p.get('mode')} ({p.get('method')}): {obj}host cores {p.get('host_cores'):.3g}")
    for mv in p["moves"]:
        console.print(f"move {mv['nf']}: {mv['from']} -> {mv['to']}{' (migrating)' if apply else ''}")
    if not p["moves"]:
        console.print("no move: the current placement is the engine's")


def register(app: typer.Typer) -> None:
    app.add_typer(nf_app, name="nf")
    app.add_typer(placement_app, name="placement")

    @app.command("agent")
    def agent_cmd(
        scenario: Path = typer.Option(..., "--scenario", help="Scenario YAML: the machine, its NFs and traffic."),
        api: str = typer.Option("127.0.0.1:8181", "--api", help="HOST:PORT of the REST API (port 0: a free one)."),
        state_db: Path = typer.Option(Path("tandem-agent.db"), "--state-db", help="SQLite state database (created if missing)."),
        speed: float = typer.Option(1.0, "--speed", help="Simulated seconds per wall-clock second."),
        ready_file: Optional[Path] = typer.Option(None, "--ready-file", help="Write the API URL here once serving."),
    ) -> None:
        """Run the NF agent on the emulator with its REST API (OpenAPI at /docs)."""
        from tandem.agent.api_server import run_agent

        if not scenario.is_file():
            raise TandemError(f"--scenario {scenario}: no such file", INPUT)
        if not speed > 0:
            raise TandemError(f"--speed {speed}: must be > 0", INPUT)
        asyncio.run(run_agent(scenario, api, state_db, speed, ready_file, echo=typer.echo))
