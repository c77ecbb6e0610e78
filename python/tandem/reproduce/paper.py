"""The papers' values as data: one YAML per paper in ``papers/``.

Each experiment entry names the figure, the trend the paper concludes from it (with
the section it is stated in), whether it rests on hardware the emulator does not
model, and the paper's numbers. Every number cites where it is printed and is
labelled ``calibrated`` (a model constant was solved from it, so matching it is no
evidence) or ``predicted`` (nothing was fitted to it). Plotting code reads the
numbers from here; none is written into an experiment.

Pure: reading and validating package data, no other I/O.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from tandem.errors import INTERNAL, TandemError

PAPER_FILES = ("uno", "smartchain", "pof", "fairnic")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PaperValue(_Strict):
    key: str
    what: str
    value: float | None = None  # None: the paper states it only in words (``text``)
    text: str | None = None
    unit: str = ""
    cite: str
    label: Literal["calibrated", "predicted", "input"]  # input: a workload size taken from the paper
    tolerance: float = 0.15  # relative; a predicted value within it is a match
    differs_because: str | None = None  # why Tandem's number is expected to differ, if it does


class PaperExperiment(_Strict):
    figure: str
    claim: str  # the trend the paper draws its conclusion from
    cite: str
    hardware: str | None = None  # what the emulator does not model, if the figure depends on it
    values: tuple[PaperValue, ...] = ()

    def value(self, key: str) -> PaperValue:
        for v in self.values:
            if v.key == key:
                return v
        raise KeyError(key)


class Paper(_Strict):
    paper: str
    short: str  # the name the report uses ("UNO", "OVS-POF-TC" ...)
    title: str
    venue: str
    seed: str  # the file in the shared seeds folder it was read from
    experiments: dict[str, PaperExperiment]


@cache
def load_paper(name: str) -> Paper:
    if name not in PAPER_FILES:
        raise TandemError(f"unknown paper {name!r}; known: {', '.join(PAPER_FILES)}")
    path = resources.files("tandem.reproduce").joinpath("papers", f"{name}.yaml")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Paper.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as e:
        first = str(e).splitlines()
        raise TandemError(f"papers/{name}.yaml: {' '.join(first[:3])}", INTERNAL) from e


def paper_experiment(paper: str, name: str) -> PaperExperiment:
    p = load_paper(paper)
    if name not in p.experiments:
        raise TandemError(f"papers/{paper}.yaml has no experiment {name!r}", INTERNAL)
    return p.experiments[name]
