"""`tandem rules`: inputs that used to hang, crash or pass silently now get one line."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app
from tandem.rules.generate import MAX_PRIORITY, random_ruleset
from tandem.rules.ofctl import OfctlSyntaxError, parse_group, parse_rule

import random

runner = CliRunner()


@pytest.mark.parametrize("args,needle", [
    (["--ports", ""], "at least one port"),
    (["--ports", "99999999999"], "not an OpenFlow port number"),
    (["--ports", "0,1"], "not an OpenFlow port number"),
    (["--ports", "a,b"], "not a comma-separated list"),
    (["--count", "70000"], "--tables 2 or more"),
    (["--count", "200000", "--tables", "3"], "--tables 4 or more"),
])
def test_gen_refuses_impossible_requests_with_one_line(args, needle):
    r = runner.invoke(app, ["rules", "gen", *args])
    assert r.exit_code == 2
    assert needle in r.output
    assert "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)


def test_ruleset_fills_a_table_to_every_priority_without_looping():
    rules = random_ruleset(random.Random(3), MAX_PRIORITY, [1, 2], 1)
    assert sorted(r.priority for r in rules) == list(range(1, MAX_PRIORITY + 1))


def test_ruleset_over_capacity_is_refused():
    with pytest.raises(ValueError, match="need at least 2 tables"):
        random_ruleset(random.Random(3), MAX_PRIORITY + 1, [1, 2], 1)


def test_ruleset_below_half_full_is_unchanged_by_the_free_list():
    # the first half of a table is drawn exactly as before (seeded outputs stay the same)
    a = random_ruleset(random.Random(9), 200, [1, 2, 3], 2)
    b = random_ruleset(random.Random(9), 200, [1, 2, 3], 2)
    assert a == b and len({(r.table, r.priority) for r in a}) == 200


@pytest.mark.parametrize("text", ["in_port=１,actions=drop", "priority=１0,actions=drop", "actions=output:２",
                                  "in_port=1,actions=output:1　"])
def test_full_width_digits_and_other_non_ascii_are_refused_at_their_column(text):
    with pytest.raises(OfctlSyntaxError) as e:
        parse_rule(text, "x.flows", 4)
    col = next(i for i, c in enumerate(text) if not c.isascii()) + 1
    assert str(e.value).startswith(f"x.flows:4:{col}: non-ASCII character")


def test_non_ascii_group_is_refused():
    with pytest.raises(OfctlSyntaxError, match="non-ASCII"):
        parse_group("group_id=１,type=all,bucket=output:1")


def _check(tmp_path: Path, text: str, name: str = "g.groups"):
    f = tmp_path / name
    f.write_text(text)
    return runner.invoke(app, ["rules", "check", str(f)])


def test_check_refuses_duplicate_group_ids(tmp_path):
    r = _check(tmp_path, "group_id=1,type=all,bucket=output:1\ngroup_id=7,type=all,bucket=output:1\n"
                         "group_id=1,type=all,bucket=output:2\n")
    assert r.exit_code == 2
    assert "g.groups:3:1: group: group_id=1 is already defined on line 1" in r.output


def test_check_refuses_a_group_into_itself(tmp_path):
    r = _check(tmp_path, "group_id=2,type=all,bucket=output:1,bucket=group:2\n")
    assert r.exit_code == 2
    assert "g.groups:1:1: group: group 2 sends packets to itself" in r.output


def test_check_refuses_group_cycles_once_each(tmp_path):
    r = _check(tmp_path, "group_id=3,type=all,bucket=group:4\ngroup_id=4,type=indirect,bucket=group:5\n"
                         "group_id=5,type=all,bucket=group:3,bucket=output:1\ngroup_id=6,type=all,bucket=group:3\n")
    assert r.exit_code == 2
    lines = [ln.split("/")[-1] for ln in r.output.splitlines() if "cycle" in ln]
    assert lines == ["g.groups:1:1: group: groups form a cycle: group 3 -> group 4 -> group 5 -> group 3"]


def test_check_accepts_a_chain_without_cycle(tmp_path):
    r = _check(tmp_path, "group_id=3,type=all,bucket=group:4\ngroup_id=4,type=all,bucket=output:1\n")
    assert r.exit_code == 0, r.output
    assert "2 groups OK" in r.output
