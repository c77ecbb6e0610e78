"""OVS-POF-TC problem files: YAML/JSON (docs/placement-pof.md) -> `FpInstance` / `FrInstance`.

A file holds optional `params` and either explicit flows or a `generate` block
(the paper's random flows, for large instances). Errors raise `PofInputError`
as `file:line:col: path: message`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tandem.placement.pof.model import (Flows, FpInstance, FrInstance, PofInputError, PofParams,
                                        kernel_throughput_mbps, random_fp, random_fr)
from tandem.placement.kinds import kind_mismatch
from tandem.model.yaml_document import Document

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # .inf/.nan are never a rate or a size


class ParamsSpec(_Strict):
    tau1_us: float = Field(default=PofParams.tau1_us, ge=0)
    tau2_us: float = Field(default=PofParams.tau2_us, ge=0)
    tau3_us: float = Field(default=PofParams.tau3_us, ge=0)
    tau_add_us: float = Field(default=PofParams.tau_add_us, ge=0)
    tau_del_us: float = Field(default=PofParams.tau_del_us, ge=0)
    capacity: int = Field(default=PofParams.capacity, ge=0)
    fixed_costs: Literal["paper", "per_flow"] = "paper"


class FlowSpec(_Strict):
    id: str | None = None
    rate_mbps: float = Field(gt=0)
    packet_bytes: int | None = Field(default=None, gt=0)
    kernel_mbps: float | None = Field(default=None, gt=0)
    offloaded: bool = False

    @model_validator(mode="after")
    def _kernel(self) -> "FlowSpec":
        if (self.packet_bytes is None) == (self.kernel_mbps is None):
            raise ValueError("give exactly one of packet_bytes (C^kr = 0.534 Mpps x size) or kernel_mbps")
        return self

    def kernel(self) -> float:
        return float(self.kernel_mbps) if self.kernel_mbps is not None else float(kernel_throughput_mbps(self.packet_bytes))


# Generated instances are built in memory (a few arrays of 8-byte numbers per flow):
# 10^8 flows need ~5 GB, so larger requests are refused at the line that asks.
MAX_GENERATED_FLOWS = 50_000_000


class GenerateFp(_Strict):
    flows: int = Field(ge=0, le=MAX_GENERATED_FLOWS)
    seed: int = 0


class GenerateFr(_Strict):
    existing: int = Field(ge=0, le=MAX_GENERATED_FLOWS)
    new: int = Field(ge=0, le=MAX_GENERATED_FLOWS)
    seed: int = 0


class FpSpec(_Strict):
    params: ParamsSpec = ParamsSpec()
    flows: list[FlowSpec] | None = None
    generate: GenerateFp | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "FpSpec":
        if (self.flows is None) == (self.generate is None):
            raise ValueError("give either `flows` or `generate`")
        return self


class FrSpec(_Strict):
    params: ParamsSpec = ParamsSpec()
    existing: list[FlowSpec] | None = None
    new: list[FlowSpec] | None = None
    generate: GenerateFr | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "FrSpec":
        if (self.existing is None and self.new is None) == (self.generate is None):
            raise ValueError("give either `existing`/`new` flows or `generate`")
        return self


def _flows(specs: list[FlowSpec], prefix: str) -> Flows:
    ids = tuple(f.id or f"{prefix}{i}" for i, f in enumerate(specs))
    return Flows(np.array([f.rate_mbps for f in specs], dtype=float), np.array([f.kernel() for f in specs], dtype=float), ids)


def _params(s: ParamsSpec) -> PofParams:
    return PofParams(s.tau1_us, s.tau2_us, s.tau3_us, s.tau_add_us, s.tau_del_us, s.capacity, s.fixed_costs)


def _check_ids(doc: Document, key: str, specs: list[FlowSpec], seen: set[str]) -> None:
    for i, f in enumerate(specs):
        fid = f.id or f"{'e' if key == 'existing' else 'n' if key == 'new' else 'f'}{i}"
        if fid in seen:
            raise doc.fail((key, i, "id"), f"flow id {fid!r} is used twice")
        seen.add(fid)


def _read(path: Path, kind: str, model: type[BaseModel]):
    """(document, validated spec) of a `kind` problem file; errors name file:line:col."""
    doc = Document(Path(path), PofInputError)
    wrong = kind_mismatch(doc.data, kind, str(path))
    if wrong:
        raise PofInputError(wrong)
    try:
        return doc, model.model_validate(doc.data)
    except ValidationError as e:
        raise doc.validation_error(e) from None


def load_fp(path: Path) -> FpInstance:
    doc, spec = _read(path, "pof-fp", FpSpec)
    p = _params(spec.params)
    if spec.generate is not None:
        return random_fp(spec.generate.flows, spec.generate.seed, p)
    _check_ids(doc, "flows", spec.flows or [], set())
    return FpInstance(_flows(spec.flows or [], "f"), p)


def load_fr(path: Path) -> FrInstance:
    doc, spec = _read(path, "pof-fr", FrSpec)
    p = _params(spec.params)
    if spec.generate is not None:
        return random_fr(spec.generate.existing, spec.generate.new, spec.generate.seed, p)
    ex, nw = spec.existing or [], spec.new or []
    seen: set[str] = set()
    _check_ids(doc, "existing", ex, seen)
    _check_ids(doc, "new", nw, seen)
    for i, f in enumerate(nw):
        if f.offloaded:
            raise doc.fail(("new", i, "offloaded"), "a new flow cannot already be offloaded")
    z = np.array([f.offloaded for f in ex], dtype=bool)
    if int(z.sum()) > p.capacity:
        raise doc.fail(("existing",), f"{int(z.sum())} existing flows are marked offloaded but the sNIC holds "
                                      f"only params.capacity = {p.capacity}")
    return FrInstance(_flows(ex, "e"), z, _flows(nw, "n"), p)
