"""The NF agent's REST API (FastAPI): a thin shell over ``service.AgentService``.

Resources, in the style of OpenStack Compute (a collection returns
``{"nfs": [...]}``, one item ``{"nf": {...}}``):

    GET    /healthz                      liveness and a one-line summary
    GET    /metrics                      Prometheus exposition format
    GET    /v1/nfs                       NF instances
    POST   /v1/nfs                       create {name, type, config, ports, device, cost}
    GET    /v1/nfs/{id}                  one NF (by id or name)
    DELETE /v1/nfs/{id}                  delete an API-created NF
    GET    /v1/nfs/{id}/state            export its state (application/octet-stream)
    PUT    /v1/nfs/{id}/state            import a state blob
    GET    /v1/rules                     virtual rules (ovs-ofctl text)
    POST   /v1/rules                     add {rule}
    DELETE /v1/rules/{id}                delete one
    GET    /v1/placements                NF -> device now, and the last decision
    POST   /v1/placements:optimize       run the UNO engine {pins, apply}
    GET    /v1/migrations                migrations, newest last
    POST   /v1/migrations                request {nf, destination} (202)
    GET    /v1/migrations/{id}           one migration with its steps

Errors: ``{"error": {"status", "field", "message"}}`` with a 4xx status; the
field is the failing part's path (``body.config.sas[0].key``). Every handler is
a coroutine, so all of them run on the event loop that owns the emulator.
OpenAPI at ``/openapi.json``, interactive docs at ``/docs``.
"""

from __future__ import annotations

from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from tandem.agent.service import AgentError, AgentService


