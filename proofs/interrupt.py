"""Ctrl-C that stops a proof run at once and is never lost.

Three things hid a Ctrl-C from a proof run (issue 15: ignored in 2 of 8 tries, the run then printed
"all obligations proved"): Python's KeyboardInterrupt is raised at whatever bytecode runs next, and
with Z3 that is often `AstRef.__del__`, where Python prints "Exception ignored" and drops it; Z3
installs its own SIGINT handler around a check (parameter `ctrl_c`), which cancels the query and
answers `unknown`; and a Python signal handler does not run during the C call at all.

So within `interruptible()`: SIGINT only sets a flag (a handler that raises nothing cannot be
swallowed); Z3's handler is off; the C-level handler's wakeup byte (signal.set_wakeup_fd) is read by
a watcher thread that interrupts the running Z3 query; and every `Solver.check` raises
KeyboardInterrupt when it returns with the flag set, so a cancelled query is never taken for an
answer. The block ends with a last check of the flag.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from types import FrameType
from typing import Any, Iterator, Optional

import z3

_flag = threading.Event()


def interrupted() -> bool:
    return _flag.is_set()


def check_interrupted() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C arrived (call after every solver query)."""
    if _flag.is_set():
        raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, Ctrl-C interrupts the running Z3 query and raises KeyboardInterrupt.
    Only in the main thread (signal handlers can only be set there); elsewhere a no-op. A no-op
    too when SIGINT is ignored, as the process was started (a shell without job control starts
    its background commands so, to keep the terminal's Ctrl-C to the foreground one; Python
    itself then leaves SIGINT ignored): a Ctrl-C meant for another command stops no proof."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    _flag.clear()
    z3.set_param("ctrl_c", False)

    # Ctrl-Cs this handler has seen: the watcher thread sets the flag too, often before this
    # handler runs for the same Ctrl-C, so the flag cannot tell a second Ctrl-C from the first
    # (session 16: one Ctrl-C was taken for two and raised inside a Z3 callback, which printed
    # a traceback)
    seen = [0]

    def on_sigint(signum: int, frame: Optional[FrameType]) -> None:
        seen[0] += 1
        _flag.set()
        if seen[0] > 1:  # a second Ctrl-C: stop wherever we are
            raise KeyboardInterrupt

    previous_handler = signal.signal(signal.SIGINT, on_sigint)
    original_check = z3.Solver.check

    def check(self: Any, *assumptions: Any) -> Any:
        check_interrupted()
        try:
            result = original_check(self, *assumptions)
        except z3.Z3Exception:
            check_interrupted()  # cancelled by the Ctrl-C
            raise
        check_interrupted()
        return result

    z3.Solver.check = check
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    previous_fd = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                data = os.read(rfd, 64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGINT in data:
                _flag.set()
                z3.main_ctx().interrupt()

    watcher = threading.Thread(target=watch, name="z3-ctrl-c", daemon=True)
    watcher.start()
    try:
        yield
        check_interrupted()
    except z3.Z3Exception:
        if _flag.is_set():  # an operation cancelled by the interrupt ("push canceled"): the Ctrl-C
            raise KeyboardInterrupt from None
        raise
    finally:
        z3.Solver.check = original_check
        signal.signal(signal.SIGINT, previous_handler)
        signal.set_wakeup_fd(previous_fd)
        stop.set()
        os.write(wfd, b"\0")  # wake the watcher so it sees `stop`
        watcher.join(timeout=1.0)
        os.close(wfd)
        os.close(rfd)
        z3.set_param("ctrl_c", True)
