"""Benchmark: LunarLander-v3's training envs as lander made them before (SB3's ``DummyVecEnv`` of ``Monitor``-ed
``gymnasium.make`` envs) and as it makes them now (:class:`lander.envs.LunarLanderVecEnv`, the same trajectories
without the wrapper stack): CPU microseconds per env step, the same seeded random actions for both, the two arms
alternated ``--repeats`` times in this one process.

    python benchmarks/lunar_vec_env.py [--n-envs 16] [--steps 2000] [--repeats 5] [--continuous]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from stable_baselines3.common.env_util import make_vec_env

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lander.envs import LunarLanderVecEnv


def cpu_per_step(make, n_envs: int, steps: int, continuous: bool) -> float:  # type: ignore[no-untyped-def]
    """CPU microseconds per env step of ``steps`` vec-env steps of random actions (seeded)."""
    env, rng = make(), np.random.default_rng(0)
    env.reset()
    chosen = rng.uniform(-1, 1, (steps, n_envs, 2)) if continuous else rng.integers(0, 4, (steps, n_envs))
    start = time.process_time()
    for actions in chosen:
        env.step(actions)
    used = time.process_time() - start
    env.close()
    return used / (steps * n_envs) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--continuous", action="store_true")
    args = parser.parse_args()
    kwargs = {"render_mode": None, **({"continuous": True} if args.continuous else {})}
    arms = {
        "DummyVecEnv + Monitor + gymnasium.make": lambda: make_vec_env(
            "LunarLander-v3", n_envs=args.n_envs, seed=0, env_kwargs=kwargs
        ),
        "LunarLanderVecEnv": lambda: LunarLanderVecEnv("LunarLander-v3", args.n_envs, 0, kwargs),
    }
    times: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(args.repeats):
        for name, make in arms.items():
            times[name].append(cpu_per_step(make, args.n_envs, args.steps, args.continuous))
    base = np.median(times["DummyVecEnv + Monitor + gymnasium.make"])
    print("| training envs | CPU us per env step (median) | runs | / wrapped |\n|---|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {np.median(values):.1f} | {', '.join(f'{v:.1f}' for v in values)} | "
              f"{np.median(values) / base:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
