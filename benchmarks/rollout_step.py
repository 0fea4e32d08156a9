"""Benchmark: what one rollout step of the batched engine costs, split: the env, the batched policy, the rest of
the rollout loop (buffer, callbacks' bookkeeping, episode records), on LunarLander's shapes (16 envs).

    python benchmarks/rollout_step.py [--rollouts 3]

Part 1: a ``SideBySidePPO`` alone (K = 1) collects ``--rollouts`` rollouts of 1,024 steps through its own loop, with
no callbacks; this thread's CPU (``time.thread_time``) of the whole, of ``env.step_wait`` and of the policy's
actions are summed and printed per step of the 16 envs. Part 2: the batched policy's actions alone (``SeedStack.act``)
for K = 1 and K = 4 seeds, microseconds per call. Part 3: a deterministic ``predict`` of 10 observations (an
evaluation's step) by a seed alone on the engine after a rollout, and by SB3's ``PPO.predict`` of the same model. One
torch and BLAS thread, as a run with ``torch_threads=1``.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CallbackList
from threadpoolctl import threadpool_limits

from lander.algorithms.batched import SeedStack, SideBySidePPO
from lander.algorithms.batched import model as engine
from lander.envs import LunarLanderVecEnv

N_ENVS, N_STEPS = 16, 1024


def lunar(seed: int) -> SideBySidePPO:
    return SideBySidePPO("MlpPolicy", LunarLanderVecEnv("LunarLander-v3", N_ENVS, seed, {}), n_steps=N_STEPS, seed=seed)


def rollout_split(rollouts: int) -> dict[str, float]:
    """CPU microseconds per rollout step: ``total``, ``env``, ``actions``, ``rest``."""
    model = lunar(0)
    callback = CallbackList([])
    model._setup_learn(10**8, callback)
    callback.init_callback(model)
    spent = {"env": 0.0, "actions": 0.0}
    env = model.env
    assert isinstance(env, LunarLanderVecEnv)
    step_wait, act = env.step_wait, engine.SideBySide._act

    def timed_step_wait() -> Any:
        start = time.thread_time()
        out = step_wait()
        spent["env"] += time.thread_time() - start
        return out

    def timed_act(self: SideBySidePPO, obs: np.ndarray) -> Any:
        start = time.thread_time()
        out = act(self, obs)
        spent["actions"] += time.thread_time() - start
        return out

    env.step_wait = timed_step_wait  # type: ignore[method-assign]
    engine.SideBySide._act = timed_act  # type: ignore[method-assign,assignment]
    try:
        model.collect_rollouts(env, callback, model.rollout_buffer, N_STEPS)  # warm
        spent["env"] = spent["actions"] = 0.0
        start = time.thread_time()
        for _ in range(rollouts):
            model.collect_rollouts(env, callback, model.rollout_buffer, N_STEPS)
        total = time.thread_time() - start
    finally:
        engine.SideBySide._act = act  # type: ignore[method-assign]
    steps = rollouts * N_STEPS
    out = {"total": total, "env": spent["env"], "actions": spent["actions"]}
    out["rest"] = total - out["env"] - out["actions"]
    return {key: 1e6 * value / steps for key, value in out.items()}


def act_cost(k: int, calls: int = 3000) -> float:
    """CPU microseconds per ``SeedStack.act`` of ``k`` seeds, 16 observations each."""
    stack = SeedStack([lunar(seed) for seed in range(k)])
    obs = {row: np.random.default_rng(row).normal(size=(N_ENVS, 8)).astype(np.float32) for row in range(k)}
    for _ in range(200):
        stack.act(obs)
    start = time.thread_time()
    for _ in range(calls):
        stack.act(obs)
    return 1e6 * (time.thread_time() - start) / calls


def predict_cost(calls: int = 3000) -> tuple[float, float]:
    """CPU microseconds per deterministic ``predict`` of 10 observations: the engine's (a seed alone, its stack made
    by a rollout), SB3's ``PPO.predict`` of the same model."""
    model = lunar(0)
    model.learn(N_ENVS * N_STEPS)
    obs = np.random.default_rng(0).normal(size=(10, 8)).astype(np.float32)
    costs = []
    for predict in (model.predict, partial(PPO.predict, model)):
        for _ in range(200):
            predict(obs, deterministic=True)
        start = time.thread_time()
        for _ in range(calls):
            predict(obs, deterministic=True)
        costs.append(1e6 * (time.thread_time() - start) / calls)
    return costs[0], costs[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    threadpool_limits(1, user_api="blas")
    split = rollout_split(args.rollouts)
    print("per rollout step of 16 envs, CPU us: " + ", ".join(f"{key} {value:.0f}" for key, value in split.items()))
    for k in (1, 4):
        print(f"SeedStack.act of {k} seeds: {act_cost(k):.0f} us a call")
    engine_predict, sb3_predict = predict_cost()
    print(f"predict of 10 observations: {engine_predict:.1f} us a call alone on the engine, SB3's {sb3_predict:.1f}")


if __name__ == "__main__":
    main()
