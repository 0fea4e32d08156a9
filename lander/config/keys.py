"""Unknown keys on the command line, named with the closest keys that exist ("did you mean ...").

:func:`check_override_keys` runs on the raw overrides, before Hydra composes anything: top-level keys, the keys
of the schema's dataclasses (``eval.*``, ``env.normalize.*``, ...), added with ``+`` or not, and ``logger.*``.
:func:`check_model_keys` runs on a composed config: every ``algo.model.*`` key must be a parameter of the model
class it is passed to.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import types
import typing
from dataclasses import fields, is_dataclass
from typing import Any

import yaml
from hydra.utils import get_class, get_object
from omegaconf import DictConfig, OmegaConf

from lander.config.schema import CONF_DIR, LanderConfig, group_options, tracker_nodes
from lander.config.trust import allowed_prefixes
from lander.errors import ConfigError, root_cause


def did_you_mean(key: str, known: list[str]) -> str:
    """`` Did you mean X?`` for the known names closest to ``key``, or abbreviated by it (``lr``:
    ``learning_rate``); '' when none is."""
    initials = [k for k in known if "".join(w[:1] for w in k.split("_")) == key and "_" in k]
    close = initials + [c for c in difflib.get_close_matches(key, known, n=3, cutoff=0.6) if c not in initials]
    return f" Did you mean {' or '.join(repr(c) for c in close[:3])}?" if close else ""


def check_override_keys(overrides: list[str]) -> None:
    """Reject an unknown key in command-line overrides, naming the closest keys and listing those that exist.

    Hydra rejects it too, but without naming the allowed keys; this runs before Hydra composes. A key added with
    ``+``/``++`` must be added to a node lander has (``+env.kwargs.x``, ``+callbacks.x``, ``+logger.x``): a new
    top-level key (``+seeed=3``) or one inside the schema's dataclasses (``+eval.episode=5``) is read by nothing, so
    it is refused too (:func:`check_schema_path`). Keys with ``~``, Hydra's own (``hydra.*``, ``--flags``) and
    ``algo.model.*`` are left to Hydra and :func:`check_model_keys`.
    """
    schema = LanderConfig()
    top = sorted(LanderConfig.__dataclass_fields__)
    groups = {p.name for p in CONF_DIR.iterdir() if p.is_dir()}  # experiment=, hparams_search=, ...
    for override in overrides:
        if override.startswith(("~", "-")) or "=" not in override:
            continue
        key, value = override.lstrip("+").split("=", 1)
        parts = key.split(".")
        if parts[0] == "hydra" or "/" in key or key in groups:  # Hydra's own, and groups
            continue
        if not hasattr(schema, parts[0]):
            raise ConfigError(
                f"unknown key {key!r} in override {override!r}.{did_you_mean(parts[0], top + sorted(groups))} "
                f"Top-level keys are {', '.join(top)}{model_hint(key, value, overrides)}"
            )
        if parts[0] == "logger" and not override.startswith("+"):
            check_tracker_override(key, override, parts[1:])
            continue
        check_schema_path(schema, key, override)


def check_schema_path(schema: LanderConfig, key: str, override: str) -> None:
    """``key``'s path through the schema's dataclasses (``eval``, ``video``, ``env.normalize``, ``algo``, ...) names
    their fields only, with ``+`` too: Hydra adds any key with ``+``, and a key no dataclass has is read by nothing.
    Where the path reaches a free-form node (``algo.model``, ``env.kwargs``, ``callbacks``, ``logger``) the node's
    own check judges it (the model class's parameters, the env's arguments, the target's)."""
    unknown = unknown_schema_key(schema, key)
    if unknown is not None:
        part, known, where = unknown
        raise ConfigError(
            f"unknown key {key!r} in override {override!r}.{did_you_mean(part, known)} "
            f"Keys of {where} are {', '.join(known)}"
        )


def unknown_schema_key(schema: Any, key: str) -> tuple[str, list[str], str] | None:
    """Where ``key``'s path through the schema's dataclasses names no field: ``(the part, the fields there, the
    path to them)``; None where every part is a field, or the path reaches a free-form node first."""
    parts, node = key.split("."), schema
    for depth, part in enumerate(parts):
        if not is_dataclass(node):
            return None
        if not hasattr(node, part):
            return part, sorted(f.name for f in fields(node)), ".".join(parts[:depth])
        node = getattr(node, part)
    return None


def unknown_key_in_file(key: str) -> str:
    """An unknown ``key`` a config file of the user's sets (a preset's ``eval.episods``; Hydra says only that it is
    not in ``EvalConfig``): the closest keys and those that exist, as for one on the command line."""
    unknown = unknown_schema_key(LanderConfig(), key)
    group = key.split(".")[0]
    if (CONF_DIR / group).is_dir() and group not in LanderConfig.__dataclass_fields__:  # under experiment.*
        return (
            f"its keys are put under {group!r}, a key no config has: a file of conf/{group}/ that sets the run's "
            "keys begins with the line '# @package _global_', as lander's own do"
        )
    if unknown is None:
        return f"unknown key {key!r}"
    part, known, where = unknown
    listed = f"Keys of {where} are" if where else "Top-level keys are"
    return f"unknown key {key!r}.{did_you_mean(part, known)} {listed} {', '.join(known)}"


def model_hint(key: str, value: str, overrides: list[str]) -> str:
    """Where an unknown top-level key may be meant for the algorithm: the model class's parameter of that name or
    the closest ones (``algo.model.learning_rate=...``); '' when it has none close (imports SB3: an error path)."""
    algo = next((o.split("=", 1)[1] for o in reversed(overrides) if o.startswith("algo=")), "ppo")
    path = CONF_DIR / "algo" / f"{algo}.yaml"
    target = ((yaml.safe_load(path.read_text()) or {}).get("model") or {}).get("_target_") if path.is_file() else None
    known = model_parameters(str(target)) if target else None
    if not known:
        return ""
    if key in known:
        return f"; algorithm hyperparameters go under algo.model (algo.model.{key}={value})"
    close = did_you_mean(key, known).replace("'", "'algo.model.", 1).replace(" or '", " or 'algo.model.")
    return f"; for algo={algo}:{close}" if close else ""


def tracker_keys() -> dict[str, list[str]]:
    """The trackers lander's ``conf/logger/*.yaml`` define (``wandb``, ``tensorboard``), with their keys."""
    found: dict[str, list[str]] = {}
    for path in sorted((CONF_DIR / "logger").glob("*.yaml")):
        for name, node in (yaml.safe_load(path.read_text()) or {}).items():
            if isinstance(node, dict) and "_target_" in node:
                found[str(name)] = sorted(k for k in node if not str(k).startswith("_"))
    return found


def check_tracker_override(key: str, override: str, parts: list[str]) -> None:
    """``logger.<tracker>.<key>=...``: a tracker lander defines and one of its keys (a tracker of your own, in
    ``./conf/logger``, is checked against its class when the run builds it)."""
    trackers = tracker_keys()
    options = ", ".join(f"logger={name}" for name in group_options("logger"))
    if len(parts) == 1 and parts[0] in trackers:
        raise ConfigError(
            f"{override!r}: trackers are chosen with the logger group ({options}), e.g. logger=wandb_tensorboard "
            "for W&B and TensorBoard"
        )
    if len(parts) == 1:
        keys = [f"logger.{name}.{k}" for name, ks in trackers.items() for k in ks]
        raise ConfigError(
            f"unknown key {key!r} in override {override!r}: logger holds one node per tracker ({options}), so a "
            f"tracker's keys are logger.<tracker>.<key>.{did_you_mean(key, keys)} Keys: {', '.join(keys)}"
        )
    if parts[0] in trackers and len(parts) == 2 and parts[1] not in trackers[parts[0]]:
        known = trackers[parts[0]]
        raise ConfigError(
            f"unknown key {key!r} in override {override!r}.{did_you_mean(parts[1], known)} "
            f"Keys of logger.{parts[0]} are {', '.join(known) or 'none'}"
        )


def import_target(target: str, key: str, class_only: bool = True) -> Any:
    """The class (or, not ``class_only``, any object: a wrapper may be a function) ``target`` names, imported as
    Hydra imports a ``_target_``, its own log of a failure silenced: the one line says it.

    :param key: the config key that names it, for the message
    :raises ConfigError: naming ``key`` and the error underneath, where it cannot be imported (as a class)
    """
    hydra_log = logging.getLogger("hydra.utils")
    level = hydra_log.level
    hydra_log.setLevel(logging.CRITICAL)
    try:
        return get_class(target) if class_only else get_object(target)
    except (ImportError, ValueError) as exc:  # not found, its module failed, or not a class
        kind = " as a class" if class_only else ""
        raise ConfigError(f"{key}={target!r} cannot be imported{kind} ({root_cause(exc)})") from None
    finally:
        hydra_log.setLevel(level)


def model_parameters(target: str) -> list[str] | None:
    """The keyword parameters of the model class ``target``, following ``**kwargs`` up its base classes
    (MAC's go on to A2C's); ``[]`` for a class with no ``__init__`` of its own or its bases' (``object``'s
    takes nothing); None if the chain ends open (``**kwargs`` that reach no base class's ``__init__``: the class may
    keep them) or the class cannot be imported."""
    try:
        classes = get_class(target).__mro__
    except (ImportError, ValueError):
        return None  # Hydra reports a target it cannot import when it instantiates it
    names: list[str] = []
    for cls in classes:
        if cls is object:  # reached through **kwargs (open), or with no __init__ on the way (takes nothing)
            return None if any("__init__" in vars(c) for c in classes[:-1]) else []
        if "__init__" not in vars(cls):
            continue
        parameters = list(inspect.signature(vars(cls)["__init__"]).parameters.values())
        names += [p.name for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD or p.kind == p.KEYWORD_ONLY]
        if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters):
            return sorted(n for n in set(names) - {"self", "env"} if not n.startswith("_"))
    return None


