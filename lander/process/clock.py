"""The CPU seconds of the job running now: this process's (:func:`time.process_time`), unless whatever runs several
jobs in one process has said how to count one job's (:func:`using_cpu_clock`). The training code reads it the
same way in either case."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_clocks: list[Callable[[], float]] = [time.process_time]


def cpu_seconds() -> float:
    """CPU seconds of the job running now (see the module)."""
    return _clocks[-1]()


@contextmanager
def using_cpu_clock(clock: Callable[[], float]) -> Iterator[None]:
    """While the block runs, :func:`cpu_seconds` is ``clock()``."""
    _clocks.append(clock)
    try:
        yield
    finally:
        _clocks.remove(clock)
