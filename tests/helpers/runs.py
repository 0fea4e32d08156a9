"""Real subprocess runs of ``python -m lander.run`` with tiny budgets, real Hydra composition, result checks."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pandas as pd
import yaml

from helpers.processes import REPO, LanderProcess, run_module
from lander.storage.rundir import RunPaths, RunSummary, Status

# What makes each algorithm's run tiny (few env steps, small updates), whatever the budget.
ALGO_TINY = {
    "ppo": ["n_envs=2", "algo.model.n_steps=256", "algo.model.batch_size=64"],
    "a2c": ["n_envs=2"],
    "dqn": ["algo.model.learning_starts=200"],
    "sac": [
        "env=lunar_lander_continuous",
        "algo.model.learning_starts=200",
        "algo.model.buffer_size=5000",
        "algo.model.batch_size=64",
    ],
    "td3": [
        "env=lunar_lander_continuous",
        "algo.model.learning_starts=200",
        "algo.model.buffer_size=5000",
        "+algo.model.batch_size=64",
    ],
    "mac": ["n_envs=2"],
    "mac_adv": ["n_envs=2"],
    "reinforce": ["algo.model.batch_episodes=2"],
    "q_learning": [],
}
TINY_STEPS = {"ppo": 1024, "a2c": 1000, "dqn": 1000, "sac": 600, "td3": 600}  # a few updates of each


def tiny(
    algo: str | None = "ppo",
    steps: int | None = None,
    *,
    n_steps: int | None = None,
    eval_every: int = 500,
    episodes: int = 3,
    checkpoints: int = 0,
    monitor: int = 0,
    video: bool = False,
    logger: str = "none",
    report: bool = False,
) -> list[str]:
    """The overrides of a tiny run: the one place the tests say how to make a run small.

    :param algo: ``algo=<algo>`` with what makes it tiny (:data:`ALGO_TINY`); None: neither (a preset chooses)
    :param steps: ``total_timesteps`` (default :data:`TINY_STEPS`); 0: none given (the preset's)
    :param n_steps: PPO/A2C steps per env per rollout (default: PPO 256, A2C its own 5)
    :param eval_every: ``eval.freq``; ``episodes`` evaluation episodes on as many envs
    :param checkpoints: ``checkpoint_freq`` (0: none); ``monitor``: ``monitor_freq`` (0: off)
    :param video: a short video (50 steps), or none; ``report``: ``report.html`` or not. Off unless a test reads
        them or runs the default config (the two are about 1 s of a tiny run's 2.5 s after its imports): the runs
        of every algorithm (``algo_run``), the sweeps, the service's, the faults' and the docs' commands have them
    :param logger: ``logger=`` (W&B only where a test reads it: ``"wandb"``)
    """
    out = [f"algo={algo}", *ALGO_TINY[algo]] if algo else []
    if n_steps is not None:
        out = [o for o in out if not o.startswith("algo.model.n_steps=")] + [f"algo.model.n_steps={n_steps}"]
    if steps != 0:
        out.append(f"total_timesteps={steps or TINY_STEPS.get(algo or '', 1024)}")
    out += [f"eval.freq={eval_every}", f"eval.episodes={episodes}", f"eval.n_envs={episodes}"]
    out += [f"checkpoint_freq={checkpoints}", f"monitor_freq={monitor}", "progress_bar=false", f"logger={logger}"]
    out.append("video.max_steps=50" if video else "video.enabled=false")
    return out if report else [*out, "report=false"]


def lander_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"WANDB_SILENT": "true", "PYTHONHASHSEED": "0"} | extra
    return env


def lander(
    *args: str,
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
    timeout: int = 600,
    module: str = "lander.run",
    cold: bool = False,
) -> subprocess.CompletedProcess:
    """``python -m lander.run <args>`` (or another ``module``) in a process of its own (from the repo root unless
    ``cwd``; a new interpreter if ``cold``, :class:`helpers.processes.LanderProcess`), its output captured."""
    return run_module(module, *args, cwd=cwd, env=env or lander_env(), timeout=timeout, cold=cold)


def start_lander(
    *args: str,
    module: str = "lander.run",
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
    session: bool = False,
    merged: bool = False,
) -> LanderProcess:
    """``python -m lander.run <args>`` (or another ``module``) started, not waited for: signal it, then ``wait``."""
    return LanderProcess(module, list(args), cwd, env or lander_env(), session=session, merged=merged)


def run_lander(
    run_dir: Path, *overrides: str, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    """``python -m lander.run <overrides> hydra.run.dir=<run_dir>`` in a subprocess, from the repo root."""
    return lander(*overrides, f"hydra.run.dir={run_dir}", env=env, timeout=timeout)


def tiny_run(
    run_dir: Path, algo: str, *extra: str, video: bool = False, report: bool = False, **kwargs
) -> subprocess.CompletedProcess:
    """A tiny run of ``algo`` (:func:`tiny`, checkpoints and resource samples every 500 steps) that must succeed."""
    proc = run_lander(run_dir, *tiny(algo, checkpoints=500, monitor=500, video=video, report=report), *extra, **kwargs)
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


def wait_for_checkpoints(sweep: Path, jobs: tuple[str, ...], proc: LanderProcess, timeout: float = 240) -> None:
    """Wait until each of a running sweep's ``jobs`` has written a checkpoint (the process still alive)."""
    deadline = time.monotonic() + timeout
    while not all(any((sweep / job / "checkpoints").glob("*.zip")) for job in jobs):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr[-3000:]
        time.sleep(0.05)


def fake_run(
    root: Path,
    name: str,
    overrides: list[str],
    seed: int,
    evals: dict[int, float],
    env: str = "lunar",
    status: Status = Status.COMPLETED,
    stopped_early: str | None = None,
) -> Path:
    """A run directory as lander leaves it (config, overrides, summary, eval.csv) with the given eval means;
    ``stopped_early``: why a stop rule ended it before its budget."""
    paths = RunPaths(root / name)
    paths.hydra.mkdir(parents=True)
    paths.config.write_text(yaml.safe_dump({"seed": seed, "env": {"name": env, "reward_threshold": 200}}))
    paths.overrides.write_text(yaml.safe_dump([*overrides, f"seed={seed}"]))
    RunSummary(status=status, seed=seed, overrides=overrides, stopped_early=stopped_early).save(paths)
    paths.eval_csv.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"timesteps": t, "mean": m, "std": 1.0, "sem": 0.5, "n": 4, "success_rate": 0.5} for t, m in evals.items()]
    pd.DataFrame(rows).to_csv(paths.eval_csv, index=False)
    return paths.root