def check_model_keys(cfg: DictConfig) -> None:
    """Every ``algo.model.*`` key must be a parameter of the model class (``algo.model._target_``)."""
    check_keys("algo.model", cfg.algo.model, model_parameters(str(cfg.algo.model.get("_target_", ""))))


SB3_GIVES = ("observation_space", "action_space", "lr_schedule")  # a policy's parameters its algorithm passes itself


def check_policy_kwargs(cfg: DictConfig) -> None:
    """Every key of ``algo.model.policy_kwargs`` is a parameter of the policy class ``algo.model.policy`` names for
    the model class (SB3's ``policy_aliases``: A2C's ``MlpPolicy`` is ``ActorCriticPolicy``), and a class SB3 calls
    (``activation_fn``, ``optimizer_class``, ``features_extractor_class``) is given as a class, not its name: each
    made the run's directory and failed there at 0 timesteps with Hydra's traceback ("ActorCriticPolicy.__init__()
    got an unexpected keyword argument 'net_archs'"; "'str' object is not callable")."""
    kwargs = cfg.algo.model.get("policy_kwargs")
    if not isinstance(kwargs, DictConfig):
        return
    for key in map(str, kwargs):
        value = kwargs.get(key)
        if (key == "activation_fn" or key.endswith("_class")) and isinstance(value, str):
            raise ConfigError(
                f"algo.model.policy_kwargs.{key}={value!r} is a name, and SB3 calls a class there: give the class, "
                f"algo.model.policy_kwargs.{key}={{_target_: hydra.utils.get_class, path: {value}}}"
            )
    model = import_target(str(cfg.algo.model._target_), "algo.model._target_")
    policy = cfg.algo.model.get("policy")
    policy_class = getattr(model, "policy_aliases", {}).get(policy) if isinstance(policy, str) else None
    if policy_class is None:  # a policy class of one's own, given by its path: Hydra builds it, and says
        return
    target = f"{policy_class.__module__}.{policy_class.__qualname__}"
    known = model_parameters(target)
    if known is None:
        return
    known = [k for k in known if k not in SB3_GIVES]
    for key in map(str, kwargs):
        if key not in known:
            raise ConfigError(
                f"unknown key 'algo.model.policy_kwargs.{key}': {target} (algo={cfg.algo.name}'s {policy}) takes "
                f"no parameter {key!r}.{did_you_mean(key, known)} Its parameters are {', '.join(known)}"
            )


