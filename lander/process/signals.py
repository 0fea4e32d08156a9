"""SIGINT and SIGTERM as an exception, so a stopped run records its state and finishes W&B; SIGUSR1 to pause a
run, SIGUSR2 (or SIGCONT) to let it go on.

During training the exception is held back to the next env step (:func:`deferred` and
:func:`raise_pending`): never in the middle of a gradient update, so the checkpoint written on the
way out is a consistent model. A second signal while one is pending stops at once.

A pause waits at the same place (:func:`hold_while_paused`), so a paused run's model, envs and random streams are
exactly as they were: the run goes on as if it had not paused. :func:`training_clock` is the clock of the run's
times (wall time, steps per second): it stands still while the run is paused.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PAUSE = signal.SIGUSR1
CONTINUE = (signal.SIGUSR2, signal.SIGCONT)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM during a run; ``exit_code`` is the shell's 128 + signal number (130, 143)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


class LimitReached(Interrupted):
    """A limit of the run's own (``memory_limit_mb``) stopped it as a signal would: checkpoint, ``interrupted``."""

    def __init__(self, reason: str) -> None:
        KeyboardInterrupt.__init__(self, reason)
        self.exit_code = 1


_state: dict[str, Any] = {"deferring": 0, "pending": None, "installed": 0}
_pause: dict[str, Any] = {"requested": False, "total": 0.0, "listener": None}


def _handle_pause(signum: int, frame: Any) -> None:
    _pause["requested"] = signum == PAUSE


def stop_at_next_step(stop: Interrupted) -> None:
    """Stop the run at the next :func:`raise_pending` as a signal would (a limit of the run's own reached)."""
    _state["pending"] = _state["pending"] or stop


def training_clock() -> float:
    """Seconds, as :func:`time.perf_counter`, less the time this process has spent paused."""
    return time.perf_counter() - float(_pause["total"])


def hold_while_paused() -> None:
    """At a step boundary: if a pause was asked for (:data:`PAUSE`), wait here until :data:`CONTINUE` or a stop
    signal (then raised by the :func:`raise_pending` that follows); the run's pause listener (:func:`pausing`) is
    called with True before waiting, False after."""
    if not _pause["requested"]:
        return
    start = time.perf_counter()
    listener = _pause["listener"]
    if listener is not None:
        listener(True)
    try:
        while _pause["requested"] and _state["pending"] is None:
            time.sleep(0.05)
    finally:
        _pause["requested"] = False
        _pause["total"] += time.perf_counter() - start
        if listener is not None:
            listener(False)


def pause_requested() -> bool:
    """Whether a pause was asked for and has not been held yet (:func:`hold_while_paused`)."""
    return bool(_pause["requested"])


def pause_listener() -> Callable[[bool], None] | None:
    """The run's pause listener now (:func:`pausing`); None outside one."""
    listener: Callable[[bool], None] | None = _pause["listener"]
    return listener


def set_pause_listener(listener: Callable[[bool], None] | None) -> None:
    """Make ``listener`` the pause listener (what runs several jobs in one process swaps per job)."""
    _pause["listener"] = listener


@contextmanager
def pausing(on_pause: Callable[[bool], None]) -> Iterator[None]:
    """While the block runs, ``on_pause`` is the run's pause listener: a pause (:func:`hold_while_paused`) calls it
    with True, then False when the run goes on (the run's status and progress bar say so)."""
    previous, _pause["listener"] = _pause["listener"], on_pause
    try:
        yield
    finally:
        _pause["listener"] = previous


def _handle(signum: int, frame: Any) -> None:
    if _state["deferring"] > 0 and _state["pending"] is None:
        _state["pending"] = Interrupted(signum)  # raised by raise_pending() at the next env step
        return
    raise Interrupted(signum)


def raise_pending() -> None:
    """Raise the :class:`Interrupted` of a signal received while deferring, if any."""
    pending, _state["pending"] = _state["pending"], None
    if pending is not None:
        _state["deferring"] = 0  # a second signal now stops at once
        raise pending


@contextmanager
def deferred() -> Iterator[None]:
    """Hold signals back to the next :func:`raise_pending` (SB3's ``learn``). Nested, signals are held until the
    last block ends."""
    if not _state["deferring"]:
        _state["pending"] = None
    _state["deferring"] += 1
    try:
        yield
        raise_pending()
    finally:
        _state["deferring"] = max(0, _state["deferring"] - 1)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into :class:`Interrupted` so the run records its state and finishes W&B.

    Installed explicitly because a process started in the background by a shell ignores SIGINT. Nested, the
    outermost block installs and restores.
    """
    outermost = _state["installed"] == 0
    previous: dict[int, Any] = {}
    if outermost:
        previous = {sig: signal.signal(sig, _handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        previous.update({sig: signal.signal(sig, _handle_pause) for sig in (PAUSE, *CONTINUE)})
    _state["installed"] += 1
    try:
        yield
    finally:
        _state["installed"] -= 1
        if outermost:
            _state["deferring"], _state["pending"] = 0, None
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@contextmanager
def handling(handler: Any, signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """``handler`` (a function, or ``signal.SIG_IGN``) for ``signals`` while the block runs, the previous ones
    after it."""
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def exit_on_signals() -> None:
    """Until :func:`stop_on_signals` takes over: SIGINT/SIGTERM end the process at once with 128 + signal.

    Called on the first line of ``python -m lander.run``: a process started in the background by a shell
    would otherwise ignore SIGINT until then, and nothing is written before training starts. A pause asked for
    until then takes effect at the first step.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit)
    for sig in (PAUSE, *CONTINUE):  # remembered for the first step (by default SIGUSR1 would end the process)
        signal.signal(sig, _handle_pause)


def _exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def said_on_exit(line: Callable[[], str]) -> Iterator[None]:
    """Around an entry point's work, once :func:`exit_on_signals` holds SIGINT/SIGTERM: the exit a signal makes
    (130, 143; the files lander writes are written whole) logs ``line()`` as an error: one line, no traceback."""
    try:
        yield
    except SystemExit as stop:
        if stop.code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
            logging.getLogger("lander").error("%s", line())
        raise


@contextmanager
def signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back while a stopping run records its state (delivered when the block ends)."""
    signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
