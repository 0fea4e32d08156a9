"""Check: a change that should change no result changes none. The same tiny runs at two commits, compared.

    python benchmarks/same_results.py OLD NEW

Each commit is checked out in a worktree of its own (under a temporary folder) and runs, both commits at once (one
a core): a default PPO run (SB3 itself), a PPO run alone on the batched engine (``batched_engine=true``), a PPO
side-by-side sweep of three seeds and an A2C one of two (``seeds_per_process``), each a few updates long, without
video, report or tracker. Then every run's ``model.zip`` policy weights, its final evaluation (``eval.json``) and
the values of its ``metrics/sb3_progress.csv`` (the ``time/`` columns aside, by column name) are compared; prints
one line a run and exits 1 if any differs. Speed-ups of the env, the rollout loop or the batched engine are checked
with it ("Reproducible by default", DEVELOPERS.md).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUIET = ["video.enabled=false", "report=false", "logger=none", "progress_bar=false"]
RUNS = {  # name -> (overrides, the output folder's key: a sweep's or a run's)
    "ppo_default": (["seed=0", "total_timesteps=20000"], "hydra.run.dir"),
    "ppo_alone": (["seed=0", "batched_engine=true", "total_timesteps=20000"], "hydra.run.dir"),
    "ppo_side": (["--multirun", "seed=0,1,2", "seeds_per_process=3", "total_timesteps=20000"], "hydra.sweep.dir"),
    "a2c_side": (["--multirun", "algo=a2c", "seed=0,1", "seeds_per_process=2", "total_timesteps=8000"],
                 "hydra.sweep.dir"),
}  # fmt: skip


def run_all(tree: Path, out: Path) -> subprocess.Popen[bytes]:
    """Every run of :data:`RUNS` at ``tree``, one after the other, in a shell started here (not waited for)."""
    lines = []
    for name, (overrides, key) in RUNS.items():
        sweep = ["hydra.launcher.n_jobs=1"] if "--multirun" in overrides else []
        command = [sys.executable, "-m", "lander.run", *overrides, *sweep, *QUIET, f"{key}={out / name}"]
        lines.append(" ".join(command) + f" > {out / name}.log 2>&1 || exit 1")
    env = dict(os.environ) | {"PYTHONPATH": str(tree), "WANDB_MODE": "offline"}
    out.mkdir(parents=True)
    return subprocess.Popen(["bash", "-c", "\n".join(lines)], cwd=tree, env=env)


def progress(path: Path) -> list[dict[str, str]]:
    """``sb3_progress.csv``'s rows without the ``time/`` columns (SB3 orders its columns differently each run)."""
    with path.open() as f:
        return [{k: v for k, v in row.items() if not k.startswith("time/")} for row in csv.DictReader(f)]


def fingerprint(model: Path) -> tuple[str, float, list[dict[str, str]]]:
    """A run's policy weights (hash), final evaluation mean and ``sb3_progress.csv`` values."""
    weights = hashlib.sha256(zipfile.ZipFile(model).read("policy.pth")).hexdigest()
    final = float(json.loads((model.parent / "eval.json").read_text())["mean"])
    return weights, final, progress(model.parent / "metrics" / "sb3_progress.csv")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("old")
    parser.add_argument("new")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="same-results-") as folder:
        base, trees, procs, differ = Path(folder), {}, [], 0
        try:
            for name, commit in (("old", args.old), ("new", args.new)):
                trees[name] = base / name
                subprocess.run(["git", "worktree", "add", "--detach", "-q", str(trees[name]), commit], cwd=REPO,
                               check=True)  # fmt: skip
                procs.append(run_all(trees[name], base / f"out_{name}"))
            if any(proc.wait() for proc in procs):
                raise SystemExit(f"a run failed: see the logs (kept in {folder} until this ends)")
            for model in sorted((base / "out_old").rglob("model.zip")):
                other = base / "out_new" / model.relative_to(base / "out_old")
                old, new = fingerprint(model), fingerprint(other)
                same = old == new
                differ += not same
                print(f"{model.parent.relative_to(base / 'out_old')}: final {old[1]!r} / {new[1]!r}, "
                      f"{'identical' if same else 'DIFFERENT'}")  # fmt: skip
            print(f"{args.old} -> {args.new}: " + ("every run identical" if not differ else f"{differ} runs differ"))
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
