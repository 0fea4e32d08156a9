"""Benchmark: one PPO update of K seeds side by side (``SeedStack``) against one SB3 ``PPO.train``, on
LunarLander's shapes and the zoo's settings (16 envs x 1024 steps, minibatches of 64, 4 epochs: 1024 gradient
steps), one torch thread, in this process alone.

    python benchmarks/side_by_side_update.py [--seeds 5] [--repeats 2]

Prints the CPU milliseconds per gradient step of the K seeds together, per seed, and of SB3's single model. The
rollout buffers hold random data of the right shapes (the cost of an update does not depend on the values).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's lander, not an installed one
from lander.algorithms.batched import SeedStack, SideBySidePPO

N_ENVS, N_STEPS, BATCH, EPOCHS = 16, 1024, 64, 4


def model(cls: type[PPO], seed: int, rng: np.random.Generator) -> PPO:
    """A model of ``cls`` with a full rollout buffer of random data."""
    env = make_vec_env("LunarLander-v3", n_envs=N_ENVS, seed=seed)
    built = cls("MlpPolicy", env, n_steps=N_STEPS, batch_size=BATCH, n_epochs=EPOCHS, gamma=0.999, gae_lambda=0.98,
                ent_coef=0.01, seed=seed, device="cpu")  # fmt: skip
    built.set_logger(Logger(None, []))  # records kept, nothing written (SB3 would make a folder in /tmp)
    built._setup_learn(N_STEPS * N_ENVS, None)
    buffer = built.rollout_buffer
    buffer.observations[:] = rng.normal(size=buffer.observations.shape)
    buffer.actions[:] = rng.integers(0, 4, size=buffer.actions.shape)
    for key in ("values", "advantages", "returns"):
        getattr(buffer, key)[:] = rng.normal(size=getattr(buffer, key).shape)
    buffer.log_probs[:] = rng.normal(size=buffer.log_probs.shape) * 0.1 - 1.4
    buffer.full = True
    return built


def cpu_per_update(update: object, repeats: int) -> float:
    update()  # type: ignore[operator]  # warm
    start = time.process_time()
    for _ in range(repeats):
        update()  # type: ignore[operator]
    return (time.process_time() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    threadpool_limits(1, user_api="blas")  # as a run with torch_threads=1
    rng = np.random.default_rng(0)
    stack = SeedStack([model(SideBySidePPO, seed, rng) for seed in range(args.seeds)])  # type: ignore[misc]
    rows = list(range(args.seeds))
    batched = cpu_per_update(lambda: stack.train(rows), args.repeats)
    single = cpu_per_update(model(PPO, 0, rng).train, args.repeats)
    steps = EPOCHS * N_ENVS * N_STEPS // BATCH
    print(f"{args.seeds} seeds side by side: {batched * 1e3 / steps:.3f} ms per gradient step for all, "
          f"{batched * 1e3 / steps / args.seeds:.3f} per seed; SB3: {single * 1e3 / steps:.3f}; "
          f"per seed / SB3: {batched / args.seeds / single:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
