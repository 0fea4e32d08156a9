"""What lander offers, as data: its algorithms, envs and presets (``lander/conf/<group>/*.yaml``, and the user's
``./conf/experiment/`` beside them) and every key of the run config with its type, default and meaning.

The service answers ``/api/algos``, ``/api/envs``, ``/api/presets`` and ``/api/config`` with these, and its launch
form offers their choices. Everything is read from the YAML files as text (``OmegaConf.load``, no resolver runs, no
``_target_`` is imported), so nothing here executes what a config names.
"""

from __future__ import annotations

import types
import typing
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from lander.config.checks import CHOICES, MINIMA
from lander.config.reference import rows
from lander.config.schema import ACTION_SPACES, CONF_DIR, OBSERVATION_SPACES, LanderConfig, group_options
from lander.storage.yamlfile import check_aliases

MAX_PRESET_BYTES = 1_000_000


def _load(path: Path) -> DictConfig:
    text = path.read_text()
    check_aliases(text, path.name)
    cfg = OmegaConf.create(text)
    return cfg if isinstance(cfg, DictConfig) else OmegaConf.create({})


def _plain(value: Any) -> Any:
    """A config value as JSON: interpolations (``${env.policy}``) as their text, never resolved."""
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=False)
    return value


def _description(path: Path) -> str:
    """The comment lines at the top of a YAML file (``# @package`` aside), joined."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith("# @package"):
            lines.append(line.lstrip("# ").rstrip())
    return " ".join(line for line in lines if line)


def acts_in(algo: DictConfig, env: DictConfig) -> bool:
    """Whether ``algo`` (an ``algo`` group option) supports ``env``'s (an ``env`` option) action and observation
    spaces, as :func:`lander.config.checks.check_compatible` checks before training."""
    actions = algo.get("action_spaces", list(ACTION_SPACES))
    observations = algo.get("observation_spaces", list(OBSERVATION_SPACES))
    return env.get("action_space") in actions and env.get("observation_space") in observations


def options(group: str) -> dict[str, DictConfig]:
    """The options of a config group, by name, as written."""
    return {name: _load(CONF_DIR / group / f"{name}.yaml") for name in group_options(group)}


def algos(mine: dict[str, dict[str, DictConfig]] | None = None, user_conf: Path | None = None) -> list[dict[str, Any]]:
    """Each algorithm: ``name``, the model class (``target``), the spaces it acts in, its tuned ``n_envs`` and
    ``total_timesteps``, its ``model`` keys as written, the ``envs`` it acts in, and whether it is ``mine``.

    :param mine: the root's own options by group (``algo``, ``env``), each composed (its ``defaults`` applied)
    :param user_conf: the root's ``conf/``, where their files are (their descriptions)
    """
    mine = mine or {}
    envs = options("env") | mine.get("env", {})
    found = []
    for name, cfg in (options("algo") | mine.get("algo", {})).items():
        model = _plain(cfg.get("model", {}))
        folder = user_conf if user_conf is not None and name in mine.get("algo", {}) else CONF_DIR
        found.append(
            {
                "name": name,
                "mine": folder != CONF_DIR,
                "description": _description(folder / "algo" / f"{name}.yaml"),
                "target": model.get("_target_"),
                "action_spaces": _plain(cfg.get("action_spaces", list(ACTION_SPACES))),
                "observation_spaces": _plain(cfg.get("observation_spaces", list(OBSERVATION_SPACES))),
                "n_envs": cfg.get("n_envs"),
                "total_timesteps": cfg.get("total_timesteps"),
                "model": {k: v for k, v in model.items() if k != "_target_"},
                "envs": [env for env, env_cfg in envs.items() if acts_in(cfg, env_cfg)],
            }
        )
    return found


def envs(mine: dict[str, dict[str, DictConfig]] | None = None, user_conf: Path | None = None) -> list[dict[str, Any]]:
    """Each env: ``name``, Gymnasium ``id``, its spaces, policy, ``reward_threshold``, the ``algos`` that act in it,
    and whether it is ``mine`` (:func:`algos` says what ``mine`` and ``user_conf`` are)."""
    mine = mine or {}
    algo_options = options("algo") | mine.get("algo", {})
    found = []
    for name, cfg in (options("env") | mine.get("env", {})).items():
        folder = user_conf if user_conf is not None and name in mine.get("env", {}) else CONF_DIR
        found.append(
            {
                "name": name,
                "mine": folder != CONF_DIR,
                "description": _description(folder / "env" / f"{name}.yaml"),
                "id": cfg.get("id"),
                "action_space": cfg.get("action_space"),
                "observation_space": cfg.get("observation_space"),
                "policy": cfg.get("policy"),
                "reward_threshold": cfg.get("reward_threshold"),
                "algos": [algo for algo, algo_cfg in algo_options.items() if acts_in(algo_cfg, cfg)],
            }
        )
    return found


def _chosen(defaults: Any, group: str) -> str | None:
    """The option a preset's defaults list gives ``group`` (``- override /algo: ppo``), if any."""
    for entry in defaults if isinstance(defaults, list) else []:
        if isinstance(entry, dict):
            for key, value in entry.items():
                if str(key).split()[-1].strip("/") == group:
                    return str(value)
    return None


