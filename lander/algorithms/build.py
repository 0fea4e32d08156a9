"""Building a model from the ``algo`` config group with ``hydra.utils.instantiate``."""

from __future__ import annotations

import numpy as np
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import VecEnv


def normal_action_noise(n_actions: int, sigma: float = 0.1) -> NormalActionNoise:
    """Gaussian exploration noise with std ``sigma`` on each of ``n_actions`` dimensions."""
    return NormalActionNoise(mean=np.zeros(n_actions), sigma=sigma * np.ones(n_actions))


def effective_gamma(cfg: DictConfig) -> float:
    """Top-level ``gamma`` if set, else the algorithm's own (``algo.model.gamma``, SB3's default 0.99)."""
    if cfg.gamma is not None:
        return float(cfg.gamma)
    return float(cfg.algo.model.get("gamma", 0.99))


BATCHED_TARGETS = {  # SB3's class -> the same class on the batched engine (lander.algorithms.batched)
    "stable_baselines3.PPO": "lander.algorithms.batched.SideBySidePPO",
    "stable_baselines3.A2C": "lander.algorithms.batched.SideBySideA2C",
}


def batched(cfg: DictConfig) -> bool:
    """Whether the run trains on the batched engine (:mod:`lander.algorithms.batched`): side by side with other
    seeds in its process (``seeds_per_process`` > 1), or alone by choice (``batched_engine``); PPO and A2C."""
    chosen = int(cfg.get("seeds_per_process") or 1) > 1 or bool(cfg.get("batched_engine"))
    return chosen and str(cfg.algo.model._target_) in BATCHED_TARGETS


def model_target(cfg: DictConfig) -> str:
    """The model class's import path: ``algo.model._target_``, or on the batched engine (:func:`batched`) the same
    SB3 class whose networks are batched across seeds (:data:`BATCHED_TARGETS`)."""
    target = str(cfg.algo.model._target_)
    return BATCHED_TARGETS[target] if batched(cfg) else target


def model_class(cfg: DictConfig) -> type[BaseAlgorithm]:
    """The model class that trains this run (:func:`model_target`; used to load saved models)."""
    return get_class(model_target(cfg))


def build_model(cfg: DictConfig, env: VecEnv, seed: int) -> BaseAlgorithm:
    """Instantiate ``algo.model`` on ``env`` with the run's seed, device and gamma.

    :param cfg: the run config
    :param env: the training VecEnv
    :param seed: the run's seed
    """
    extra = {}
    if cfg.algo.model.get("action_noise") is not None:  # a partial, sized now that the action space is known
        extra["action_noise"] = instantiate(cfg.algo.model.action_noise)(
            n_actions=int(np.prod(env.action_space.shape or ()))
        )
    model: BaseAlgorithm = instantiate(
        cfg.algo.model,
        _target_=model_target(cfg),
        env=env,
        seed=seed,
        device=cfg.device,
        gamma=effective_gamma(cfg),
        verbose=0,
        _convert_="all",
        **extra,
    )
    return model
