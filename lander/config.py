"""Value checks of a composed config, before anything is trained.

The schema (:mod:`lander.schema`) gives every key a type, so Hydra rejects ``seed=abc`` or an unknown key;
:func:`validate` checks what a type cannot express (ranges, algorithm/env compatibility), naming the key
and the allowed values.
"""

from __future__ import annotations

import netrc
import os
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from omegaconf import DictConfig, OmegaConf

from lander.schema import ACTION_SPACES, OBSERVATION_SPACES, EnvConfig, LanderConfig

CONF_DIR = Path(__file__).resolve().parent / "conf"


class ConfigError(ValueError):
    """A configuration value that cannot be run; the message names the key and the allowed values."""


def check_override_keys(overrides: list[str]) -> None:
    """Reject an unknown key in command-line overrides, listing the keys that exist.

    Hydra rejects it too, but without naming the allowed keys; this runs before Hydra composes.
    Keys with ``+``/``~``/``++``, Hydra's own (``hydra.*``, ``--flags``) and ``algo.*`` are left to Hydra.
    """
    schema = LanderConfig()
    for override in overrides:
        if override.startswith(("+", "~", "-")) or "=" not in override:
            continue
        key, value = override.split("=", 1)
        parts = key.split(".")
        groups = {p.name for p in CONF_DIR.iterdir() if p.is_dir()}  # experiment=, hparams_search=, ...
        if parts[0] in ("hydra", "algo") or "/" in key or key in groups:  # Hydra's, free-form algo.model, groups
            continue
        if not hasattr(schema, parts[0]):
            raise ConfigError(f"unknown key {key!r} in override {override!r}: top-level keys are "
                              f"{', '.join(sorted(LanderConfig.__dataclass_fields__))}; algorithm hyperparameters "
                              f"go under algo.model (e.g. algo.model.{key}={value})")
        node = getattr(schema, parts[0])
        if len(parts) == 2 and is_dataclass(node) and not hasattr(node, parts[1]):
            raise ConfigError(f"unknown key {key!r} in override {override!r}: keys of {parts[0]} are "
                              f"{', '.join(sorted(type(node).__dataclass_fields__))}")


