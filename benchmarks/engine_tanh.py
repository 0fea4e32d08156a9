"""Benchmark: how much of the batched engine's CPU is NumPy's float32 ``tanh`` (the hidden layers' activation of
LunarLander's MLPs): one PPO update of 4 seeds side by side (``SeedStack.train``, 1,024 gradient steps, the shapes of
``side_by_side_update.py``) and one rollout step's actions of the 4 seeds (``SeedStack.act``, 16 envs each), with
``np.tanh`` as it is and with it replaced by the identity (the numbers are then wrong; the CPU of everything else is
what is measured), the two alternated ``--repeats`` times in this one process, one torch and BLAS thread.

    python benchmarks/engine_tanh.py [--repeats 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's lander, not an installed one
sys.path.insert(0, str(Path(__file__).resolve().parent))
from side_by_side_update import model

from lander.algorithms.batched import SeedStack, SideBySidePPO

SEEDS, ACTS = 4, 3000


def identity(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return x if out is None else out


def measure(stack: SeedStack, obs: dict[int, np.ndarray]) -> tuple[float, float]:
    """CPU seconds of one update of every seed, and of one rollout step's actions."""
    rows = list(range(SEEDS))
    start = time.process_time()
    stack.train(rows)
    update = time.process_time() - start
    start = time.process_time()
    for _ in range(ACTS):
        stack.act(obs)
    return update, (time.process_time() - start) / ACTS


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    threadpool_limits(1, user_api="blas")
    rng = np.random.default_rng(0)
    stack = SeedStack([model(SideBySidePPO, seed, rng) for seed in range(SEEDS)])  # type: ignore[misc]
    obs = {row: rng.normal(size=(16, 8)).astype(np.float32) for row in range(SEEDS)}
    real: Any = np.tanh
    measure(stack, obs)  # warm
    results: dict[str, list[tuple[float, float]]] = {"tanh": [], "identity": []}
    for _ in range(args.repeats):
        for name in results:
            np.tanh = real if name == "tanh" else identity  # type: ignore[assignment]
            results[name].append(measure(stack, obs))
    np.tanh = real
    for name, rows in results.items():
        update = sum(u for u, _ in rows) / len(rows)
        act = sum(a for _, a in rows) / len(rows)
        print(f"{name}: update {update:.3f} CPU s, actions {act * 1e6:.1f} us a step "
              f"(each repeat: {', '.join(f'{u:.3f} s / {a * 1e6:.0f} us' for u, a in rows)})")  # fmt: skip
    (u1, a1), (u0, a0) = ([sum(x[i] for x in rows) / len(rows) for i in (0, 1)] for rows in results.values())
    print(f"tanh's share: update {1 - u0 / u1:.2f}, actions {1 - a0 / a1:.2f}")


if __name__ == "__main__":
    main()
