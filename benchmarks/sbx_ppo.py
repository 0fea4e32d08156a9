"""Benchmark: SBX's PPO (JAX on the CPU) on LunarLander-v3 with lander's default PPO values, for the CPU of one seed
against a lander seed's (issue 41's "side by side at most 0.5x SBX's CPU").

    python -m venv .sbx && .sbx/bin/pip install sbx-rl "gymnasium[box2d]"
    .sbx/bin/python benchmarks/sbx_ppo.py STEPS SEED

Runs in SBX's own venv (it is not a dependency of lander), with one XLA thread (``XLA_FLAGS``, as lander's
``torch_threads=1``), Gymnasium's ``LunarLander-v3`` in SB3's ``DummyVecEnv`` (16 envs), the zoo's PPO values as
``lander/conf/algo/ppo.yaml`` holds them, no evaluation. Prints the CPU seconds of ``learn`` (JIT compilation
included) and of the whole process; compare with a lander run's ``train_cpu_seconds`` (``summary.json``) at the
same steps.
"""

from __future__ import annotations

import os
import resource
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from sbx import PPO
from stable_baselines3.common.env_util import make_vec_env


def main() -> None:
    steps, seed = int(sys.argv[1]), int(sys.argv[2])
    env = make_vec_env("LunarLander-v3", n_envs=16, seed=seed)
    model = PPO("MlpPolicy", env, n_steps=1024, batch_size=64, n_epochs=4, gamma=0.999, gae_lambda=0.98,
                ent_coef=0.01, learning_rate=3e-4, clip_range=0.2, seed=seed, verbose=0)  # fmt: skip
    start = time.process_time()
    model.learn(steps)
    training = time.process_time() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"SBX seed {seed}: training CPU {training:.1f} s, whole process CPU {usage.ru_utime + usage.ru_stime:.1f} s")


if __name__ == "__main__":
    main()