def presets(user_conf: Path | None = None) -> list[dict[str, Any]]:
    """Each experiment preset (``experiment=<name>``, lander's and those in ``user_conf/experiment``) and search
    (``hparams_search=<name>``): what it is, the ``algo`` and ``env`` it chooses (null: the default's), what it
    sweeps (``sweep``: key -> values), a search's ``trials`` (null for an experiment) and whether it is ``mine``
    (the user's)."""
    sources = [("experiment", CONF_DIR / "experiment", False), ("hparams_search", CONF_DIR / "hparams_search", False)]
    if user_conf is not None and (user_conf / "experiment").is_dir():
        sources.append(("experiment", user_conf / "experiment", True))
    found = []
    for group, folder, mine in sources:
        for path in sorted(folder.glob("*.yaml")):
            if mine and (path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_PRESET_BYTES):
                continue  # the user's folder may hold anything: only regular files of a preset's size are read
            try:
                raw = OmegaConf.to_container(_load(path), resolve=False)
            except Exception as exc:  # a user's preset that is not YAML: listed with why it cannot be used
                found.append({"name": path.stem, "group": group, "mine": mine, "error": str(exc).splitlines()[0]})
                continue
            assert isinstance(raw, dict)
            sweeper = (raw.get("hydra") or {}).get("sweeper") or {}
            params = sweeper.get("params") or {}
            found.append(
                {
                    "name": path.stem,
                    "group": group,
                    "override": f"{group}={path.stem}",
                    "description": _description(path),
                    "algo": _chosen(raw.get("defaults"), "algo"),
                    "env": _chosen(raw.get("defaults"), "env"),
                    "sweep": {str(k): str(v) for k, v in params.items()},
                    "trials": sweeper.get("n_trials") if isinstance(sweeper.get("n_trials"), int) else None,
                    "mine": mine,
                }
            )
    return found


def _type_name(hint: Any) -> str:
    """``int``, ``float | None``, ``str``, ``dict``...: a schema field's type as a client reads it."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in typing.get_args(hint) if a is not type(None)]
        return " | ".join(names) + (" | None" if type(None) in typing.get_args(hint) else "")
    origin = typing.get_origin(hint) or hint
    return str(getattr(origin, "__name__", hint))


def schema_types(schema: type = LanderConfig, prefix: str = "") -> dict[str, str]:
    """Dotted key -> type name of every leaf of the schema (groups left open: ``algo.model``, ``logger``)."""
    found: dict[str, str] = {}
    hints = typing.get_type_hints(schema)
    for item in fields(schema):
        hint = hints[item.name]
        if is_dataclass(hint):
            found |= schema_types(hint, f"{prefix}{item.name}.")  # type: ignore[arg-type]
        else:
            found[prefix + item.name] = _type_name(hint)
    return found


def config_keys() -> list[dict[str, Any]]:
    """Every key of ``lander/conf/config.yaml``: ``key``, ``type`` (from the schema), ``default`` (as written)
    and ``meaning`` (its comment); the config groups (``algo``, ``env``, ...) with their ``options``."""
    typed = schema_types()
    found = []
    for key, default, meaning in rows():
        group = (CONF_DIR / key).is_dir()
        entry: dict[str, Any] = {"key": key, "type": "group" if group else typed.get(key, "str"), "default": default}
        entry["meaning"] = meaning
        if group:
            entry["options"] = group_options(key)
        if key in CHOICES:
            entry["options"] = list(CHOICES[key])
        if key in MINIMA:
            entry["allowed"] = MINIMA[key][2]
        found.append(entry)
    return found
