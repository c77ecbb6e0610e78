"""The stand-alone topology file is a pydantic model (`TopologyFile`, extra keys
forbidden, bounded numbers) validated with the scenario loader's error
translation, and converts into the unchanged `Topology` dataclass."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from tandem.oneswitch.topology import PortRef, Topology, TopologyError, TopologyFile, from_dict, load_topology

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "oneswitch" / "topology.yaml"


def test_the_file_format_is_a_pydantic_model_that_forbids_extra_keys():
    assert issubclass(TopologyFile, BaseModel) and TopologyFile.model_config["extra"] == "forbid"


def test_file_and_build_give_the_same_topology():
    built = Topology.build({"host": "host", "snic0": "snic", "snic1": "snic"},
                           [("host:100", "snic0:100"), ("host:101", "snic1:100")],
                           {1: "host:1", 2: "host:2", 3: "snic0:1", 4: "snic1:1"})
    assert load_topology(EXAMPLE) == built
    assert built.port_map[3] == PortRef("snic0", 1)


@pytest.mark.parametrize("text, message", [
    ('switches: {h: {kind: host}}\nlinks: [{a: "h:1", b: "h:2", c: 3}]\n', r":2:\d+: links\[0\]\.c: unknown key; allowed: a, b"),
    ('switches: {h: {kind: host}}\nport: {}\n', r":2:1: port: unknown key \(did you mean 'ports'\?\)"),
    ('switches: {h: {kind: host}}\nports: {0: "h:1"}\n', r":2:\d+: ports\.0: virtual port number outside 1\.\.0xffffff00"),
    ('switches: {h: {kind: host}}\nports: {1: "h:70000"}\n', r":2:\d+: ports\.1: physical port 70000 outside 1\.\.65279"),
    ("switches: {}\n", r":1:\d+: switches: must have at least 1 entry"),
    ("links: []\n", r":1:1: switches: required field is missing"),
    ('switches: {"a:b": {kind: host}}\n', r"switches\.a:b: a switch name must be a non-empty string without ':'"),
    ("- 1\n", r":1:1: top level: expected a mapping with switches, links, ports"),
])
def test_schema_errors_are_file_line_col_path_message(tmp_path, text, message):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    with pytest.raises(TopologyError, match=message) as e:
        load_topology(p)
    assert str(e.value).startswith(f"{p}:")


def test_every_schema_problem_is_reported(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text('switches: {h: {kind: hots}}\nports: {x: "h:1", 2: "h-2"}\n')
    with pytest.raises(TopologyError) as e:
        load_topology(p)
    lines = str(e.value).splitlines()
    assert [ln.split(": ", 2)[1] for ln in lines] == ["switches.h.kind", "ports.x", "ports.2"], lines


def test_from_dict_without_a_file_names_the_path():
    with pytest.raises(TopologyError, match=r"^switches\.h\.kind: expected host or snic, got 'x'$"):
        from_dict({"switches": {"h": {"kind": "x"}}})
