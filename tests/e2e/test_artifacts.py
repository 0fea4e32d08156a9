"""Every algorithm trains with a tiny budget and leaves the complete run record."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import pandas as pd
import pytest
import stable_baselines3
import yaml

from helpers import ALGO_TINY, REPO, lander_env, read_json
from helpers.processes import run_module
from helpers.wandb_reader import read_run
from lander.storage.rundir import foreign_entries

ALGOS = {
    "ppo": stable_baselines3.PPO,
    "a2c": stable_baselines3.A2C,
    "dqn": stable_baselines3.DQN,
    "sac": stable_baselines3.SAC,
    "td3": stable_baselines3.TD3,
}


def rows(path):
    with path.open() as f:
        return list(csv.DictReader(f))


def test_run_dir_holds_every_artifact(algo_run):
    algo, run_dir = algo_run
    for name in [
        ".hydra/config.yaml",
        ".hydra/overrides.yaml",
        "run.log",
        "summary.json",
        "eval.json",
        "model.zip",
        "best_model.zip",
        "learning_curve.png",
        "video.mp4",
        "report.html",
        "metrics/train_episodes.csv",
        "metrics/eval.csv",
        "metrics/sb3_progress.csv",
        "environment/pip_freeze.txt",
        "environment/versions.json",
    ]:
        assert (run_dir / name).is_file(), f"{algo}: {name} missing"
    assert list((run_dir / "checkpoints").glob("model_*_steps.zip")), "no checkpoint written"
    assert foreign_entries(run_dir) == [], "a file a run writes is not in RUN_ENTRIES: a retry would leave it behind"
    resolved = yaml.safe_load((run_dir / ".hydra/config.yaml").read_text())
    assert resolved["algo"]["name"] == algo
    versions = read_json(run_dir / "environment/versions.json")  # what makes results differ across machines
    assert versions["torch_cpu_capability"] in {"DEFAULT", "AVX2", "AVX512", "ZVECTOR", "NO AVX", "SVE256"}
    assert versions["cpu_model"]


def test_report_has_every_figure_and_every_sb3_column(algo_run):
    """Every algorithm's report (the browser test opens the PPO and A2C ones): the four figures, and a plot of
    each metric SB3 wrote (its name in the figure's JSON)."""
    _algo, run_dir = algo_run
    page = (run_dir / "report.html").read_text()
    for plot in ("plot-returns", "plot-eval_episodes", "plot-training", "plot-speed"):
        assert f'id="{plot}"' in page
    progress = pd.read_csv(run_dir / "metrics/sb3_progress.csv")
    for column in progress.columns:
        if not column.startswith("time/") and progress[column].notna().any():
            name = json.dumps(column).replace("/", "\\u002f")  # as Plotly writes it
            assert '"name":' + name in page, column


def test_summary_and_metrics(algo_run):
    _algo, run_dir = algo_run
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed"
    assert summary["timesteps"] >= summary["total_timesteps"]
    assert summary["steps_per_second"] > 0 and summary["wall_seconds"] > 0
    assert "first_timestep_reaching_threshold" in summary
    episodes = rows(run_dir / "metrics/train_episodes.csv")
    assert episodes, "no training episode recorded"
    steps = [int(r["timesteps"]) for r in episodes]
    assert steps == sorted(steps) and steps[-1] <= summary["timesteps"]
    evals = rows(run_dir / "metrics/eval.csv")
    assert len(evals) >= 1 and all(int(r["n"]) == 3 for r in evals)
    for r in evals:
        assert float(r["sem"]) == pytest.approx(float(r["std"]) / np.sqrt(3), rel=1e-6)
    assert summary["best_eval_mean"] == pytest.approx(max(float(r["mean"]) for r in evals))


def test_every_update_records_its_gradient_norm_before_clipping(algo_run):
    algo, run_dir = algo_run
    progress = pd.read_csv(run_dir / "metrics/sb3_progress.csv")
    keys = ["train/actor_grad_norm", "train/critic_grad_norm"] if algo in ("sac", "td3") else ["train/grad_norm"]
    for key in keys:
        norms = progress[key].dropna()
        assert len(norms) and (norms > 0).all() and np.isfinite(norms).all(), (key, progress.columns.tolist())
    if algo in ("ppo", "a2c"):  # clipped at max_grad_norm (0.5) after the norm is taken: seen above it
        assert progress["train/grad_norm"].max() > 0.5
    if algo in ("ppo", "a2c", "dqn"):  # the loss each minimises (SAC's and TD3's two: actor_loss, critic_loss)
        losses = progress["train/loss"].dropna()
        assert len(losses) and np.isfinite(losses).all(), progress.columns.tolist()
    else:
        assert {"train/actor_loss", "train/critic_loss"} <= set(progress.columns)
    if algo == "a2c":  # the sum of its recorded terms, weighted as A2C.train weights them
        model = yaml.safe_load((run_dir / ".hydra/config.yaml").read_text())["algo"]["model"]
        row = progress.dropna(subset=["train/loss"]).iloc[-1]
        terms = (
            row["train/policy_loss"]
            + float(model.get("ent_coef", 0.0)) * row["train/entropy_loss"]
            + float(model.get("vf_coef", 0.5)) * row["train/value_loss"]
        )
        assert row["train/loss"] == pytest.approx(terms, rel=1e-6)


def test_every_algorithms_run_reproduces_here(algo_run):
    """``python -m lander.reproduce --steps`` on the default-config run of every algorithm: the same metrics up to
    there (and the same weights where a checkpoint was kept at that step), verdict identical, exit 0."""
    _, run_dir = algo_run
    proc = run_module("lander.reproduce", str(run_dir), "--steps", "300", cwd=REPO, env=lander_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.startswith(f"identical: {run_dir}.reproduce-"), proc.stdout
    copy = Path(proc.stdout.split()[1])
    assert read_json(copy / "reproduction.json")["verdict"] == "identical"


def test_eval_json_has_every_episode(algo_run):
    _algo, run_dir = algo_run
    record = read_json(run_dir / "eval.json")
    returns = [e["return"] for e in record["episodes"]]
    assert record["n"] == len(returns) == 3
    assert [e["seed"] for e in record["episodes"]] == [1_000_000, 1_000_001, 1_000_002]
    assert record["mean"] == pytest.approx(np.mean(returns))
    assert record["std"] == pytest.approx(np.std(returns, ddof=1))
    assert record["sem"] == pytest.approx(np.std(returns, ddof=1) / np.sqrt(3))
    assert record["median"] == pytest.approx(np.median(returns))
    assert (record["min"], record["max"]) == (min(returns), max(returns))
    assert record["success_rate"] == pytest.approx(np.mean(np.array(returns) >= 200))
    assert read_json(run_dir / "summary.json")["final_eval_mean"] == pytest.approx(record["mean"])


def test_model_loads_in_plain_sb3_and_acts(algo_run):
    algo, run_dir = algo_run
    model = ALGOS[algo].load(run_dir / "model.zip", device="cpu")
    continuous = "env=lunar_lander_continuous" in ALGO_TINY[algo]
    env = gym.make("LunarLander-v3", continuous=continuous)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(action.astype(env.action_space.dtype) if continuous else int(action))
    assert model.num_timesteps == read_json(run_dir / "summary.json")["timesteps"]


def test_video_has_frames_of_the_episode(algo_run):
    algo, run_dir = algo_run
    frames = np.stack(imageio.mimread(run_dir / "video.mp4", memtest=False))
    video = read_json(run_dir / "summary.json")["video"]
    assert frames.ndim == 4 and frames.shape[-1] == 3 and frames.shape[2] >= 600 and frames.shape[1] >= 400
    assert len(frames) == video["frames"] > 1
    assert not np.array_equal(frames[0], frames[-1]), "the lander should move"
    # the first frame (the episode's reset) as the env draws it, and as the video shows it: about 46 dB PSNR (x264's
    # veryfast preset, BENCHMARKS.md); 35 or less is visible loss (x264's -crf 45: 33)
    env = gym.make(
        "LunarLander-v3", continuous="env=lunar_lander_continuous" in ALGO_TINY[algo], render_mode="rgb_array"
    )
    env.reset(seed=video["seed"])
    drawn = env.render().astype(float)
    assert 10 * np.log10(255**2 / np.mean((frames[0].astype(float) - drawn) ** 2)) > 35


def test_wandb_offline_run_holds_the_logged_metrics(algo_run):
    algo, run_dir = algo_run
    run = read_run(run_dir)
    summary = read_json(run_dir / "summary.json")
    assert run["name"] == summary["run_name"] == f"{algo}_{summary['env']}_gamma-{summary['gamma']:g}_seed-0"
    assert run["job_type"] == algo and run["exit_code"] == 0
    assert run["config"]["algo"]["name"] == algo and run["config"]["seed"] == 0
    logged_eval = [h["eval/mean"] for h in run["history"] if "eval/mean" in h]
    assert logged_eval == pytest.approx([float(r["mean"]) for r in rows(run_dir / "metrics/eval.csv")])
    logged_returns = [h["train/episode_return"] for h in run["history"] if "train/episode_return" in h]
    assert logged_returns == pytest.approx([float(r["return"]) for r in rows(run_dir / "metrics/train_episodes.csv")])
    assert run["summary"]["final_eval_mean"] == pytest.approx(summary["final_eval_mean"])
    assert any(k.startswith("plots/learning_curve") for k in run["summary"])
    assert any(k.startswith("media/video") for k in run["summary"])
    assert any(a["type"] == "model" and "model.zip" in a["files"] for a in run["artifacts"])


def test_every_numeric_sb3_column_reaches_wandb(algo_run):
    """SB3 logs some values as numpy scalars (PPO's ``train/approx_kl``); each column of sb3_progress.csv is in W&B."""
    _, run_dir = algo_run
    progress = pd.read_csv(run_dir / "metrics" / "sb3_progress.csv")
    numeric = [c for c in progress.columns if pd.api.types.is_numeric_dtype(progress[c])]
    history = read_run(run_dir)["history"]
    logged = {key for row in history for key in row}
    assert numeric and not set(numeric) - logged, f"missing in W&B: {sorted(set(numeric) - logged)}"
    steps = "time/total_timesteps"
    for column in numeric:  # the same values, at the same steps
        rows_ = {int(h["global_step"]): h[column] for h in history if column in h}
        for step, value in progress[[steps, column]].dropna().itertuples(index=False):
            assert rows_[int(step)] == pytest.approx(value, rel=1e-6), column


OFFLINE_THREADS = """
import sys, threading
from pathlib import Path
from hydra import compose, initialize_config_dir
from lander.config.schema import register_configs
from lander.storage.rundir import RunPaths, RunSummary
from lander.tracking.base import TrackedRun, make_trackers
register_configs()
with initialize_config_dir(config_dir=sys.argv[1], version_base="1.3"):
    cfg = compose(config_name="config", overrides=["logger=wandb", "logger.wandb.mode=offline"])
tracker = make_trackers(cfg)["wandb"]
tracker.start(TrackedRun(cfg, RunPaths(Path(sys.argv[2])), RunSummary(), "offline-check", None, 0))
tracker.log({"train/episode_return": 1.0}, 10)
print(" ".join(t.name for t in threading.enumerate()))
tracker.finish(0)
"""


def test_offline_wandb_starts_no_telemetry_export(tmp_path):
    """Offline means offline: W&B 0.31 would otherwise start OpenTelemetry exporters posting to api.wandb.ai."""
    cmd = [sys.executable, "-c", OFFLINE_THREADS, str(REPO / "lander" / "conf"), str(tmp_path)]
    proc = subprocess.run(cmd, cwd=REPO, env=lander_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    threads = proc.stdout.split()
    assert "MainThread" in threads and any(t.startswith("wandb") for t in threads), threads
    assert not [t for t in threads if t.startswith("Otel")], threads


def test_wandb_mode_follows_wandbs_own_variable(tmp_path):
    """``WANDB_MODE=disabled``, W&B's own way to keep it out of a machine's runs, was ignored: every run wrote an
    offline W&B run; and ``logger.wandb.mode=disabled`` still copied the model into ``wandb/artifact_files/``. The
    mode now follows ``WANDB_MODE`` where it is set (``logger.wandb.mode`` on the command line first); disabled
    leaves no ``wandb/``; a mode lander has no use for is one line naming the variable, exit 2, nothing made."""
    from helpers import run_lander, tiny

    off = run_lander(tmp_path / "off", *tiny("a2c"), "logger=wandb", env=lander_env(WANDB_MODE="disabled"))
    assert off.returncode == 0, off.stderr[-3000:]
    assert not (tmp_path / "off" / "wandb").exists() and read_json(tmp_path / "off" / "summary.json")["status"] == (
        "completed"
    )
    assert "W&B disabled (logger.wandb.mode, or WANDB_MODE)" in (tmp_path / "off" / "run.log").read_text()
    shared = run_lander(tmp_path / "shared", *tiny("a2c"), "logger=wandb", env=lander_env(WANDB_MODE="shared"))
    assert shared.returncode == 2 and not (tmp_path / "shared").exists(), shared.stderr[-3000:]
    assert "WANDB_MODE='shared' (the environment's, which logger.wandb.mode=null follows) is not allowed" in (
        shared.stderr
    )
    given = run_lander(
        tmp_path / "given",
        *tiny("a2c"),
        "logger=wandb",
        "logger.wandb.mode=offline",
        env=lander_env(WANDB_MODE="disabled"),
    )  # the command line's mode first
    assert given.returncode == 0 and list((tmp_path / "given" / "wandb").glob("offline-run-*")), given.stderr[-3000:]
    assert "mode: null" in (tmp_path / "off" / ".hydra" / "config.yaml").read_text()  # the environment's not saved
    keyless = lander_env(WANDB_MODE="online", HOME=str(tmp_path), NETRC=str(tmp_path / "no-netrc"))
    online = run_lander(tmp_path / "online", *tiny("a2c"), "logger=wandb", env=keyless)
    assert online.returncode == 2 and not (tmp_path / "online").exists(), online.stderr[-3000:]
    assert "WANDB_MODE=online (the environment's, which logger.wandb.mode=null follows) needs a W&B API key" in (
        online.stderr
    )


def test_throughput_memory_and_cpu_are_logged(algo_run):
    _algo, run_dir = algo_run
    resources = pd.read_csv(run_dir / "metrics/resources.csv")
    assert len(resources) >= 1
    assert (resources["rss_mb"] > 50).all() and (resources["steps_per_second"] > 0).all()
    assert (resources["cpu_percent"] > 0).all() and (resources["episodes_per_minute"] >= 0).all()
    summary = read_json(run_dir / "summary.json")
    assert summary["peak_rss_mb"] >= resources["peak_rss_mb"].max() * 0.9
    assert not [c for c in resources.columns if c.startswith("gpu")] and summary["gpu"] is None  # on the CPU
    history = read_run(run_dir)["history"]
    assert any("system/rss_mb" in row and "time/steps_per_second" in row for row in history)


def test_a_run_on_a_gpu_logs_its_memory(tmp_path):
    """``device=cuda``: ``resources.csv`` gets torch's allocated, reserved and peak memory of the device (and NVML's
    utilisation where it answers), W&B the same keys, ``summary.json`` the device's name and peak. Runs where CUDA
    is (the device tool's GPU machine); skipped elsewhere, where the CPU test above checks the columns are absent."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    from helpers import run_lander, tiny

    run_dir = tmp_path / "gpu"
    proc = run_lander(run_dir, *tiny("ppo", 2048, monitor=512, logger="wandb"), "device=cuda")
    assert proc.returncode == 0, proc.stderr[-3000:]
    resources = pd.read_csv(run_dir / "metrics/resources.csv")
    assert (resources["gpu_memory_allocated_mb"] > 0).all() and (resources["gpu_peak_memory_mb"] > 0).all()
    assert (resources["gpu_memory_reserved_mb"] >= resources["gpu_memory_allocated_mb"]).all()
    summary = read_json(run_dir / "summary.json")
    assert summary["gpu"] == torch.cuda.get_device_name(0) and summary["gpu_peak_memory_mb"] > 0
    history = read_run(run_dir)["history"]
    assert any("system/gpu_memory_allocated_mb" in row for row in history)


def test_a_sweep_on_a_gpu_forks_jobs_that_use_it(tmp_path):
    """``--multirun device=cuda`` with lander's launcher (the default): the sweep's process checks the device, then
    forks each job. Where the check asks CUDA's runtime (``torch.cuda.is_available``), a forked job cannot use
    CUDA. Runs where CUDA is (the device tool's GPU machine); skipped elsewhere."""
    import torch

    if torch.cuda.device_count() == 0:  # NVML's count: this process may fork
        pytest.skip("no CUDA device on this machine")
    from helpers import lander, tiny

    sweep = tmp_path / "sweep"
    proc = lander("--multirun", "seed=0,1", *tiny("ppo", 1024), "device=cuda", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for job in ("0", "1"):
        summary = read_json(sweep / job / "summary.json")
        assert summary["status"] == "completed" and summary["gpu"] == torch.cuda.get_device_name(0), summary
