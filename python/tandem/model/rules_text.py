"""Where a scenario's virtual rules come from: ``rules:`` holds either ovs-ofctl
flow text inline or the name of a rules file. A leaf module (it imports nothing
of Tandem), so both the scenario loader and OneSwitch's scenario derivation can
use it without importing each other."""

from __future__ import annotations

from pathlib import Path


class RulesSourceError(ValueError):
    """The rules file named by ``rules:`` cannot be read; the message names it."""


def rules_source(sc) -> tuple[str, str]:
    """(text, source name) of the scenario's ``rules:``: the file it names, or the inline text."""
    text = sc.rules or ""
    if "actions=" in text or "\n" in text.strip():
        return text, "rules"
    path = Path(text.strip())
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except (OSError, UnicodeDecodeError) as e:
        raise RulesSourceError(f"rules: cannot read rules file {str(path)!r}: {getattr(e, 'strerror', None) or e}") from None
