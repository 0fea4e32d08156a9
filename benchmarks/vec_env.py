"""Benchmark: does stepping the training envs in other processes help a single run on this machine?

The default PPO config (16 envs) for ``--steps`` steps, evaluation off, with ``vec_env=dummy`` (all envs in
the training process, lander's default) and ``vec_env=subproc`` (SB3's ``SubprocVecEnv``: one process per
env), alternated ``--reps`` times on an otherwise idle machine; wall seconds of training, and whether the
two give the same weights (they must: the same envs, seeds and actions).

    python benchmarks/vec_env.py --steps 196608 --reps 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from fast_paths import TRAINING_ONLY, weights  # this folder is on sys.path when a benchmark runs as a script

REPO = Path(__file__).resolve().parent.parent


def run(vec_env: str, steps: int, run_dir: Path) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "lander.run",
        "algo=ppo",
        f"vec_env={vec_env}",
        f"total_timesteps={steps}",
        *TRAINING_ONLY,
        f"hydra.run.dir={run_dir}",
    ]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        "train_seconds": summary["train_seconds"],
        "train_cpu_seconds": summary["train_cpu_seconds"],
        "weights": weights(run_dir),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=196_608)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = ("dummy", "subproc") if rep % 2 == 0 else ("subproc", "dummy")
            res = {name: run(name, args.steps, Path(tmp) / f"{name}{rep}") for name in order}
            same = all(
                torch.equal(res["dummy"]["weights"][k], res["subproc"]["weights"][k]) for k in res["dummy"]["weights"]
            )
            print(
                f"rep {rep}: dummy {res['dummy']['train_seconds']:.1f} s, "
                f"subproc {res['subproc']['train_seconds']:.1f} s (wall of training; "
                f"CPU of the training process {res['dummy']['train_cpu_seconds']:.1f} vs "
                f"{res['subproc']['train_cpu_seconds']:.1f}), subproc/dummy "
                f"{res['subproc']['train_seconds'] / res['dummy']['train_seconds']:.2f}, same weights: {same}",
                flush=True,
            )


if __name__ == "__main__":
    main()
