"""Every `tandem` command the README shows runs and succeeds (the README does not
contradict the code); every file and doc it names exists."""

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tandem.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def shown_commands() -> list[str]:
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(".venv/bin/tandem "):
                out.append(line[len(".venv/bin/tandem "):])
    return out


COMMANDS = shown_commands()


def test_the_readme_shows_a_tour():
    assert len(COMMANDS) >= 10


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = [a.replace("/tmp/", f"{tmp_path}/") for a in shlex.split(command)]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, f"tandem {command}\n{r.output}"


def test_readme_names_only_files_that_exist():
    named = set(re.findall(r"`((?:docs|examples|benches|python|crates|scripts)/[^`*\s]+)`", README))
    named |= set(re.findall(r"\]\((docs/[^)]+)\)", README))
    missing = sorted(p for p in named if not (ROOT / p.rstrip("/")).exists())
    assert not missing, missing
