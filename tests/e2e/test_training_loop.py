"""Training-loop instrumentation: resources logged, episode budget, early stopping, NaN detection."""

from __future__ import annotations

import pandas as pd

from helpers import read_json, run_lander
from helpers.wandb_reader import read_run

SMALL = [
    "algo=ppo",
    "n_envs=2",
    "algo.model.n_steps=128",
    "eval.freq=512",
    "eval.episodes=2",
    "eval.n_envs=2",
    "progress_bar=false",
    "video.enabled=false",
    "checkpoint_freq=0",
    "logger=none",
]


def test_throughput_memory_and_cpu_are_logged(algo_run):
    _algo, run_dir = algo_run
    resources = pd.read_csv(run_dir / "metrics/resources.csv")
    assert len(resources) >= 1
    assert (resources["rss_mb"] > 50).all() and (resources["steps_per_second"] > 0).all()
    assert (resources["cpu_percent"] > 0).all() and (resources["episodes_per_minute"] >= 0).all()
    summary = read_json(run_dir / "summary.json")
    assert summary["peak_rss_mb"] >= resources["peak_rss_mb"].max() * 0.9
    history = read_run(run_dir)["history"]
    assert any("system/rss_mb" in row and "time/steps_per_second" in row for row in history)


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
