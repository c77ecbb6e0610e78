"""ovs-ofctl text, lexing: errors with their place, tokens with their column,
splitting at top-level separators, "did you mean" hints. The first stage of
the parser: ``ofctl_match`` (match fields) and ``ofctl_actions`` (actions,
groups) consume its tokens; ``ofctl`` puts a whole flow line together.
Pure functions, no I/O. Columns are 1-based character positions in the line.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import NamedTuple


class OfctlSyntaxError(ValueError):
    """Bad ovs-ofctl text. ``str(e)`` is ``source:line:column: message``."""

    def __init__(self, message: str, *, source: str = "<string>", line: int = 1, column: int = 1, token: str = "") -> None:
        self.reason = message
        self.source = source
        self.line = line
        self.column = column
        self.token = token
        super().__init__(f"{source}:{line}:{column}: {message}")


@dataclass(frozen=True)
class Loc:
    """Where a piece of text came from, for error messages."""

    source: str = "<string>"
    line: int = 1

    def error(self, message: str, column: int, token: str = "") -> OfctlSyntaxError:
        return OfctlSyntaxError(message, source=self.source, line=self.line, column=column, token=token)


def refuse_non_ascii(text: str, loc: "Loc") -> None:
    """ovs-ofctl text is ASCII: a full-width digit (``in_port=１``) or any other non-ASCII
    character is an error at its column, never read as the ASCII it resembles."""
    if text.isascii():
        return
    i, ch = next((i, c) for i, c in enumerate(text) if not c.isascii())
    import unicodedata

    name = unicodedata.name(ch, "")
    raise loc.error(f"non-ASCII character {ch!r} (U+{ord(ch):04X}{' ' + name if name else ''}); rules are ASCII text", i + 1, ch)


class Token(NamedTuple):
    text: str
    column: int  # 1-based column of text[0]

    def split(self, sep: str) -> tuple["Token", "Token | None"]:
        """Split at the first ``sep``: (left, right or None)."""
        i = self.text.find(sep)
        if i < 0:
            return self, None
        return Token(self.text[:i], self.column), Token(self.text[i + len(sep):], self.column + i + len(sep))


@functools.lru_cache(maxsize=None)
def _cut_re(seps: str) -> re.Pattern[str]:
    return re.compile("[()" + re.escape(seps) + "]")


def split_top(text: str, column: int, loc: Loc, seps: str = ",") -> list[Token]:
    """Split at top-level separators (outside parentheses), dropping empty pieces
    and surrounding blanks; ``column`` is the column of ``text[0]``."""
    out: list[Token] = []
    depth, start = 0, 0

    def piece_at(end: int) -> None:
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            out.append(Token(stripped, column + start + (len(piece) - len(piece.lstrip()))))

    for m in _cut_re(seps).finditer(text):
        ch, i = m.group(), m.start()
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise loc.error("unbalanced ')'", column + i, ")")
        elif depth == 0:
            piece_at(i)
            start = i + 1
    if depth > 0:
        piece = text[start:]
        lead = len(piece) - len(piece.lstrip())
        raise loc.error("unbalanced '(': missing ')'", column + start + lead, piece.strip())
    piece_at(len(text))
    return out


def suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def colon_arg(tok: Token, loc: Loc) -> Token:
    """The argument of ``name:ARG`` (an error naming ``tok`` if there is none)."""
    _, arg = tok.split(":")
    if arg is None or not arg.text.strip():
        raise loc.error(f"{tok.text} needs an argument after ':'", tok.column, tok.text)
    return arg
