"""Benchmark: env steps per CPU second with ``render_mode=None`` and ``"rgb_array"``, for every configured env.

SB3's ``make_vec_env`` makes ``"rgb_array"`` envs unless told otherwise; lander makes every env it does not
film with ``None``. This measures what that is worth per env, and checks that the observations and rewards
are the same both ways. LunarLander is stepped with gymnasium's own heuristic (landing) policy, whose
engine firings are what a learning agent produces; the others with random actions. The two modes are
alternated ``--reps`` times; the median is printed.

    python benchmarks/render_modes.py --reps 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import ale_py
import gymnasium as gym
import numpy as np
from gymnasium.envs.box2d.lunar_lander import heuristic

gym.register_envs(ale_py)
CASES = [
    ("LunarLander-v3", {}, "heuristic", 10_000),
    ("LunarLander-v3", {}, "random", 10_000),
    ("LunarLander-v3", {"continuous": True}, "random", 10_000),
    ("CartPole-v1", {}, "random", 10_000),
    ("FrozenLake-v1", {}, "random", 10_000),
    ("Blackjack-v1", {"sab": True}, "random", 10_000),
    ("HalfCheetah-v5", {}, "random", 3_000),
    ("PongNoFrameskip-v4", {}, "random", 3_000),
]


def steps_per_cpu_second(env_id: str, kwargs: dict, policy: str, mode: str | None, steps: int) -> tuple[float, int]:
    """Steps per CPU second, and a hash of every observation and reward (to compare the two modes)."""
    env = gym.make(env_id, render_mode=mode, **kwargs)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    trace, start = [], time.process_time()
    for i in range(steps):
        action = heuristic(env.unwrapped, obs) if policy == "heuristic" else env.action_space.sample()
        obs, reward, terminated, truncated, _ = env.step(action)
        trace.append((np.asarray(obs).tobytes(), float(reward)))
        if terminated or truncated:
            obs, _ = env.reset(seed=i)
    seconds = time.process_time() - start
    env.close()
    return steps / seconds, hash(tuple(trace))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print("| env (actions) | steps/CPU-s, rgb_array | steps/CPU-s, None | speed-up | same obs and rewards |")
    print("|---|---|---|---|---|")
    for env_id, kwargs, policy, steps in CASES:
        speed: dict[str | None, list[float]] = {None: [], "rgb_array": []}
        traces = set()
        for rep in range(args.reps):
            for mode in (None, "rgb_array") if rep % 2 == 0 else ("rgb_array", None):
                sps, trace = steps_per_cpu_second(env_id, kwargs, policy, mode, steps)
                speed[mode].append(sps)
                traces.add(trace)
        none, rgb = statistics.median(speed[None]), statistics.median(speed["rgb_array"])
        print(
            f"| {env_id} {kwargs or ''} ({policy}) | {rgb:,.0f} | {none:,.0f} | {none / rgb:.2f}x "
            f"| {len(traces) == 1} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
