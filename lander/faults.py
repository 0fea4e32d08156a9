"""Fault-injection points, for the reliability tests (``tests/e2e/test_faults.py``).

``LANDER_FAULT=<point>[@<n>]:<KILL|INT|TERM>`` makes the process send itself that signal the n-th time
(default: the first) it reaches a point whose name starts with ``<point>``: ``write:model_`` (a checkpoint
written to its temporary file, not yet renamed), ``row:eval.csv`` (half a row written), ``start:snapshot``,
``finish:video`` and the others named in the code. Unset, :func:`fault` is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

ENV = "LANDER_FAULT"
_hits: dict[str, int] = {}


def _spec() -> tuple[str, int, signal.Signals] | None:
    value = os.environ.get(ENV)
    if not value:
        return None
    where, _, sig = value.rpartition(":")
    point, _, nth = where.partition("@")
    return point, int(nth or 1), signal.Signals[f"SIG{sig}"]


def fault(point: str, before: Callable[[], object] | None = None) -> None:
    """Send the configured signal to this process if ``point`` is the armed one (and ``before()`` first).

    :param point: this place's name, e.g. ``write:summary.json``
    :param before: what to do just before the signal (e.g. write half a row)
    """
    spec = _spec() if ENV in os.environ else None
    if spec is None or not point.startswith(spec[0]):
        return
    _hits[spec[0]] = _hits.get(spec[0], 0) + 1
    if _hits[spec[0]] == spec[1]:
        if before is not None:
            before()
        os.kill(os.getpid(), spec[2])
