"""Benchmark: what ``torch_fast_paths`` (foreach optimizer updates, no distribution checks) saves, and that it is free.

The default PPO config for ``--steps`` steps (evaluation, video and W&B off) with ``torch_fast_paths=true``
and ``false``, both at the same time on the same core (``--reps`` pairs), as in ``ppo_solve.py`` part 3:
training CPU seconds of each and whether the two runs ended with the same weights.

    python benchmarks/fast_paths.py --steps 131072 --reps 3 --core 1
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
# training only: no evaluation, video, W&B, progress bar or checkpoints, so the CPU time is the training's
TRAINING_ONLY = [
    "eval.freq=0",
    "final_eval=false",
    "video.enabled=false",
    "logger=none",
    "progress_bar=false",
    "checkpoint_freq=0",
]


def start(fast: bool, steps: int, run_dir: Path, core: int) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "lander.run",
        "algo=ppo",
        f"torch_fast_paths={str(fast).lower()}",
        f"total_timesteps={steps}",
        *TRAINING_ONLY,
        f"hydra.run.dir={run_dir}",
    ]
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    with zipfile.ZipFile(run_dir / "model.zip") as archive:
        return torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=131_072)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--core", type=int, default=0)
    args = parser.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            dirs = {fast: Path(tmp) / f"{fast}{rep}" for fast in (True, False)}
            procs = [start(fast, args.steps, path, args.core) for fast, path in dirs.items()]
            if any(proc.wait() != 0 for proc in procs):
                raise RuntimeError(f"a run failed; see {tmp}")
            cpu = {
                fast: json.loads((path / "summary.json").read_text())["train_cpu_seconds"]
                for fast, path in dirs.items()
            }
            a, b = weights(dirs[True]), weights(dirs[False])
            same = all(torch.equal(a[k], b[k]) for k in a)
            ratios.append(cpu[True] / cpu[False])
            print(
                f"pair {rep}: training CPU s fast {cpu[True]:.1f}, torch defaults {cpu[False]:.1f}, "
                f"ratio {ratios[-1]:.3f}, same weights: {same}",
                flush=True,
            )
    print(f"median ratio {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