def group_options(group: str) -> list[str]:
    """The options of a config group, read from ``lander/conf/<group>/*.yaml``."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def compatible_envs(algo_cfg: DictConfig) -> list[str]:
    """Names of the ``env`` group options whose action and observation spaces the algorithm supports."""
    names = []
    for option in group_options("env"):
        env_cfg = OmegaConf.merge(OmegaConf.structured(EnvConfig), OmegaConf.load(CONF_DIR / "env" / f"{option}.yaml"))
        if env_cfg.action_space in algo_cfg.action_spaces and env_cfg.observation_space in algo_cfg.observation_spaces:
            names.append(option)
    return names


def _check(ok: bool, key: str, value: Any, allowed: str) -> None:
    if not ok:
        raise ConfigError(f"{key}={value!r} is not allowed: {key} must be {allowed}")


def validate(cfg: DictConfig) -> None:
    """Check values a type cannot express; raise :class:`ConfigError` naming the key.

    :param cfg: the composed run config
    """
    _check(cfg.gamma is None or 0.0 < cfg.gamma <= 1.0, "gamma", cfg.gamma, "null or in (0, 1]")
    _check(cfg.total_timesteps is None or cfg.total_timesteps > 0, "total_timesteps", cfg.total_timesteps,
           "null (the algorithm's budget) or a positive integer")
    _check(cfg.n_envs is None or cfg.n_envs >= 1, "n_envs", cfg.n_envs, "null or an integer >= 1")
    _check(cfg.algo.total_timesteps > 0, "algo.total_timesteps", cfg.algo.total_timesteps, "a positive integer")
    _check(cfg.algo.n_envs >= 1, "algo.n_envs", cfg.algo.n_envs, "an integer >= 1")
    _check(cfg.eval.episodes >= 1, "eval.episodes", cfg.eval.episodes, "an integer >= 1")
    _check(cfg.eval.n_envs >= 1, "eval.n_envs", cfg.eval.n_envs, "an integer >= 1")
    _check(cfg.eval.freq >= 0, "eval.freq", cfg.eval.freq, "0 (off) or a positive number of timesteps")
    _check(cfg.checkpoint_freq >= 0, "checkpoint_freq", cfg.checkpoint_freq, "0 (off) or a positive integer")
    _check(cfg.max_episodes is None or cfg.max_episodes >= 1, "max_episodes", cfg.max_episodes,
           "null (no episode budget) or an integer >= 1")
    _check(cfg.monitor_freq >= 0, "monitor_freq", cfg.monitor_freq, "0 (off) or a positive number of timesteps")
    _check(cfg.early_stop.patience is None or cfg.early_stop.patience >= 1, "early_stop.patience",
           cfg.early_stop.patience, "null (off) or an integer >= 1")
    _check(cfg.checkpoint_keep >= 0, "checkpoint_keep", cfg.checkpoint_keep, "0 (keep all) or a positive integer")
    _check(cfg.torch_threads >= 0, "torch_threads", cfg.torch_threads, "0 (torch's default) or an integer >= 1")
    _check(cfg.vec_env in ("dummy", "subproc"), "vec_env", cfg.vec_env, "one of: dummy, subproc")
    _check(cfg.device in ("auto", "cpu") or cfg.device.startswith(("cuda", "mps")), "device", cfg.device,
           "one of: auto, cpu, cuda, cuda:N, mps")
    _check(cfg.comparison_band in ("seeds", "episodes"), "comparison_band", cfg.comparison_band,
           "one of: seeds, episodes")
    _check(cfg.logger.backend in ("wandb", "none"), "logger.backend", cfg.logger.backend, "one of: wandb, none")
    _check(cfg.logger.mode in ("offline", "online", "disabled"), "logger.mode", cfg.logger.mode,
           "one of: offline, online, disabled")
    _check(cfg.env.action_space in ACTION_SPACES, "env.action_space", cfg.env.action_space,
           f"one of: {', '.join(ACTION_SPACES)}")
    _check(cfg.env.observation_space in OBSERVATION_SPACES, "env.observation_space", cfg.env.observation_space,
           f"one of: {', '.join(OBSERVATION_SPACES)}")
    _check("_target_" in cfg.algo.model, "algo.model._target_", None, "the import path of the model class")
    for kind, env_kind, algo_kinds in (("action", cfg.env.action_space, cfg.algo.action_spaces),
                                       ("observation", cfg.env.observation_space, cfg.algo.observation_spaces)):
        if env_kind not in algo_kinds:
            fitting = compatible_envs(cfg.algo)
            raise ConfigError(
                f"algo={cfg.algo.name} cannot act in env={cfg.env.name}: {cfg.algo.name} supports "
                f"{'/'.join(algo_kinds)} {kind} spaces and {cfg.env.name} has a {env_kind} one. "
                f"Envs it supports: {', '.join(fitting) or 'none configured'} "
                f"(for example: python -m lander.run algo={cfg.algo.name} env={fitting[0] if fitting else '...'})"
            )


def has_api_key() -> bool:
    """True if a W&B API key is in ``WANDB_API_KEY`` or in the netrc file ``wandb login`` writes."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    path = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return bool(path.is_file() and netrc.netrc(path).authenticators(host or ""))
    except (OSError, netrc.NetrcParseError):
        return False


def check_logger(cfg: DictConfig) -> None:
    """Fail before training when online logging cannot work (no API key)."""
    if cfg.logger.backend == "wandb" and cfg.logger.mode == "online" and not has_api_key():
        raise ConfigError(
            "logger.mode=online needs a W&B API key: set WANDB_API_KEY or run `wandb login`; "
            "or use logger.mode=offline (the default; `wandb sync` uploads later) or logger=none"
        )
