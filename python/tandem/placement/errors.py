"""The errors every placement engine raises, as one hierarchy.

`tandem place` (placement/cli.py) turns any `PlacementError` into one line on
stderr and its `exit_code` (the README's "Exit codes" table): 2 for bad input
(a file with problems, or one that cannot be read), 1 when a valid problem has
no solution. Every other exception is a bug and is not caught here.

    PlacementError (ValueError)
    ├── PlacementInputError      bad problem data: names the file, line, path
    │   └── PlacementFileError   the named file is missing or unreadable
    └── PlacementInfeasible      no placement meets the budgets; `binding` names them (exit 1)
"""

from __future__ import annotations

from collections.abc import Sequence


class PlacementError(ValueError):
    """A placement request that cannot be answered; `str(e)` is the user's line."""

    exit_code = 2


class PlacementInputError(PlacementError):
    """Bad problem input; the message names what is wrong and where."""


class PlacementFileError(PlacementInputError):
    """The named input file cannot be read (missing, a directory, not UTF-8)."""


class PlacementInfeasible(PlacementError):
    """No placement satisfies the constraints; `binding` names the binding ones."""

    exit_code = 1

    def __init__(self, message: str, binding: Sequence[str] = ()):
        super().__init__(message)
        self.binding = list(binding)
