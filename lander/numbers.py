"""Numbers as lander writes them for people (logs, tables, reports): significant digits written out."""

from __future__ import annotations

import math

import numpy as np


def significant(value: float, digits: int = 4, plus: bool = False) -> str:
    """``value`` to ``digits`` significant digits, written out: ``130`` where ``%.2g`` gave ``1.3e+02`` and
    ``12350`` for ``1.235e+04``; an exponent only beyond 1e9 and below 1e-4, and ``nan``/``inf`` as Python writes
    them.

    :param value: the number
    :param digits: significant digits (``%.{digits}g``'s precision)
    :param plus: a ``+`` before a positive value (a difference)
    """
    value = float(value)
    sign = "+" if plus and value > 0 else ""
    if not math.isfinite(value) or (value != 0 and not 1e-4 <= abs(value) < 1e9):
        return sign + format(value, f".{digits}g")
    return sign + str(np.format_float_positional(value, precision=digits, unique=False, fractional=False, trim="-"))


def timesteps_listed(steps: list[int]) -> str:
    """Timesteps written out for a sentence: ``20,000``, ``20,000 and 40,000``, ``20,000, 30,000 and 40,000``."""
    written = [f"{step:,}" for step in steps]
    return ", ".join(written[:-1]) + " and " + written[-1] if len(written) > 1 else "".join(written)
