"""Exit codes and the one top-level handler every `tandem` command runs under.

The table (also in the README, "Exit codes"):

    0    success
    1    the input is valid but has no solution (an infeasible placement)
    2    bad input: a file with problems (file:line:col: path: message), a bad flag or
         argument, a named file that cannot be read
    3    the environment refused: port in use, OVS missing, backend cannot start, output not writable
    4    internal error (a bug): one line naming the exception; TANDEM_DEBUG=1 shows the traceback
    130  interrupted (Ctrl-C); long commands keep what they measured, marked partial

``TandemGroup`` is the click group class of the `tandem` app: any exception that a
command lets through becomes one line on stderr and a code from this table, so no
exception type reaches the user as a traceback. Commands still print their own precise
messages for the errors they know; this is the net under them.
"""

from __future__ import annotations

import os
import sys
import traceback

import typer
from typer.core import TyperGroup

# click's exception classes, found through typer's BadParameter (typer vendors click from 0.2x on)
_MRO = {c.__name__: c for c in typer.BadParameter.__mro__}
UsageError = _MRO["UsageError"]
ClickException = _MRO["ClickException"]

OK = 0
NO_SOLUTION = 1
INPUT = 2
USAGE = 2  # the same code: a bad flag is bad input too
ENVIRONMENT = 3
INTERNAL = 4
INTERRUPTED = 130

EXIT_CODES: dict[int, str] = {
    OK: "success",
    NO_SOLUTION: "the input is valid but has no solution (an infeasible placement)",
    INPUT: "bad input: a file with problems, a bad flag or argument, a file that cannot be read",
    ENVIRONMENT: "the environment refused (port in use, OVS missing, backend cannot start, output not writable)",
    INTERNAL: "internal error (a bug); TANDEM_DEBUG=1 shows the traceback",
    INTERRUPTED: "interrupted (Ctrl-C); partial results are marked partial",
}


class TandemError(Exception):
    """An error with a message meant for the user and its exit code."""

    def __init__(self, message: str, code: int = INPUT):
        super().__init__(message)
        self.code = code


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Errors of the machine, not of the input, by name (so this module imports no backend).
_ENVIRONMENT_ERRORS = ("OvsError", "BackendError", "SandboxError")


def describe(exc: BaseException) -> tuple[str, int]:
    """(one line, exit code) for an exception that escaped a command."""
    if isinstance(exc, TandemError):
        return f"error: {_one_line(str(exc))}", exc.code
    if isinstance(exc, MemoryError):
        return "error: out of memory (the input asks for more than this machine has; make it smaller)", INPUT
    if isinstance(exc, RecursionError):
        return "error: the input nests too deeply (recursion limit)", INPUT
    if isinstance(exc, (BrokenPipeError,)):
        return "", OK  # stdout closed by the reader (`| head`): not an error worth a line
    if any(c.__name__ in _ENVIRONMENT_ERRORS for c in type(exc).__mro__):
        return f"error: {_one_line(str(exc))}", ENVIRONMENT
    if isinstance(exc, PermissionError):
        return f"error: {_one_line(str(exc))}", ENVIRONMENT
    if isinstance(exc, OSError):
        return f"error: {_one_line(exc.strerror or str(exc))}{f': {exc.filename}' if exc.filename else ''}", ENVIRONMENT
    first = _one_line(str(exc)) or "(no message)"
    return f"internal error: {type(exc).__name__}: {first} (a bug in tandem; TANDEM_DEBUG=1 shows the traceback)", INTERNAL


class TandemGroup(TyperGroup):
    """The `tandem` command group: every exception ends as one line and a documented exit code."""

    def make_context(self, info_name, args, parent=None, **extra):  # noqa: D401 - click API
        """The top level's own flags (`tandem --bogus`): a usage error is one line too."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError" or parent is not None:
                raise
            typer.echo(f"error: {info_name}: {_one_line(e.format_message())} (see {info_name} --help)", err=True)
            raise typer.Exit(USAGE) from None

    def invoke(self, ctx):  # noqa: D401 - click API
        try:
            return super().invoke(ctx)
        except UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError" or e.ctx is None:
                raise
            path = e.ctx.command_path
            typer.echo(f"error: {path}: {_one_line(e.format_message())} (see {path} --help)", err=True)
            raise typer.Exit(USAGE) from None
        except (typer.Exit, ClickException, typer.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(INTERRUPTED) from None
        except Exception as e:  # noqa: BLE001 - the one net under every command
            if os.environ.get("TANDEM_DEBUG"):
                traceback.print_exc(file=sys.stderr)
            line, code = describe(e)
            if line:
                typer.echo(line, err=True)
            raise typer.Exit(code) from None
