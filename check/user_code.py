"""An exception raised inside a user's own definition, told apart from a defect of groupspec.

A table written outside groupspec may register its own atoms, effects, reply forms and
invariants (model.dsl's registries, model.invariants). When one of them raises, the run stops
the way it would on a groupspec defect (the Python step raises, the native engine hands the
callback's exception back), but the defect is in the user's code: `groupspec.cli.main` reports
it in one line, naming the definition, the file and line where it raised and the exception,
with the exit code of bad input, instead of a traceback and a request for a bug report. On
Spark, stage 2 of the replay (traces/job.py) makes the same line on the executor and hands it to
the driver as a row, so a failed task's stack traces never bury it.

A definition is the user's when its module is not one of groupspec's own packages; the
traceback tells which definition was running: the innermost frame whose code is a registered
definition's.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import traceback
from types import CodeType, ModuleType
from typing import Callable, Optional, Sequence

from model.dsl import ATOMS, EFFECTS, REPLY_FORMS, Guard, Table
from model.errors import BadInput
from model.invariants import INVARIANTS

# groupspec's own top-level packages (pyproject.toml's; tests/cli checks they agree)
PRODUCT = ("model", "check", "proofs", "reference", "wire", "traces", "conformance", "fuzz",
           "server", "render", "observe", "clients", "groupspec")


def ours(fn: Callable[..., object]) -> bool:
    """Whether `fn` is defined in one of groupspec's own packages."""
    module = getattr(fn, "__module__", None) or ""
    return module.split(".")[0] in PRODUCT


def names_used(table: Table, urgent: Sequence[tuple[str, Guard]]) -> tuple[set[str], set[str]]:
    """The atoms (of the rows' guards and the urgent events') and the effects `table` uses: what
    an engine that has definitions of its own (native, Z3) must have or be told it lacks."""
    atoms = {lit.atom for r in table.rows for lit in r.guard.literals}
    atoms |= {lit.atom for _, g in urgent for lit in g.literals}
    return atoms, {e for r in table.rows for e in r.effects}


def _code(fn: Callable[..., object]) -> Optional[CodeType]:
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return code if isinstance(code, CodeType) else None


def _user_definitions() -> dict[CodeType, str]:
    """The code of every registered definition that is not groupspec's own -> `atom 'name'`."""
    found: dict[CodeType, str] = {}
    named: list[tuple[str, str, Callable[..., object]]] = []
    named += [("atom", n, a.fn) for n, a in ATOMS.items()]
    named += [("effect", n, e.fn) for n, e in EFFECTS.items()]
    named += [("reply form", n, f) for n, f in REPLY_FORMS.items()]
    named += [("invariant", n, i.check) for n, i in INVARIANTS.items()]
    for kind, name, fn in named:
        code = _code(fn)
        if code is not None and not ours(fn):
            found[code] = f"{kind} {name!r}"
    return found


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from or during, outermost first."""
    out: list[BaseException] = []
    seen: set[int] = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def user_fault(exc: BaseException) -> Optional[str]:
    """One line for an exception raised inside a user's definition: which definition, where
    (the innermost frame in its file) and what; None when no user definition was running."""
    definitions = _user_definitions()
    if not definitions:
        return None
    for e in _chain(exc):
        frames = list(traceback.walk_tb(e.__traceback__))
        inside = [k for k, (frame, _) in enumerate(frames) if frame.f_code in definitions]
        if not inside:
            continue
        k = inside[-1]
        name = definitions[frames[k][0].f_code]
        path = frames[k][0].f_code.co_filename
        # where it raised: the innermost frame in the definition's own file, below it
        line = next(ln for f, ln in reversed(frames[k:]) if f.f_code.co_filename == path)
        what = "".join(traceback.format_exception_only(type(e), e)).strip().replace("\n", " ")
        return f"{name} raised {what} at {path}:{line} (a defect in that definition, not in groupspec)"
    return None


def import_users_module(name: str, what: str) -> ModuleType:
    """The user's module `name` (a table's, e.g. --table users_table:TABLE), imported; one line of
    BadInput led by `what` when it cannot be: not found, not Python (where), or its code raised
    while it was imported (what, and where)."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise BadInput(f"{what}: cannot import {name!r}: {e}") from None
    except SyntaxError as e:  # IndentationError too
        raise BadInput(f"{what}: cannot import {name!r}: {type(e).__name__}: {e.msg} at "
                       f"{e.filename}:{e.lineno}") from None
    except Exception as e:
        # where: the innermost line of the module's own file (a registry refusing its atom
        # raises in groupspec's code, called from the user's line that registered it)
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if "importlib" not in f.filename and "<frozen" not in f.filename]
        try:
            origin = getattr(importlib.util.find_spec(name), "origin", None)
        except Exception:  # a package above it that fails to import as well
            origin = None
        own = [f for f in frames if origin is not None and f.filename == origin]
        where = f" at {(own or frames)[-1].filename}:{(own or frames)[-1].lineno}" if frames else ""
        what_raised = "".join(traceback.format_exception_only(type(e), e)).strip().replace("\n", " ")
        raise BadInput(f"{what}: importing {name!r} raised {what_raised}{where}") from None
