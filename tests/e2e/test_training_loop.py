"""Training-loop rules: episode budget, early stopping, NaN detection (resources logged: test_artifacts.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from helpers import REPO, lander_env, read_json, run_lander, tiny

SMALL = tiny("ppo", 0, n_steps=128, eval_every=512, episodes=2, video=False)  # each test gives its budget


def test_early_stop_on_a_reward_threshold(tmp_path):
    proc = run_lander(tmp_path / "run", *SMALL, "total_timesteps=8192", "early_stop.reward_threshold=-100000")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run/summary.json")
    assert "reached early_stop.reward_threshold=-100000" in summary["stopped_early"]
    assert summary["timesteps"] < 8192
    evals = pd.read_csv(tmp_path / "run/metrics/eval.csv")
    assert list(evals["timesteps"]) == [summary["timesteps"]]  # the final evaluation is that one, not a repeat


def test_early_stop_after_evaluations_without_improvement(tmp_path):
    proc = run_lander(tmp_path / "run", *SMALL, "total_timesteps=200000", "early_stop.patience=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run/summary.json")
    assert "no new best eval mean in 2 evaluations" in summary["stopped_early"] and summary["timesteps"] < 200000
    means = list(pd.read_csv(tmp_path / "run/metrics/eval.csv")["mean"])
    assert max(means[-2:]) <= max(means[:-2])


def test_episode_budget(tmp_path):
    proc = run_lander(tmp_path / "run", *SMALL, "total_timesteps=200000", "max_episodes=6")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run/summary.json")
    assert "max_episodes=6" in summary["stopped_early"] and summary["timesteps"] < 200000
    episodes = pd.read_csv(tmp_path / "run/metrics/train_episodes.csv")
    assert 6 <= len(episodes) <= 7  # both envs may finish on the same step


def test_nan_in_the_parameters_stops_the_run_with_a_clear_message(tmp_path):
    proc = run_lander(tmp_path / "run", *SMALL, "total_timesteps=4096", "algo.model.learning_rate=1e30")
    assert proc.returncode == 1
    summary = read_json(tmp_path / "run/summary.json")
    assert summary["status"] == "failed"
    assert summary["error"].startswith("FloatingPointError: NaN or inf in policy parameters")
    assert "NaN or inf in policy parameters" in (tmp_path / "run/run.log").read_text()


def test_peak_memory_is_the_whole_runs_as_the_kernel_counts_it(tmp_path):
    """``peak_rss_mb`` is the run's largest resident memory with the video and report included: what the kernel
    reports for the process (``wait4``'s ``ru_maxrss``, as ``/usr/bin/time``), not a sample taken mid-run."""
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "lander.run", *SMALL, "total_timesteps=1024", f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=lander_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # a new interpreter (not forked warm): its own memory only
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    peak = read_json(run_dir / "summary.json")["peak_rss_mb"]
    assert peak == pytest.approx(usage.ru_maxrss / 1024, rel=0.02)  # Linux: KiB
