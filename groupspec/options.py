"""Options that several commands share, each parsed one way: the table name, the exploration
bounds and faults, `--config KEY=VALUE` (Kafka's broker properties, with Kafka's bounds), output
files and directories (checked before a run, written atomically after it), and --quiet.

Every function here raises `model.errors.BadInput` with a message that names the option and what
was expected; `groupspec.cli.main` turns it into exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any, Final, Iterable, Optional

from check.abstract import FAULTS, Bounds
from check.profiles import Urgent, table_of, table_or_profile
from model.atomic import check_writable
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.errors import BadInput
from server.config import INT_MAX, KAFKA_PROPERTIES, kafka_properties



# --- tables ---------------------------------------------------------------------------------------


def load_table(spec: str, flag: str = "--table") -> tuple[Table, Urgent]:
    """`package.module:NAME` -> the table and its URGENT events (check.profiles.table_of)."""
    return table_of(spec, flag)


def load_table_or_profile(spec: str, flag: str) -> tuple[Table, Urgent]:
    """A profile name (kafka-3.9, kafka-4) or package.module:NAME (a mutant's name too)."""
    return table_or_profile(spec, flag)


# --- exploration bounds ---------------------------------------------------------------------------


def parse_faults(text: str, flag: str = "--faults") -> frozenset[str]:
    """`session,rebalance` -> those fault names of check.abstract.FAULTS; `none` -> no fault."""
    if text.strip() == "none":
        return frozenset()
    items = frozenset(x.strip() for x in text.split(",") if x.strip())
    unknown = items - set(FAULTS)
    if unknown:
        raise BadInput(f"{flag}: unknown fault(s) {sorted(unknown)}; choose from "
                       f"{', '.join(FAULTS)} (or 'none')")
    return items


def at_least(flag: str, value: int, minimum: int) -> int:
    if value < minimum:
        raise BadInput(f"{flag} must be >= {minimum}, got {value}")
    return value


def faults_text(bounds: Bounds) -> str:
    return ",".join(f for f in FAULTS if f in bounds.faults) or "none"


def add_bound_options(p: argparse.ArgumentParser, defaults: Bounds, *, given: bool) -> None:
    """--members, --static, --max-generation, --faults, --mode, --v3-joins, --group-max-size,
    --max-ids-per-client.
    `given=True`: an option left out is None, so that `bounds_of` can tell whether any was given
    (check runs its default plan unless one is)."""
    d = defaults

    def default(value: Any) -> Any:
        return None if given else value

    p.add_argument("--members", type=int, default=default(d.dynamic),
                   help=f"dynamic members (default {d.dynamic})")
    p.add_argument("--static", type=int, default=default(d.static), help=f"static members (default {d.static})")
    p.add_argument("--max-generation", type=int, default=default(d.max_generation),
                   help=f"generation cap (default {d.max_generation})")
    p.add_argument("--faults", default=default(faults_text(d)),
                   help=f"comma-separated from {','.join(FAULTS)}, or none (default {faults_text(d)})")
    p.add_argument("--mode", choices=("closed", "open"), default=default(d.mode),
                   help="closed: consumers that follow the protocol; open: clients that send any "
                        f"request at any time (default {d.mode})")
    p.add_argument("--v3-joins", action="store_true",
                   help="dynamic members use JoinGroup v0-3 (no MEMBER_ID_REQUIRED)")
    p.add_argument("--group-max-size", type=int, default=d.group_max_size, metavar="N",
                   help="the broker's group.max.size (default unlimited)")
    p.add_argument("--max-ids-per-client", type=int, default=default(d.max_ids_per_client),
                   metavar="N",
                   help="member ids one client may hold in the group at once (members and pending "
                        "ids; each crash or rejoin under a new id uses one); a world beyond it is "
                        f"not expanded (default {d.max_ids_per_client})")


def bounds_of(a: argparse.Namespace, defaults: Bounds, *, most: int, beyond: str) -> tuple[Bounds, bool]:
    """The bounds of `add_bound_options`' options, and whether any of them was given. At most
    `most` members: more is beyond what `beyond` can finish."""
    given = any(v is not None for v in (a.members, a.static, a.max_generation, a.faults, a.mode,
                                        a.max_ids_per_client))
    members = defaults.dynamic if a.members is None else a.members
    static = defaults.static if a.static is None else a.static
    max_generation = defaults.max_generation if a.max_generation is None else a.max_generation
    at_least("--members", members, 0)
    at_least("--static", static, 0)
    at_least("--max-generation", max_generation, 0)
    at_least("--group-max-size", a.group_max_size, 1)
    ids = defaults.max_ids_per_client if a.max_ids_per_client is None else a.max_ids_per_client
    at_least("--max-ids-per-client", ids, 1)
    if members + static < 1:
        raise BadInput("need at least one member (--members/--static)")
    if members + static > most:
        raise BadInput(f"more than {most} members is beyond what {beyond} can finish")
    faults = defaults.faults if a.faults is None else parse_faults(a.faults)
    bounds = Bounds(dynamic=members, static=static, max_generation=max_generation, faults=faults,
                    mode=defaults.mode if a.mode is None else a.mode,
                    require_known_member_id=not a.v3_joins, group_max_size=a.group_max_size,
                    max_ids_per_client=ids)
    return bounds, given


# --- Kafka broker properties ----------------------------------------------------------------------

CONFIG_HELP: Final = ("a Kafka broker property: " + ", ".join(sorted(KAFKA_PROPERTIES)) +
                      " (repeatable)")


def add_config_option(p: argparse.ArgumentParser, base: CoordinatorConfig) -> None:
    given = ", ".join(f"{k}={v}" for k, v in kafka_properties(base).items())
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help=f"{CONFIG_HELP}; default: {given}")


