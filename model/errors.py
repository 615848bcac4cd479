"""The boundary errors of every `groupspec` command and the exit code each one maps to.

The exit-code contract (README, "Exit codes"):

    0   checked and passed
    1   a finding: a violation, a divergence, a failed scenario
    2   bad input or usage                                   -> raise BadInput (or a subclass)
    3   incomplete: cut short by a bound, a timeout, a target that could not be reached
                                                             -> raise Incomplete (or a subclass)
    130 interrupted (Ctrl-C)                                 -> KeyboardInterrupt, nothing to raise
    70  a defect in groupspec itself: a traceback and a request for a bug report

Findings are not exceptions: a command returns 1. Everything else a command cannot finish is one of
the two classes below; `groupspec.cli.main` is the one place that turns them into a one-line message
on stderr and the exit code. The classes live in `model` (the bottom layer of the import contracts)
so that every package, including `reference` and `wire`, can raise them. A package keeps its own
exception names (SchemaError, TargetError, ...) by subclassing one of these; subclasses may also
subclass ValueError/OSError for the callers that already catch those.

The message is the whole user-facing text after `groupspec COMMAND: `: name the file, line, field or
argument and what was expected.
"""

from __future__ import annotations

from typing import ClassVar, Final

EXIT_OK: Final = 0
EXIT_FINDING: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_INCOMPLETE: Final = 3
EXIT_DEFECT: Final = 70  # sysexits.h EX_SOFTWARE
EXIT_INTERRUPTED: Final = 130  # 128 + SIGINT, what shells report for Ctrl-C


class BoundaryError(Exception):
    """A run that stops at a boundary of groupspec (input, environment, bound): not a defect."""

    exit_code: ClassVar[int] = EXIT_BAD_INPUT


class BadInput(BoundaryError):
    """Bad arguments or an input that is not what the command reads (exit 2). Raise it before any
    output is written: the contract is that nothing is written on bad input."""

    exit_code: ClassVar[int] = EXIT_BAD_INPUT


class Incomplete(BoundaryError):
    """The check could not finish: a bound was hit, a solver or peer timed out, a target could not
    be reached (exit 3). Never reported as a pass."""

    exit_code: ClassVar[int] = EXIT_INCOMPLETE


__all__ = ["BoundaryError", "BadInput", "Incomplete", "EXIT_OK", "EXIT_FINDING", "EXIT_BAD_INPUT",
           "EXIT_INCOMPLETE", "EXIT_DEFECT", "EXIT_INTERRUPTED"]
