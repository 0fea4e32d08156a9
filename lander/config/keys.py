"""Unknown keys on the command line, named with the closest keys that exist ("did you mean ...").

:func:`check_override_keys` runs on the raw overrides, before Hydra composes anything: top-level keys and the
keys of ``eval.*``, ``video.*``, ``logger.*`` (the schema's dataclasses). :func:`check_model_keys` runs on a
composed config: every ``algo.model.*`` key must be a parameter of the model class it is passed to.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import fields, is_dataclass

from omegaconf import DictConfig

from lander.config.schema import CONF_DIR, LanderConfig
from lander.errors import ConfigError


def did_you_mean(key: str, known: list[str]) -> str:
    """`` Did you mean X?`` for the known names closest to ``key``, or abbreviated by it (``lr``:
    ``learning_rate``); '' when none is."""
    initials = [k for k in known if "".join(w[:1] for w in k.split("_")) == key and "_" in k]
    close = initials + [c for c in difflib.get_close_matches(key, known, n=3, cutoff=0.6) if c not in initials]
    return f" Did you mean {' or '.join(repr(c) for c in close[:3])}?" if close else ""


def check_override_keys(overrides: list[str]) -> None:
    """Reject an unknown key in command-line overrides, naming the closest keys and listing those that exist.

    Hydra rejects it too, but without naming the allowed keys; this runs before Hydra composes.
    Keys with ``+``/``~``/``++``, Hydra's own (``hydra.*``, ``--flags``) and ``algo.*`` are left to Hydra
    and :func:`check_model_keys`.
    """
    schema = LanderConfig()
    top = sorted(LanderConfig.__dataclass_fields__)
    groups = {p.name for p in CONF_DIR.iterdir() if p.is_dir()}  # experiment=, hparams_search=, ...
    for override in overrides:
        if override.startswith(("+", "~", "-")) or "=" not in override:
            continue
        key, value = override.split("=", 1)
        parts = key.split(".")
        if parts[0] in ("hydra", "algo") or "/" in key or key in groups:  # Hydra's, free-form algo.model, groups
            continue
        if not hasattr(schema, parts[0]):
            raise ConfigError(
                f"unknown key {key!r} in override {override!r}.{did_you_mean(parts[0], top + sorted(groups))} "
                f"Top-level keys are {', '.join(top)}; algorithm hyperparameters go under algo.model "
                f"(e.g. algo.model.{key}={value})"
            )
        node = getattr(schema, parts[0])
        if len(parts) == 2 and is_dataclass(node) and not hasattr(node, parts[1]):
            known = sorted(f.name for f in fields(node))
            raise ConfigError(
                f"unknown key {key!r} in override {override!r}.{did_you_mean(parts[1], known)} "
                f"Keys of {parts[0]} are {', '.join(known)}"
            )


def model_parameters(target: str) -> list[str] | None:
    """The keyword parameters of the model class ``target``, following ``**kwargs`` up its base classes
    (MAC's go on to A2C's); None if the chain ends open or the class cannot be imported."""
    from hydra.utils import get_class

    try:
        classes = get_class(target).__mro__
    except (ImportError, ValueError):
        return None  # Hydra reports a target it cannot import when it instantiates it
    names: list[str] = []
    for cls in classes:
        if "__init__" not in vars(cls):
            continue
        parameters = list(inspect.signature(vars(cls)["__init__"]).parameters.values())
        names += [p.name for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD or p.kind == p.KEYWORD_ONLY]
        if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters):
            return sorted(n for n in set(names) - {"self", "env"} if not n.startswith("_"))
    return None


def check_model_keys(cfg: DictConfig) -> None:
    """Every ``algo.model.*`` key must be a parameter of the model class (``algo.model._target_``)."""
    known = model_parameters(str(cfg.algo.model.get("_target_", "")))
    if known is None:
        return
    for key in cfg.algo.model:
        if not str(key).startswith("_") and key not in known:
            raise ConfigError(
                f"unknown key 'algo.model.{key}': {cfg.algo.model._target_} takes no parameter {key!r}."
                f"{did_you_mean(str(key), known)} Its parameters are {', '.join(sorted(known))}"
            )