class Cost(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cycles_per_packet: float = Field(0.0, ge=0, description="Core cycles the NF charges per packet.")
    cycles_per_byte: float = Field(0.0, ge=0, description="Core cycles the NF charges per byte.")


class NfCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(..., min_length=1, max_length=64, description="Unique NF name.")
    type: str = Field(..., description="dp-nf kind (an unknown one is refused with the known list).")
    config: dict[str, Any] = Field(default_factory=dict, description="The NF's JSON configuration.")
    ports: int = Field(2, ge=1, le=2, description="Virtual ports: 1 or 2 (in, out).")
    device: Optional[str] = Field(None, description="Device to run on (default: the host).")
    cost: Optional[Cost] = None


class RuleCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rule: str = Field(..., min_length=1, description="One virtual rule in ovs-ofctl flow syntax.")


class Optimize(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pins: dict[str, str] = Field(default_factory=dict, description="NF -> device the engine must keep.")
    apply: bool = Field(False, description="Migrate the NFs whose device changes.")


class MigrationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nf: str = Field(..., min_length=1, description="NF id or name.")
    destination: str = Field(..., min_length=1, description="Device to move it to.")


class ErrorBody(BaseModel):
    status: int
    field: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


ERRORS = {400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 409: {"model": ErrorResponse},
          422: {"model": ErrorResponse}}


def loc_path(loc: tuple) -> str:
    """``("body", "config", "sas", 0, "key")`` -> ``body.config.sas[0].key``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _error(status: int, field: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "field": field, "message": message}}, status_code=status)


def make_app(svc: AgentService) -> FastAPI:
    app = FastAPI(title="Tandem NF agent", version="1",
                  description="Provision NFs, read and write their state, place and migrate them (UNO §3.2).")

    @app.exception_handler(AgentError)
    async def _agent_error(request: Request, e: AgentError) -> JSONResponse:
        svc.counters["api_errors"] += 1
        field = {"id": "path.id", "body": "body", "": ""}.get(e.path, f"body.{e.path}")
        return _error(e.status, field, e.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        svc.counters["api_errors"] += 1
        errs = e.errors()
        first = errs[0] if errs else {"loc": ("body",), "msg": "invalid request"}
        resp = _error(422, loc_path(tuple(first.get("loc", ()))), str(first.get("msg", "invalid")))
        return resp

    @app.exception_handler(Exception)
    async def _internal(request: Request, e: Exception) -> JSONResponse:
        import logging

        logging.getLogger("tandem.agent").exception("%s %s failed", request.method, request.url.path)
        return _error(500, "", f"internal error: {type(e).__name__}: {e} (a bug in tandem)")

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return svc.health()

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(await _registry(svc)), media_type=CONTENT_TYPE_LATEST)

    # ---------------------------------------------------------------- NFs
    @app.get("/v1/nfs")
    async def list_nfs() -> dict[str, Any]:
        return {"nfs": svc.list_nfs()}

    @app.post("/v1/nfs", status_code=201, responses=ERRORS)
    async def create_nf(body: NfCreate) -> dict[str, Any]:
        nf = await svc.create_nf(body.name, body.type, body.config, body.ports, body.device,
                                 body.cost.model_dump() if body.cost else None)
        return {"nf": nf}

    @app.get("/v1/nfs/{nf_id}", responses=ERRORS)
    async def show_nf(nf_id: str) -> dict[str, Any]:
        from tandem.agent.service import nf_view

        return {"nf": nf_view(svc.get(nf_id))}

    @app.delete("/v1/nfs/{nf_id}", status_code=204, responses=ERRORS)
    async def delete_nf(nf_id: str) -> Response:
        await svc.delete_nf(nf_id)
        return Response(status_code=204)

    @app.get("/v1/nfs/{nf_id}/state", responses={200: {"content": {"application/octet-stream": {}}}, **ERRORS})
    async def export_state(nf_id: str) -> Response:
        return Response(svc.export_state(nf_id), media_type="application/octet-stream")

    @app.put("/v1/nfs/{nf_id}/state", status_code=204, responses=ERRORS,
             openapi_extra={"requestBody": {"required": True, "content": {"application/octet-stream": {
                 "schema": {"type": "string", "format": "binary"}}}}})
    async def import_state(nf_id: str, request: Request) -> Response:
        svc.import_state(nf_id, await request.body())
        return Response(status_code=204)

    # ---------------------------------------------------------------- rules
    @app.get("/v1/rules")
    async def list_rules() -> dict[str, Any]:
        return {"rules": svc.list_rules()}

    @app.post("/v1/rules", status_code=201, responses=ERRORS)
    async def add_rule(body: RuleCreate) -> dict[str, Any]:
        return {"rule": await svc.add_rule(body.rule)}

    @app.delete("/v1/rules/{rule_id}", status_code=204, responses=ERRORS)
    async def delete_rule(rule_id: int) -> Response:
        await svc.delete_rule(rule_id)
        return Response(status_code=204)

    # ---------------------------------------------------------------- placements
    @app.get("/v1/placements")
    async def placements() -> dict[str, Any]:
        return svc.placements()

    @app.post("/v1/placements:optimize", responses=ERRORS)
    async def optimize(body: Optimize) -> dict[str, Any]:
        return {"placement": await svc.optimize(body.pins, body.apply)}

    # ---------------------------------------------------------------- migrations
    @app.get("/v1/migrations")
    async def migrations() -> dict[str, Any]:
        return {"migrations": svc.migrations()}

    @app.post("/v1/migrations", status_code=202, responses=ERRORS)
    async def migrate(body: MigrationCreate) -> dict[str, Any]:
        return {"migration": svc.request_migration(body.nf, body.destination)}

    @app.get("/v1/migrations/{mig_id}", responses=ERRORS)
    async def migration(mig_id: str) -> dict[str, Any]:
        return {"migration": svc.migration(mig_id)}

    return app


async def _registry(svc: AgentService):
    """A fresh registry holding the agent's figures now (the service is the source, not the registry)."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    port_rows = []
    for sw in svc.backend.switches():
        for ps in await svc.backend.port_stats(sw):
            port_rows.append((sw, ps))
    nf_counters = svc.nf_counters()

    class _Collector:
        def collect(self):
            g = GaugeMetricFamily("tandem_agent_nfs", "NF instances the agent runs")
            g.add_metric([], len(svc.nfs))
            yield g
            g = GaugeMetricFamily("tandem_agent_virtual_rules", "Virtual rules on the one switch")
            g.add_metric([], len(svc.state.virtual_rules()))
            yield g
            g = GaugeMetricFamily("tandem_agent_physical_rules", "Flow entries per physical switch", labels=["switch"])
            for sw in svc.backend.switches():
                g.add_metric([sw], len(getattr(svc.backend, "rules", {}).get(sw, ())))
            yield g
            g = GaugeMetricFamily("tandem_agent_nf_device", "1 for the device each NF runs on", labels=["nf", "device"])
            for name, inst in sorted(svc.nfs.items()):
                g.add_metric([name, inst.record.device], 1)
            yield g
            g = GaugeMetricFamily("tandem_agent_migrations_running", "Migrations in flight")
            g.add_metric([], len(svc.running))
            yield g
            c = CounterMetricFamily("tandem_agent_migrations", "Migrations finished", labels=["outcome"])
            c.add_metric(["done"], svc.counters["migrations_done"])
            c.add_metric(["failed"], svc.counters["migrations_failed"])
            yield c
            c = CounterMetricFamily("tandem_agent_api_errors", "Requests refused with a 4xx")
            c.add_metric([], svc.counters["api_errors"])
            yield c
            c = CounterMetricFamily("tandem_agent_physical_ops", "Physical flow/group ops applied")
            c.add_metric([], svc.counters["rules_applied"])
            yield c
            g = GaugeMetricFamily("tandem_agent_simulated_seconds", "Emulator clock")
            g.add_metric([], float(getattr(svc.backend, "now_s", 0.0)))
            yield g
            c = CounterMetricFamily("tandem_nf_counter", "An NF's own counters, over every instance it had",
                                    labels=["nf", "counter"])
            for name, cs in sorted(nf_counters.items()):
                for k, v in sorted(cs.items()):
                    c.add_metric([name, k], v)
            yield c
            c = CounterMetricFamily("tandem_switch_port_packets", "Packets per physical switch port",
                                    labels=["switch", "port", "direction"])
            for sw, ps in port_rows:
                c.add_metric([sw, str(ps.port_no), "rx"], ps.rx_packets)
                c.add_metric([sw, str(ps.port_no), "tx"], ps.tx_packets)
            yield c

    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Collector())
    return reg
