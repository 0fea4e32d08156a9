"""The baseline lander is measured against: a plain SB3 script with rl-zoo's PPO settings for LunarLander-v3.

This is what a user would write without lander: SB3's ``EvalCallback`` evaluating 20 episodes one at a
time on a single env every 50k steps, torch's default thread count. Prints one JSON line.

    python benchmarks/plain_sb3_ppo.py --seed 0 --timesteps 1000000 [--eval-freq 50000] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env

ZOO = {"n_steps": 1024, "batch_size": 64, "gae_lambda": 0.98, "gamma": 0.999, "n_epochs": 4, "ent_coef": 0.01}


class SolveClock(BaseCallback):
    """Called after each evaluation: remembers when the eval mean first reached 200, then stops."""

    def __init__(self, start: float, stop_when_solved: bool) -> None:
        super().__init__()
        self.start, self.stop_when_solved = start, stop_when_solved
        self.solved_at: tuple[int, float] | None = None

    def _on_step(self) -> bool:
        if self.solved_at is None and self.parent.last_mean_reward >= 200:
            self.solved_at = (self.num_timesteps, time.perf_counter() - self.start)
        return not (self.stop_when_solved and self.solved_at)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timesteps", type=int, default=1_000_000)
    parser.add_argument("--eval-freq", type=int, default=50_000, help="0: no evaluation (throughput only)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads; 0 = torch's default")
    parser.add_argument("--stop-when-solved", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="print SB3's 'Eval num_timesteps=...' lines")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    env = make_vec_env("LunarLander-v3", n_envs=16, seed=args.seed)
    model = PPO("MlpPolicy", env, seed=args.seed, device="cpu", **ZOO)
    start, cpu_start = time.perf_counter(), time.process_time()
    callback = None
    if args.eval_freq:
        clock = SolveClock(start, args.stop_when_solved)
        callback = EvalCallback(
            gym.make("LunarLander-v3"),
            n_eval_episodes=20,
            eval_freq=args.eval_freq // 16,
            deterministic=True,
            callback_after_eval=clock,
            verbose=int(args.verbose),
        )
    model.learn(args.timesteps, callback=callback)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    solved = clock.solved_at if args.eval_freq else None
    print(
        json.dumps(
            {
                "seed": args.seed,
                "timesteps": model.num_timesteps,
                "wall_seconds": round(wall, 2),
                "steps_per_second": round(model.num_timesteps / wall, 1),
                "cpu_seconds": round(cpu, 2),
                "torch_threads": torch.get_num_threads(),
                "solved_timesteps": solved[0] if solved else None,
                "solved_wall_seconds": round(solved[1], 2) if solved else None,
                "last_eval_mean": float(callback.last_mean_reward) if callback else None,
            }
        )
    )


if __name__ == "__main__":
    main()
