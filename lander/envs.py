"""Environment construction: seeded training VecEnvs and single envs for evaluation and video.

Every env is ``gymnasium.make(env.id, **env.kwargs)`` wrapped in ``env.wrappers`` (Hydra ``_target_``
configs, each called with the env as its first argument), so training, evaluation and video see
exactly the same observations. Ids of the form ``module:EnvId`` import ``module`` first
(``ale_py:PongNoFrameskip-v4`` registers the Atari games).
"""

from __future__ import annotations

import logging
import os
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecNormalize

# Rendering with render_mode="rgb_array" needs no screen: pygame gets a dummy display, MuJoCo renders with EGL.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("MUJOCO_GL", "egl")


class TupleToDiscrete(gym.ObservationWrapper):
    """Numbers a ``Tuple`` of ``Discrete`` observations as one ``Discrete`` (Blackjack's (sum, card, ace)).

    Tabular methods index their table with it; SB3's networks one-hot encode it.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not (isinstance(space, gym.spaces.Tuple) and all(isinstance(s, gym.spaces.Discrete) for s in space)):
            raise ValueError(f"TupleToDiscrete needs a Tuple of Discrete spaces, got {space}")
        self.sizes = tuple(int(s.n) for s in space)
        self.starts = tuple(int(s.start) for s in space)
        self.observation_space = gym.spaces.Discrete(int(np.prod(self.sizes)))

    def observation(self, observation: tuple[int, ...]) -> int:
        index = tuple(int(o) - start for o, start in zip(observation, self.starts, strict=True))
        return int(np.ravel_multi_index(index, self.sizes))


def route_mujoco_warnings(env_id: str) -> None:
    """Send MuJoCo's warnings to ``logging`` (MuJoCo otherwise appends them to ``MUJOCO_LOG.TXT`` in the cwd)."""
    try:
        entry_point = str(gym.spec(env_id).entry_point)
    except Exception:  # an id gymnasium cannot look up yet ("module:Id") is no MuJoCo env of gymnasium's
        return
    if "mujoco" in entry_point:
        import mujoco  # optional (gymnasium[mujoco]), 0.18 s: only for MuJoCo's envs

        mujoco.set_mju_user_warning(lambda text: logging.getLogger("mujoco").warning(text.strip()))


def env_kwargs(env_cfg: DictConfig) -> dict[str, Any]:
    """Keyword arguments for ``gymnasium.make``: ``env.kwargs``, with ``render_mode=None`` unless they set one.

    Envs that are never rendered must be made with ``render_mode=None``: SB3's ``make_vec_env`` otherwise
    asks for ``"rgb_array"``, and LunarLander then builds decorative Box2D particles on every engine
    firing (no effect on the physics, 2.5-5x the cost of a step: BENCHMARKS.md). ``env.kwargs.render_mode`` is honoured,
    so a run with rendering training envs can still be asked for (the test that rendering changes nothing).
    """
    kwargs: dict[str, Any] = OmegaConf.to_container(env_cfg.kwargs, resolve=True) or {}  # type: ignore[assignment]
    return {"render_mode": None} | kwargs


def apply_wrappers(env: gym.Env, wrappers: list[Any]) -> gym.Env:
    """Wrap ``env`` in each of ``wrappers`` (``_target_`` configs), first one innermost."""
    for wrapper in wrappers:
        env = instantiate(wrapper, env)
    return env


def make_env(env_cfg: DictConfig, render_mode: str | None = None) -> gym.Env:
    """One un-seeded, wrapped environment (the caller seeds it on ``reset``).

    :param env_cfg: the ``env`` config group
    :param render_mode: ``"rgb_array"`` for video (it wins over ``env.kwargs.render_mode``), ``None`` otherwise
    """
    route_mujoco_warnings(env_cfg.id)
    kwargs = env_kwargs(env_cfg) | ({"render_mode": render_mode} if render_mode else {})
    env = gym.make(env_cfg.id, **kwargs)
    return apply_wrappers(env, env_cfg.get("wrappers") or [])


def make_train_env(env_cfg: DictConfig, n_envs: int, seed: int, vec_env: str = "dummy") -> VecEnv:
    """Training envs wrapped in SB3's ``Monitor`` (true returns), then ``env.wrappers``; seeded ``seed, seed + 1, ...``.

    Made with ``render_mode=None`` (see :func:`env_kwargs`); SB3's ``make_vec_env`` would render by default.

    :param env_cfg: the ``env`` config group
    :param n_envs: number of parallel envs
    :param seed: seed of the first env
    :param vec_env: ``"dummy"`` (one process) or ``"subproc"`` (one process per env)
    """
    route_mujoco_warnings(env_cfg.id)
    cls = SubprocVecEnv if vec_env == "subproc" else DummyVecEnv
    kwargs = {"start_method": "forkserver"} if vec_env == "subproc" else None
    wrappers = OmegaConf.to_container(env_cfg.get("wrappers") or OmegaConf.create([]), resolve=True)
    assert isinstance(wrappers, list)
    return make_vec_env(
        env_cfg.id,
        n_envs=n_envs,
        seed=seed,
        env_kwargs=env_kwargs(env_cfg),
        vec_env_cls=cls,
        vec_env_kwargs=kwargs,
        wrapper_class=partial(apply_wrappers, wrappers=wrappers) if wrappers else None,
    )


def normalized(venv: VecEnv, normalize: DictConfig, gamma: float) -> VecEnv:
    """``venv`` inside SB3's ``VecNormalize`` as ``env.normalize`` says (``enabled: false``: ``venv`` itself).

    :param normalize: the ``env.normalize`` node
    :param gamma: the run's discount, for the discounted return when ``normalize.gamma`` is null
    """
    if not normalize.enabled:
        return venv
    return VecNormalize(
        venv,
        training=True,
        norm_obs=bool(normalize.norm_obs),
        norm_reward=bool(normalize.norm_reward),
        clip_obs=float(normalize.clip_obs),
        clip_reward=float(normalize.clip_reward),
        gamma=float(normalize.gamma if normalize.gamma is not None else gamma),
        epsilon=float(normalize.epsilon),
    )


def action_space_kind(space: gym.Space) -> str:
    """``"discrete"`` or ``"continuous"`` for an action space, as used by ``algo.action_spaces``."""
    return "discrete" if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) else "continuous"


def observation_space_kind(space: gym.Space) -> str:
    """``"discrete"``, ``"image"`` (uint8 with 3 dims) or ``"vector"``, as used by ``algo.observation_spaces``."""
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.Tuple)):
        return "discrete"
    if isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3:
        return "image"
    return "vector"