def parse_config(settings: Iterable[str], base: CoordinatorConfig = CoordinatorConfig()) -> CoordinatorConfig:
    """`["group.max.size=3", ...]` -> `base` with those properties replaced, each within the bounds
    of Kafka 3.9's config definitions (server/config.py)."""
    changes: dict[str, Any] = {}
    for text in settings:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise BadInput(f"--config {text!r}: expected KEY=VALUE")
        if key not in KAFKA_PROPERTIES:
            raise BadInput(f"--config {key}: unknown property; known: {', '.join(sorted(KAFKA_PROPERTIES))}")
        field, minimum = KAFKA_PROPERTIES[key]
        try:
            number = int(value)
        except ValueError:
            raise BadInput(f"--config {key}={value}: expected an integer") from None
        if not minimum <= number <= INT_MAX:
            raise BadInput(f"--config {key}={value}: expected an integer in {minimum}..{INT_MAX}")
        changes[field] = number
    config = dataclasses.replace(base, **changes)
    if config.group_min_session_timeout_ms > config.group_max_session_timeout_ms:
        raise BadInput(
            f"--config: group.min.session.timeout.ms ({config.group_min_session_timeout_ms}) is greater "
            f"than group.max.session.timeout.ms ({config.group_max_session_timeout_ms})")
    return config


# --- outputs --------------------------------------------------------------------------------------


def output_file(path: Optional[str], flag: str) -> Optional[str]:
    """A report file the command writes after its run: checked now (model.atomic.check_writable),
    so that a bad path fails before the run, not after it."""
    if path is not None:
        check_writable(path, flag)
    return path


# The directories `output_dir` made, outermost first: a run that stops before writing into them
# leaves none of them behind (`remove_unused_dirs`, from `groupspec.cli.main`).
_made_dirs: list[str] = []


def output_dir(path: Optional[str], flag: str, first_file: str, *, create: bool) -> Optional[str]:
    """A directory the command writes files into (`first_file` is one of them): it exists (or is
    created, with `create`) and a file can be written in it, before the run."""
    if path is None:
        return None
    if os.path.exists(path) and not os.path.isdir(path):
        raise BadInput(f"{flag} {path}: exists and is not a directory")
    if create:
        missing = []
        here = os.path.abspath(path)
        while not os.path.exists(here):
            missing.append(here)
            here = os.path.dirname(here)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as e:
            raise BadInput(f"{flag} {path!r}: cannot create directory: {e.strerror}") from None
        _made_dirs.extend(reversed(missing))
    if not os.path.isdir(path):
        raise BadInput(f"{flag}: directory {path} does not exist")
    check_writable(os.path.join(path, first_file), flag)
    return path


def remove_unused_dirs(remove: bool = True) -> None:
    """The directories `output_dir` made that are still empty, removed (innermost first): a run
    stopped by bad input, a defect or Ctrl-C before it wrote anything leaves no empty output
    directory that looks like a run's. A directory with anything in it stays. `remove` False:
    only forgotten (they were an earlier run's in this process)."""
    while _made_dirs:
        made = _made_dirs.pop()
        try:
            if remove:
                os.rmdir(made)
        except OSError:
            pass  # not empty (the run wrote into it), or gone already


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
