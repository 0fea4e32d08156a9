"""Evaluation on fixed seeds, batched over several envs, and summary statistics.

Episode ``i`` of an evaluation always starts from ``env.reset(seed=base_seed + i)``, so every
configuration, training seed and evaluation point is scored on the same episodes. Up to
``n_envs`` episodes run side by side and the policy is called once per step for all of them,
which is several times faster than SB3's one-episode-at-a-time ``evaluate_policy`` on a CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm


@dataclass
class EvalResult:
    """Returns and lengths of evaluation episodes, in seed order."""

    returns: list[float]
    lengths: list[int]
    seeds: list[int]
    threshold: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def stats(self) -> dict[str, float | int | None]:
        """Mean, std, standard error, median, min, max, n and success rate of the returns."""
        r = np.asarray(self.returns, dtype=np.float64)
        n = len(r)
        std = float(r.std(ddof=1)) if n > 1 else 0.0
        out: dict[str, float | int | None] = {
            "n": n,
            "mean": float(r.mean()),
            "std": std,
            "sem": std / np.sqrt(n) if n > 1 else 0.0,
            "median": float(np.median(r)),
            "min": float(r.min()),
            "max": float(r.max()),
            "mean_length": float(np.mean(self.lengths)),
        }
        out["success_rate"] = float(np.mean(r >= self.threshold)) if self.threshold is not None else None
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record: the statistics and every episode."""
        episodes = [
            {"seed": s, "return": float(r), "length": int(n)}
            for s, r, n in zip(self.seeds, self.returns, self.lengths, strict=True)
        ]
        return {**self.stats(), "threshold": self.threshold, "episodes": episodes, **self.extra}


def evaluate(
    model: BaseAlgorithm,
    env_fn: Callable[[], gym.Env],
    n_episodes: int,
    base_seed: int,
    n_envs: int = 10,
    deterministic: bool = True,
    threshold: float | None = None,
    obs_transform: Callable[[np.ndarray], np.ndarray] | None = None,
    envs: list[gym.Env] | None = None,
) -> EvalResult:
    """Run ``n_episodes`` episodes with seeds ``base_seed + i``, ``n_envs`` at a time.

    :param model: the SB3 model whose ``predict`` chooses the actions
    :param env_fn: makes one evaluation env (called at most ``n_envs`` times, unless ``envs`` is given)
    :param n_episodes: number of episodes
    :param base_seed: seed of episode 0
    :param n_envs: episodes run side by side
    :param deterministic: greedy/mean actions if True
    :param threshold: return counted as success in ``success_rate``
    :param obs_transform: applied to the stacked observations before ``predict`` (e.g. VecNormalize's)
    :param envs: reusable envs (the evaluation callback keeps them between evaluations)

    Sampled actions (``deterministic=False``) come from torch's and NumPy's generators seeded with ``base_seed``
    for the evaluation and restored after it (:func:`seeded_sampling`): the same episodes every time, and
    training's own random streams untouched by them.
    """
    with seeded_sampling(model, base_seed, deterministic):
        return play(model, env_fn, n_episodes, base_seed, n_envs, deterministic, threshold, obs_transform, envs)


@contextmanager
def seeded_sampling(model: BaseAlgorithm, seed: int, deterministic: bool) -> Iterator[None]:
    """For sampled actions, the generators ``predict`` draws from (torch's, on the CPU and the model's GPU, and
    NumPy's global one: DQN's epsilon-greedy) seeded with ``seed`` inside and restored after; nothing for
    deterministic ones, which draw no random numbers."""
    if deterministic:
        yield
        return
    devices = [model.device.index or 0] if model.device.type == "cuda" else []
    numpy_state = np.random.get_state()
    try:
        with th.random.fork_rng(devices=devices):
            th.manual_seed(seed)
            np.random.seed(seed % 2**32)
            yield
    finally:
        np.random.set_state(numpy_state)


def play(
    model: BaseAlgorithm,
    env_fn: Callable[[], gym.Env],
    n_episodes: int,
    base_seed: int,
    n_envs: int,
    deterministic: bool,
    threshold: float | None,
    obs_transform: Callable[[np.ndarray], np.ndarray] | None,
    envs: list[gym.Env] | None,
) -> EvalResult:
    """The episodes of :func:`evaluate`, with its parameters, drawing from torch's generators as they stand."""
    envs = envs if envs is not None else [env_fn() for _ in range(min(n_envs, n_episodes))]
    seeds = [base_seed + i for i in range(n_episodes)]
    returns, lengths = [0.0] * n_episodes, [0] * n_episodes
    pending = list(range(n_episodes))
    slots: list[tuple[int, gym.Env, np.ndarray]] = []  # (episode index, env, last observation)

    for env in envs[:n_episodes]:
        episode = pending.pop(0)
        slots.append((episode, env, env.reset(seed=seeds[episode])[0]))
    while slots:
        obs = stack([o for _, _, o in slots])
        actions, _ = model.predict(obs_transform(obs) if obs_transform else obs, deterministic=deterministic)
        running = []
        for (episode, env, _), action in zip(slots, actions, strict=True):
            obs_i, reward, terminated, truncated, _ = env.step(action)
            returns[episode] += float(reward)
            lengths[episode] += 1
            if terminated or truncated:
                if pending:  # this env starts the next episode waiting for a slot
                    episode = pending.pop(0)
                    running.append((episode, env, env.reset(seed=seeds[episode])[0]))
            else:
                running.append((episode, env, obs_i))
        slots = running
    return EvalResult(returns=returns, lengths=lengths, seeds=seeds, threshold=threshold)


def stack(observations: list[Any]) -> Any:
    """``[N, *shape]``: N observations as one batch for ``predict``; dict observations (SB3's ``MultiInputPolicy``)
    as a dict of such arrays, one a key, as SB3's VecEnvs give them."""
    if isinstance(observations[0], dict):
        return {key: np.stack([o[key] for o in observations]) for key in observations[0]}
    return np.stack(observations)


def record_episode(
    model: BaseAlgorithm,
    env: gym.Env,
    seed: int,
    on_frame: Callable[[np.ndarray], None],
    max_steps: int = 1000,
    deterministic: bool = True,
    obs_transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[int, float]:
    """Play one episode in an ``rgb_array`` env, handing each frame to ``on_frame`` as it is rendered.

    Frames are not kept: a 1,000-step LunarLander episode is 720 MB of frames.

    :param model: the SB3 model
    :param env: an env made with ``render_mode="rgb_array"``
    :param seed: the episode's reset seed
    :param on_frame: receives every frame (e.g. a video writer's ``append_data``)
    :param max_steps: stop after this many steps
    :param deterministic: greedy/mean actions if True
    :param obs_transform: applied to the observation before ``predict``
    :return: the number of frames and the episode's return
    """
    obs, _ = env.reset(seed=seed)
    on_frame(np.asarray(env.render()))  # render_mode="rgb_array": one frame
    frames, total = 1, 0.0
    for _ in range(max_steps):
        batch = stack([obs])
        action, _ = model.predict(obs_transform(batch) if obs_transform else batch, deterministic=deterministic)
        obs, reward, terminated, truncated, _ = env.step(action[0])
        total += float(reward)
        on_frame(np.asarray(env.render()))
        frames += 1
        if terminated or truncated:
            break
    return frames, total
