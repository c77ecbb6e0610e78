"""The errors every placement engine raises, as one hierarchy.

`tandem place` (placement/cli.py) turns any `PlacementError` into one line on
stderr and its `exit_code` (the table in the README): 1 when the input was read
but is wrong or has no solution, 2 when the named file cannot be read. Every
other exception is a bug and is not caught here.

    PlacementError (ValueError)
    ├── PlacementInputError      bad problem data: names the file, line, path
    │   └── PlacementFileError   the named file is missing or unreadable (exit 2)
    └── PlacementInfeasible      no placement meets the budgets; `binding` names them
"""

from __future__ import annotations

from collections.abc import Sequence


class PlacementError(ValueError):
    """A placement request that cannot be answered; `str(e)` is the user's line."""

    exit_code = 1


class PlacementInputError(PlacementError):
    """Bad problem input; the message names what is wrong and where."""


class PlacementFileError(PlacementInputError):
    """The named input file cannot be read (missing, a directory, not UTF-8)."""

    exit_code = 2


class PlacementInfeasible(PlacementError):
    """No placement satisfies the constraints; `binding` names the binding ones."""

    def __init__(self, message: str, binding: Sequence[str] = ()):
        super().__init__(message)
        self.binding = list(binding)
