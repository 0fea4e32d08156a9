"""Environment construction: seeded training VecEnvs and single envs for evaluation and video."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

# Rendering with render_mode="rgb_array" needs no screen; this keeps pygame from looking for one.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def env_kwargs(env_cfg: DictConfig) -> dict[str, Any]:
    """Keyword arguments for ``gymnasium.make`` from the ``env`` config group."""
    return OmegaConf.to_container(env_cfg.kwargs, resolve=True) or {}  # type: ignore[return-value]


def make_env(env_cfg: DictConfig, render_mode: str | None = None) -> gym.Env:
    """One un-seeded environment (the caller seeds it on ``reset``).

    :param env_cfg: the ``env`` config group
    :param render_mode: ``"rgb_array"`` for video, ``None`` otherwise
    """
    return gym.make(env_cfg.id, render_mode=render_mode, **env_kwargs(env_cfg))


def make_train_env(env_cfg: DictConfig, n_envs: int, seed: int, vec_env: str = "dummy") -> VecEnv:
    """Training envs wrapped in SB3's ``Monitor`` and seeded with ``seed, seed + 1, ...``.

    :param env_cfg: the ``env`` config group
    :param n_envs: number of parallel envs
    :param seed: seed of the first env
    :param vec_env: ``"dummy"`` (one process) or ``"subproc"`` (one process per env)
    """
    cls = SubprocVecEnv if vec_env == "subproc" else DummyVecEnv
    kwargs = {"start_method": "forkserver"} if vec_env == "subproc" else None
    return make_vec_env(env_cfg.id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs(env_cfg),
                        vec_env_cls=cls, vec_env_kwargs=kwargs)


def action_space_kind(space: gym.Space) -> str:
    """``"discrete"`` or ``"continuous"`` for an action space, as used by ``algo.action_spaces``."""
    return "discrete" if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) else "continuous"
