"""Random damage to real scenarios never crashes the loader: it yields a Scenario
(which the summary can render) or a ScenarioError whose every line names a place."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from tandem.model import ScenarioError, parse_scenario_text
from tandem.model.summary import summarize

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
DOCS = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in EXAMPLES]


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-10**6, max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "10", "-4", "10Gbps", "26us", "2.7GHz", "64B", "1.5Mpps", "95W", "7ms", "snic0", "host",
                     "vm1", "snic0.eth0", "a.b.c", "fw1.in", "nf", "vm", "snic", "crypto", "onoff", "µs", "1e999Gbps"]),
    st.text(max_size=12),
    st.lists(st.sampled_from(["secgw1", "l7fw1", "vm1", "x", 3]), max_size=3),
    st.dictionaries(st.sampled_from(["kind", "type", "rate", "x", "cores", "from", "to"]), st.sampled_from(["nf", "host", 1, "1Gbps"]), max_size=2),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_scenarios_fail_cleanly(data):
    doc = copy.deepcopy(data.draw(st.sampled_from(DOCS)))
    for _ in range(data.draw(st.integers(1, 3))):
        targets = [p for p in paths(doc) if p]
        path = data.draw(st.sampled_from(targets))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace" or (action == "delete" and isinstance(parent, list)):
            parent[path[-1]] = data.draw(junk)
        elif action == "delete":
            del parent[path[-1]]
        else:
            target = parent[path[-1]]
            if isinstance(target, dict):
                target[data.draw(st.sampled_from(["zzz", "kind", "cores", "on", "1", "a.b"]))] = data.draw(junk)
            elif isinstance(target, list):
                target.append(data.draw(junk))
    text = yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True)
    try:
        scn = parse_scenario_text(text, "f.yaml")
    except ScenarioError as e:
        assert e.problems
        for line in str(e).splitlines():
            assert line.startswith("f.yaml")
        return
    console = Console(file=open("/dev/null", "w"), width=120)
    for part in summarize(scn):
        console.print(part)
