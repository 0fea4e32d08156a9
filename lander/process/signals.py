"""SIGINT and SIGTERM as an exception, so a stopped run records its state and finishes W&B.

During training the exception is held back to the next env step (:func:`deferred` and
:func:`raise_pending`): never in the middle of a gradient update, so the checkpoint written on the
way out is a consistent model. A second signal while one is pending stops at once.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM during a run; ``exit_code`` is the shell's 128 + signal number (130, 143)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


_state: dict[str, Any] = {"deferring": False, "pending": None}


def _handle(signum: int, frame: Any) -> None:
    if _state["deferring"] and _state["pending"] is None:
        _state["pending"] = Interrupted(signum)  # raised by raise_pending() at the next env step
        return
    raise Interrupted(signum)


def raise_pending() -> None:
    """Raise the :class:`Interrupted` of a signal received while deferring, if any."""
    pending, _state["pending"] = _state["pending"], None
    if pending is not None:
        _state["deferring"] = False
        raise pending


@contextmanager
def deferred() -> Iterator[None]:
    """Hold signals back to the next :func:`raise_pending` (SB3's ``learn``)."""
    _state["deferring"], _state["pending"] = True, None
    try:
        yield
        raise_pending()
    finally:
        _state["deferring"] = False


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into :class:`Interrupted` so the run records its state and finishes W&B.

    Installed explicitly because a process started in the background by a shell ignores SIGINT.
    """
    previous = {sig: signal.signal(sig, _handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        _state["deferring"], _state["pending"] = False, None
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def exit_on_signals() -> None:
    """Until :func:`stop_on_signals` takes over: SIGINT/SIGTERM end the process at once with 128 + signal.

    Called on the first line of ``python -m lander.run``: a process started in the background by a shell
    would otherwise ignore SIGINT until then, and nothing is written before training starts.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit)


def _exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back while a stopping run records its state (delivered when the block ends)."""
    signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
