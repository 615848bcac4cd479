"""The `groupspec` command: one argparse tree, one error path.

Each command is a module of groupspec/commands/ with `add_arguments(parser)` and `run(args) -> int`
(and a one-line HELP and a DESCRIPTION); `COMMANDS` below puts them in the tree, a two-word name
("prove states", "scenario run") under its first word. `main` is the one handler that turns what a
command raises into one line on stderr and the exit code of the contract (model/errors.py; README,
"Exit codes"): BadInput (every argparse error is one) 2, Incomplete 3, Ctrl-C 130, a closed pipe 0,
anything else 70 with the traceback.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import textwrap
from typing import Final, NoReturn, Optional, Protocol, Sequence

from model.errors import EXIT_BAD_INPUT, EXIT_DEFECT, EXIT_INTERRUPTED, BadInput, BoundaryError, Incomplete

from groupspec.commands import (
    check, clients, diff, fuzz, observe, prove, prove_states, render, replay, scenario_render,
    scenario_run, serve, soak, traces_generate,
)


class Command(Protocol):
    """A command module."""

    @property
    def HELP(self) -> str: ...

    @property
    def DESCRIPTION(self) -> str: ...

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: Final[tuple[tuple[str, Command], ...]] = (
    ("check", check),
    ("prove", prove),
    ("prove states", prove_states),
    ("diff", diff),
    ("scenario run", scenario_run),
    ("scenario render", scenario_render),
    ("traces generate", traces_generate),
    ("replay", replay),
    ("soak", soak),
    ("serve", serve),
    ("fuzz", fuzz),
    ("observe", observe),
    ("clients", clients),
    ("render", render),
)
# The first word of a two-word command that is not a command itself: its help line.
GROUPS: Final = {
    "scenario": "scenario files: run them against a target (scenario run), draw them (scenario render)",
    "traces": "traces: make them with the reference coordinator (traces generate)",
}
EPILOG: Final = (
    "exit codes: 0 passed, 1 finding, 2 bad input or usage, 3 incomplete, 130 interrupted,\n"
    "70 a defect in groupspec (README, \"Exit codes\")")
HELP_HELP: Final = "print a command's help (the same as COMMAND --help)"


def _listing() -> str:
    """The root's help: every command by its whole name, with its one line."""
    rows = [(f"groupspec {name}", module.HELP) for name, module in COMMANDS]
    rows.append(("groupspec help [COMMAND]", HELP_HELP))
    width = max(len(n) for n, _ in rows) + 2
    lines = ["An executable, model-checked spec of Kafka's classic consumer-group coordinator.", "",
             "commands (groupspec COMMAND --help or groupspec help COMMAND: its options):"]
    for name, text in rows:
        lines += textwrap.wrap(text, 79, initial_indent=f"  {name:<{width}}", subsequent_indent=" " * (width + 2))
    return "\n".join(lines)


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are BadInput: one line, exit 2, through `main`'s handler."""

    def error(self, message: str) -> NoReturn:
        raise BadInput(f"{self.prog}: {message}")