def check_tracker_keys(cfg: DictConfig) -> None:
    """No tracker's node is nested below a ``logger`` node (it built nothing), and every key of a tracker's node
    (``logger.<name>``) must be a parameter of its class. Importing a class runs
    code: where the service started the run (:func:`lander.config.trust.allowed_prefixes`), only lander's own are
    imported here; another is checked when the run builds it, after :func:`lander.config.trust.check_trusted`."""
    for key, node in (cfg.get("logger") or {}).items():  # settings of a tracker not chosen build nothing, but
        if not isinstance(node, DictConfig) or "_target_" in node:  # trackers nested a level down built nothing,
            continue  # without a word
        nested = [f"logger.{key}.{k!s}" for k, v in node.items() if isinstance(v, DictConfig) and "_target_" in v]
        if nested:
            raise ConfigError(
                f"{nested[0]} names a tracker a level below logger: logger holds the trackers' nodes themselves, "
                f"logger.<tracker>: {{_target_: module.Class, its arguments}} (lander/conf/logger/tensorboard.yaml)"
            )
    from_terminal = allowed_prefixes() is None
    for key, node in tracker_nodes(cfg).items():
        if from_terminal or str(node._target_).startswith("lander."):
            import_target(str(node._target_), f"logger.{key}._target_")  # the run failed at 0 timesteps
            check_keys(f"logger.{key}", node, model_parameters(str(node._target_)))


