"""What Gymnasium's registry says of an env id without making the env: what ``gymnasium.make`` calls to make it,
whether that takes ``render_mode``, the render modes its class lists. Gymnasium alone (no SB3, no torch), so the
config checks read it before anything runs and :mod:`lander.envs` makes envs by it."""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any


def env_creator(env_id: str) -> Any:
    """What ``gymnasium.make(env_id)`` calls to make the env (mostly its class), the module of a ``module:Id``
    imported first as ``make`` imports it; None where there is none to read (the env then decides).

    :param env_id: a Gymnasium id, or ``module:Id``
    """
    import gymnasium  # 0.07 s: only where an env is checked or made
    from gymnasium.envs.registration import load_env_creator

    module, _, name = env_id.rpartition(":")
    try:
        if module:
            importlib.import_module(module)
        entry = gymnasium.spec(name).entry_point
        return load_env_creator(entry) if isinstance(entry, str) else entry
    except Exception:  # no such id or module (lander.config.checks.check_env_id says so), a broken entry point
        return None


@functools.cache
def takes_render_mode(env_id: str) -> bool:
    """Whether the constructor of ``env_id`` takes ``render_mode``, as Gymnasium's API asks of an env, and as
    ``gymnasium.make`` passes it on whenever it is given: an env of one's own often takes none (and renders
    nothing). True where the constructor's signature cannot be read.

    :param env_id: a Gymnasium id, or ``module:Id``
    """
    try:
        parameters = inspect.signature(env_creator(env_id)).parameters.values()
    except (TypeError, ValueError):  # None, a C callable: the env decides
        return True
    return any(p.name == "render_mode" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


@functools.cache
def render_modes(env_id: str) -> tuple[str, ...] | None:
    """The render modes the class of ``env_id`` lists (``metadata["render_modes"]``, as ``gymnasium.make`` reads
    them; ``[]`` by ``gymnasium.Env``'s default), or None where it lists none to read.

    :param env_id: a Gymnasium id, or ``module:Id``
    """
    metadata = getattr(env_creator(env_id), "metadata", None)
    modes = metadata.get("render_modes") if isinstance(metadata, dict) else None
    return tuple(str(mode) for mode in modes) if isinstance(modes, list | tuple) else None
