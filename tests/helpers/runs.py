"""Real subprocess runs of ``python -m lander.run`` with tiny budgets, real Hydra composition, result checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Tiny budgets per algorithm: a few thousand env steps at most, every artifact still written.
TINY = {
    "ppo": [
        "env=lunar_lander",
        "n_envs=2",
        "algo.model.n_steps=256",
        "algo.model.batch_size=64",
        "total_timesteps=1024",
    ],
    "a2c": ["env=lunar_lander", "n_envs=2", "total_timesteps=1000"],
    "dqn": ["env=lunar_lander", "total_timesteps=1000", "algo.model.learning_starts=200"],
    "sac": [
        "env=lunar_lander_continuous",
        "total_timesteps=600",
        "algo.model.learning_starts=200",
        "algo.model.buffer_size=5000",
        "algo.model.batch_size=64",
    ],
    "td3": [
        "env=lunar_lander_continuous",
        "total_timesteps=600",
        "algo.model.learning_starts=200",
        "algo.model.buffer_size=5000",
        "+algo.model.batch_size=64",
    ],
}
# a tiny sweep's jobs: two PPO/A2C updates, evaluations every 256 steps, no checkpoints
TINY_SWEEP = [
    "n_envs=2",
    "total_timesteps=1024",
    "algo.model.n_steps=256",
    "eval.freq=256",
    "eval.episodes=3",
    "eval.n_envs=3",
    "video.max_steps=50",
    "progress_bar=false",
    "checkpoint_freq=0",
]
QUICK = [
    "eval.freq=500",
    "eval.episodes=3",
    "eval.n_envs=3",
    "video.max_steps=120",
    "progress_bar=false",
    "checkpoint_freq=500",
    "monitor_freq=500",
]


def lander_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"WANDB_SILENT": "true", "PYTHONHASHSEED": "0"} | extra
    return env


def lander(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    """``python -m lander.run <args>`` in a subprocess (from the repo root unless ``cwd``), its output captured."""
    cmd = [sys.executable, "-m", "lander.run", *args]
    return subprocess.run(cmd, cwd=cwd, env=env or lander_env(), capture_output=True, text=True, timeout=timeout)


def run_lander(
    run_dir: Path, *overrides: str, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    """``python -m lander.run <overrides> hydra.run.dir=<run_dir>`` in a subprocess, from the repo root."""
    return lander(*overrides, f"hydra.run.dir={run_dir}", env=env, timeout=timeout)


def tiny_run(run_dir: Path, algo: str, *extra: str, **kwargs) -> subprocess.CompletedProcess:
    """A tiny-budget run of ``algo`` that must succeed."""
    proc = run_lander(run_dir, f"algo={algo}", *TINY[algo], *QUICK, *extra, **kwargs)
    assert proc.returncode == 0, f"run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def composed(*overrides: str):
    """The config ``python -m lander.run <overrides>`` would run (real Hydra composition, lander's schema)."""
    from hydra import compose, initialize_config_dir

    from lander.config.schema import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "lander" / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


# columns that measure the clock, not the run
WALL_CLOCK = ["wall_time", "eval_seconds", "time/fps", "time/time_elapsed"]


def policy_weights(run_dir: Path) -> dict:
    """The final policy's tensors from ``model.zip`` (any algorithm), loaded without unpickling."""
    import io
    import zipfile

    import torch

    with zipfile.ZipFile(run_dir / "model.zip") as archive:
        return torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)


def assert_same_results(run_a: Path, run_b: Path) -> None:
    """Two runs recorded the same results: every metric file (clock columns aside), the final evaluation's
    episodes and every policy weight. Column order aside: SB3's progress CSV orders new keys as a set (hash seed)."""
    import pandas as pd
    import torch

    for name in ("train_episodes.csv", "eval.csv", "eval_episodes.csv", "sb3_progress.csv"):
        a, b = pd.read_csv(run_a / "metrics" / name), pd.read_csv(run_b / "metrics" / name)
        assert len(a) > 0, name
        clock = [c for c in WALL_CLOCK if c in a.columns]
        pd.testing.assert_frame_equal(a.drop(columns=clock), b.drop(columns=clock), obj=name, check_like=True)
    assert read_json(run_a / "eval.json")["episodes"] == read_json(run_b / "eval.json")["episodes"]
    wa, wb = policy_weights(run_a), policy_weights(run_b)
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
