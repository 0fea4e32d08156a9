"""Benchmark: the same 4-job sweep (ppo, a2c x seeds 0, 1) with Hydra's basic launcher, lander's (the default)
and joblib, the last two with 2 jobs at a time.

    python benchmarks/sweep_launchers.py [--steps 16384] [--reps 1]
Prints the wall time of each sweep and the ratios to the basic launcher, alternating the three ``--reps`` times.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def sweep(launcher: list[str], steps: int, sweep_dir: Path) -> float:
    cmd = [
        sys.executable,
        "-m",
        "lander.run",
        "--multirun",
        *launcher,
        "algo=ppo,a2c",
        "seed=0,1",
        "n_envs=4",
        "algo.model.n_steps=256",
        f"total_timesteps={steps}",
        "eval.freq=4096",
        "logger=none",
        "progress_bar=false",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            basic = sweep(["hydra/launcher=basic"], args.steps, Path(tmp) / f"basic{rep}")
            parallel = sweep(["hydra.launcher.n_jobs=2"], args.steps, Path(tmp) / f"parallel{rep}")
            joblib = sweep(["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], args.steps, Path(tmp) / f"joblib{rep}")
            print(
                f"rep {rep}: basic {basic:.1f} s, lander's (2 at a time) {parallel:.1f} s, joblib (2 workers) "
                f"{joblib:.1f} s; basic / lander's {basic / parallel:.2f}, basic / joblib {basic / joblib:.2f}"
            )


if __name__ == "__main__":
    main()