def check_callback_keys(cfg: DictConfig) -> None:
    """Each of ``callbacks`` can be built: a node ``{_target_: module.Class, ...}`` whose class imports (your module,
    from this directory) and is an SB3 ``BaseCallback``, given only keys it takes and each one it needs. Checked
    before anything is made, with every job of a sweep: each job made its directory and failed as it built the
    callback. Where the service started the run, only lander's own classes are imported here
    (:func:`lander.config.trust.allowed_prefixes`); the run checks the others as it builds them."""
    from_terminal = allowed_prefixes() is None
    for name, node in (cfg.get("callbacks") or {}).items():
        where = f"callbacks.{name}"
        if not isinstance(node, DictConfig) or "_target_" not in node:
            raise ConfigError(
                f"{where}={OmegaConf.to_container(node) if isinstance(node, DictConfig) else node!r}: a callback is "
                f"a node {{_target_: module.Class, its arguments}} (+{where}._target_=module.Class)"
            )
        target = str(node._target_)
        if not (from_terminal or target.startswith("lander.")):
            continue
        cls = import_target(target, f"{where}._target_")
        from stable_baselines3.common.callbacks import BaseCallback  # SB3 and torch: only where one is imported

        if not issubclass(cls, BaseCallback):
            raise ConfigError(f"{where}._target_={target!r} is a class, not a stable_baselines3 BaseCallback")
        check_keys(where, node, model_parameters(target))
        if "_args_" in node or node.get("_partial_"):
            continue
        needed = [
            p.name
            for p in inspect.signature(cls).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in node
        ]
        if needed:
            raise ConfigError(
                f"{where}: {target} needs {', '.join(map(repr, needed))}, which it is not given: "
                f"add +{where}.{needed[0]}=<value>"
            )
        check_scalar_types(where, cls, node)


SCALARS: dict[type, tuple[type, ...]] = {int: (int,), float: (int, float), bool: (bool,), str: (str,)}


def check_scalar_types(where: str, cls: type, node: DictConfig) -> None:
    """Each value of ``node`` whose parameter of ``cls`` is annotated a plain ``int``, ``float``, ``bool`` or
    ``str`` (or one of them or None) is of that type: ``max_episodes=many`` failed in the run, at its first step
    (``'<' not supported between instances of 'int' and 'str'``). Annotations that cannot be read, or of other
    types, are left to the class."""
    try:
        hints = typing.get_type_hints(cls.__init__)  # type: ignore[misc]  # the class's, as it is built
    except Exception:  # a name the annotations use that cannot be found: nothing to judge by
        return
    for key in map(str, node):
        hint = hints.get(key)
        if hint is None or OmegaConf.is_interpolation(node, key):
            continue
        value = node[key]
        allowed = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        if value is None and type(None) in allowed:
            continue
        kinds = [k for k in allowed if k in SCALARS]
        if len(kinds) != len([k for k in allowed if k is not type(None)]):  # another type among them: not judged
            continue
        fits = any(isinstance(value, SCALARS[k]) and (k is bool or not isinstance(value, bool)) for k in kinds)
        if not fits:
            names = " or ".join(k.__name__ for k in kinds) + (" or None" if type(None) in allowed else "")
            raise ConfigError(f"{where}.{key}={value!r} is not allowed: {cls.__name__} takes {names} there")


def check_keys(where: str, node: DictConfig, known: list[str] | None) -> None:
    """Every key of the ``_target_`` node ``where`` must be one of the ``known`` parameters of its class
    (Hydra's keys ``_target_``, ``_partial_``, ... aside); None: the class takes any."""
    if known is None:
        return
    for key in map(str, node):
        if not key.startswith("_") and key not in known:
            raise ConfigError(
                f"unknown key '{where}.{key}': {node._target_} takes no parameter {key!r}."
                f"{did_you_mean(key, known)} "
                + (f"Its parameters are {', '.join(sorted(known))}" if known else "It takes none")
            )