def build_parser() -> tuple[CommandParser, dict[str, CommandParser]]:
    """The whole tree, and each command's parser by its name ("prove states", ...)."""
    root = CommandParser(prog="groupspec", usage="groupspec [-h] COMMAND ...", description=_listing(),
                         epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parsers: dict[str, CommandParser] = {"": root}
    below: dict[str, argparse._SubParsersAction[CommandParser]] = {}

    def add(parent: str, word: str, help: str, description: str) -> CommandParser:
        if parent not in below:  # a group's subcommand is required, prove's (states) is not
            below[parent] = parsers[parent].add_subparsers(
                title="commands", metavar=None if parent else "COMMAND", dest=argparse.SUPPRESS,
                required=parent in ("", *GROUPS),
                help=None if parent else argparse.SUPPRESS)  # the root lists them in its description
        parser = below[parent].add_parser(word, prog=f"groupspec {parent} {word}".replace("  ", " "),
                                          help=help, description=description)
        parsers[f"{parent} {word}".strip()] = parser
        return parser

    for name, module in COMMANDS:
        *head, word = name.split()
        parent = " ".join(head)
        if parent not in parsers:
            add("", parent, help=GROUPS[parent], description=GROUPS[parent])
        parser = add(parent, word, help=module.HELP, description=module.DESCRIPTION)
        module.add_arguments(parser)
        parser.set_defaults(command=module, name=name)
    helper = add("", "help", help=HELP_HELP,
                 description="Print the help of a command: the same text as groupspec COMMAND --help.")
    helper.add_argument("topic", nargs="*", metavar="COMMAND",
                        help="a command, e.g. check, prove states, scenario run (none: the list of commands)")
    helper.set_defaults(name="help")
    return root, parsers


def _help(topic: Sequence[str], parsers: dict[str, CommandParser]) -> int:
    """`groupspec help [COMMAND]`: the text `groupspec [COMMAND] --help` prints."""
    parser = parsers.get(" ".join(topic))
    if parser is None:
        raise BadInput(f"unknown command {' '.join(topic)!r}; commands: {', '.join(n for n, _ in COMMANDS)}")
    print(parser.format_help(), end="")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The one top-level handler: every boundary error becomes one line on stderr and its exit
    code (model/errors.py); Ctrl-C exits 130; anything else is a defect, reported as one."""
    args = list(sys.argv[1:] if argv is None else argv)
    name = _command_words(args)  # for the messages of errors before the arguments are parsed
    _remove_unused_dirs(remove=False)
    try:
        root, parsers = build_parser()
        if not args:
            raise BadInput("a command is needed (groupspec --help lists them)")
        try:
            ns, extra = root.parse_known_args(args)
        except SystemExit as e:  # --help printed the help; argparse's errors are BadInput
            return e.code if isinstance(e.code, int) else 0
        name = ns.name
        if extra:  # reported by the command's parser, not the root's
            parsers[name].error(f"unrecognized arguments: {' '.join(extra)}")
        if ns.name == "help":
            return _help(ns.topic, parsers)
        command: Command = ns.command
        code = command.run(ns)
        if code != 0:
            _remove_unused_dirs()
        return code
    except BoundaryError as e:
        _remove_unused_dirs()
        return _report_boundary(name, e)
    except KeyboardInterrupt:
        _remove_unused_dirs()
        _flush_quietly()
        print(f"\ngroupspec{' ' + name if name else ''}: interrupted (Ctrl-C); nothing reported is complete",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `groupspec ... | head`: the reader left; not an error of ours
        _silence_stdout()
        return 0
    except Exception as e:
        import traceback

        from check.user_code import user_fault

        _remove_unused_dirs()
        _flush_quietly()
        fault = user_fault(e)
        if fault is not None:  # the user's own atom, effect, reply form or invariant raised
            print(f"groupspec {name}: {fault}", file=sys.stderr)
            return EXIT_BAD_INPUT
        traceback.print_exc()
        print(f"groupspec {name}: internal error (a defect in groupspec, not in your input): please "
              "report it with the command line and the traceback above", file=sys.stderr)
        return EXIT_DEFECT


def _command_words(args: Sequence[str]) -> str:
    words = list(itertools.takewhile(lambda x: not x.startswith("-"), args))[:2]
    return " ".join(words) if " ".join(words) in (n for n, _ in COMMANDS) else " ".join(words[:1])


INCOMPLETE_SUFFIX = " (incomplete: nothing was passed)"


def _report_boundary(name: str, e: BoundaryError) -> int:
    message = str(e) or type(e).__name__
    if not message.startswith("groupspec"):
        message = f"groupspec {name}: {message}" if name else f"groupspec: {message}"
    if isinstance(e, Incomplete) and not message.endswith(INCOMPLETE_SUFFIX):  # (a child's line may end so)
        message += INCOMPLETE_SUFFIX
    _flush_quietly()
    print(message, file=sys.stderr)
    return e.exit_code


def _remove_unused_dirs(remove: bool = True) -> None:
    """Output directories this run made and left empty, removed (groupspec.options; a run that
    never loaded it made none); with `remove` False only forgotten (an earlier `main` in this
    process, as in tests, made them and they are its output)."""
    options = sys.modules.get("groupspec.options")
    if options is not None:
        options.remove_unused_dirs(remove)


def _flush_quietly() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush does not fail too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
