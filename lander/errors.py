"""The errors lander reports in one line, at the ground of every package: each message names the key or the file
and what is allowed. ``python -m lander.run`` exits 2 on a :class:`ConfigError` (before anything is written) and 1 on
a :class:`RunFileError`; ``lander.compare`` exits 2 on a :class:`RunSetError`.
"""


class ConfigError(ValueError):
    """A configuration value that cannot be run; the message names the key and the allowed values."""


class RunFileError(RuntimeError):
    """A file of a run that cannot be used safely (unreadable, truncated, foreign or hostile); the message
    names the file. ``python -m lander.run`` and ``lander.evaluate`` report it in one line and exit 1."""


class RunSetError(ValueError):
    """Runs that cannot be compared as asked; the message names the file or the value."""


def root_cause(exc: BaseException) -> str:
    """``Type: first line`` of the last exception in ``exc``'s chain of causes: what Hydra's wrappers
    (``InstantiationException``, ``ImportError("Error loading ...")``) wrap, the error a message should name."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"
