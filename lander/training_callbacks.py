"""The callbacks of a training run: lander's, in the order they must run, and the user's (``callbacks``)."""

from __future__ import annotations

from functools import partial
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig
from stable_baselines3.common.callbacks import BaseCallback

from lander.callbacks import EpisodeLogger
from lander.config import ConfigError
from lander.envs import make_env
from lander.eval_callback import PeriodicEval
from lander.monitoring import NonFiniteGuard, ResourceMonitor
from lander.rundir import RunPaths
from lander.stopping import StopOnEpisodes, StopOnPlateau, StopOnReward, StopRule


def user_callbacks(cfg: DictConfig) -> list[BaseCallback]:
    """The ``callbacks`` config's SB3 callbacks, built with ``hydra.utils.instantiate`` in the order given."""
    built = []
    for name, node in (cfg.get("callbacks") or {}).items():
        try:
            callback = instantiate(node)
        except InstantiationException as exc:
            raise ConfigError(f"callbacks.{name} cannot be built: {str(exc).splitlines()[0]}") from exc
        if not isinstance(callback, BaseCallback):
            raise ConfigError(
                f"callbacks.{name}: {node.get('_target_')} is a {type(callback).__name__}, "
                "not a stable_baselines3 BaseCallback"
            )
        built.append(callback)
    return built


def callbacks_for(
    cfg: DictConfig, paths: RunPaths, sinks: list[Any], total_timesteps: int
) -> tuple[PeriodicEval, list[StopRule], list[BaseCallback]]:
    """Lander's callbacks in order: guard, episodes, episode budget, evaluation with its stop rules, monitor."""
    rules: list[StopRule] = []
    if cfg.early_stop.reward_threshold is not None:
        rules.append(StopOnReward(cfg.early_stop.reward_threshold))
    if cfg.early_stop.patience is not None:
        rules.append(StopOnPlateau(cfg.early_stop.patience))
    evaluator = PeriodicEval(
        cfg.eval.freq,
        partial(make_env, cfg.env),
        cfg.eval.episodes,
        cfg.eval.seed,
        cfg.eval.n_envs,
        paths,
        cfg.env.reward_threshold,
        cfg.eval.deterministic,
        sinks,
        final_at=total_timesteps if cfg.final_eval else None,
        after_eval=list(rules),
    )
    episodes = EpisodeLogger(paths.train_episodes, sinks)
    callbacks: list[BaseCallback] = [NonFiniteGuard(), episodes]  # the guard first: nothing NaN is saved
    if cfg.max_episodes is not None:
        rules.append(StopOnEpisodes(cfg.max_episodes, lambda: episodes.episodes))
        callbacks.append(rules[-1])
    callbacks.append(evaluator)
    if cfg.monitor_freq > 0:
        callbacks.append(ResourceMonitor(cfg.monitor_freq, paths.resources, lambda: episodes.episodes, sinks))
    return evaluator, rules, callbacks
