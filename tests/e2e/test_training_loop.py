"""Training-loop rules: episode budget, early stopping, NaN detection, pause, memory limit (resources logged:
test_artifacts.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from helpers import REPO, assert_same_results, lander, lander_env, read_json, run_lander, start_lander, tiny

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


def test_log_interval_is_how_often_sb3s_records_are_written(tmp_path):
    proc = run_lander(tmp_path / "run", *SMALL, "n_envs=4", "total_timesteps=3072", "log_interval=3")  # 6 rollouts
    assert proc.returncode == 0, proc.stderr[-3000:]
    progress = pd.read_csv(tmp_path / "run/metrics/sb3_progress.csv")
    assert progress["time/iterations"].tolist() == [3, 6]  # PPO's default would write all six


def test_episode_budget(tmp_path):
    proc = run_lander(tmp_path / "run", *SMALL, "total_timesteps=200000", "max_episodes=6")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run/summary.json")
    assert "max_episodes=6" in summary["stopped_early"] and summary["timesteps"] < 200000
    episodes = pd.read_csv(tmp_path / "run/metrics/train_episodes.csv")
    assert 6 <= len(episodes) <= 7  # both envs may finish on the same step


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        ("false", "NaN or inf in policy parameters"),  # SB3's update: lander's NonFiniteGuard at the next rollout
        ("true", "non-finite policy parameters after the update at 256 timesteps"),  # the engine's own check
    ],
)
def test_nan_in_the_parameters_stops_the_run_with_a_clear_message(tmp_path, engine, message):
    overrides = ("total_timesteps=4096", "algo.model.learning_rate=1e30", f"batched_engine={engine}")
    proc = run_lander(tmp_path / "run", *SMALL, *overrides)
    assert proc.returncode == 1
    summary = read_json(tmp_path / "run/summary.json")
    assert summary["status"] == "failed"
    assert summary["error"].startswith(f"FloatingPointError: {message}")
    assert message in (tmp_path / "run/run.log").read_text()


def test_peak_memory_is_the_whole_runs_as_the_kernel_counts_it(tmp_path):
    """``peak_rss_mb`` is the run's largest resident memory with the video and report included: what the kernel
    reports for the process (``wait4``'s ``ru_maxrss``, as ``/usr/bin/time``), not a sample taken mid-run."""
    run_dir = tmp_path / "run"
    run = tiny("ppo", 1024, n_steps=128, eval_every=512, episodes=2, video=True, report=True)
    cmd = [sys.executable, "-m", "lander.run", *run, f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=lander_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # a new interpreter (not forked warm): its own memory only
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    peak = read_json(run_dir / "summary.json")["peak_rss_mb"]
    assert peak == pytest.approx(usage.ru_maxrss / 1024, rel=0.02)  # Linux: KiB


def wait_for(predicate, proc, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline and proc.poll() is None, f"waiting for {what}: {proc.stderr[-3000:]}"
        time.sleep(0.02)


def test_a_paused_run_waits_then_goes_on_to_the_same_results(tmp_path):
    """SIGUSR1 pauses a run at its next step (``status: paused``, no step taken, its clock stopped); SIGUSR2 lets
    it go on, to exactly the results of a run that never paused."""
    run = [*SMALL, "total_timesteps=4096", "monitor_freq=256"]
    assert run_lander(tmp_path / "plain", *run).returncode == 0
    paused = tmp_path / "paused"
    proc = start_lander(*run, f"hydra.run.dir={paused}")
    resources = paused / "metrics" / "resources.csv"
    wait_for(lambda: resources.is_file() and len(resources.read_text().splitlines()) > 2, proc, "training")
    proc.send_signal(signal.SIGUSR1)
    wait_for(lambda: read_json(paused / "summary.json")["status"] == "paused", proc, "the pause")
    held = resources.read_text()
    time.sleep(1.5)
    assert resources.read_text() == held and read_json(paused / "summary.json")["status"] == "paused"
    proc.send_signal(signal.SIGUSR2)
    assert proc.wait(timeout=300) == 0, proc.stderr[-3000:]
    assert read_json(paused / "summary.json")["status"] == "completed"
    assert_same_results(tmp_path / "plain", paused)
    log = (paused / "run.log").read_text()
    at = re.search(r"paused at (\d+) timesteps", log)
    assert at and f"continuing at {at[1]} timesteps" in log, log  # no step taken while paused
    # that its clock stands still is a unit test (test_units.py): a spacing of samples here would depend on the load


def test_a_memory_limit_stops_the_run_as_ctrl_c_would_and_it_resumes(tmp_path):
    """``memory_limit_mb`` below the footprint before training: exit 2 naming it, nothing trained. Above it but
    below what the model adds (1024-unit layers: ~40 MB): stopped at the first sample, ``interrupted`` with the
    reason and a checkpoint, exit 1; resumed with no limit, it completes."""
    run = [*SMALL, "total_timesteps=512", "monitor_freq=128", "+algo.model.policy_kwargs={net_arch:[1024,1024]}"]
    refused = run_lander(tmp_path / "small", *run, "memory_limit_mb=1")
    assert refused.returncode == 2, refused.stderr[-3000:]
    said = re.search(r"memory_limit_mb=1 is below this run's footprint before training, (\d+) MB", refused.stdout)
    assert said, refused.stderr[-3000:]
    footprint = int(said[1])
    assert not (tmp_path / "small").exists()  # refused: no directory left, as for any bad input
    limit = footprint + 8
    stopped = run_lander(tmp_path / "run", *run, f"memory_limit_mb={limit}")
    assert stopped.returncode == 1, stopped.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "interrupted"
    assert re.fullmatch(rf"LimitReached: memory limit {limit} MB reached at \d+ MB", summary["error"]), summary["error"]
    assert (tmp_path / "run" / "checkpoints" / f"model_{summary['timesteps']}_steps.zip").is_file()
    resumed = lander(f"resume={tmp_path / 'run'}", "memory_limit_mb=null")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert read_json(tmp_path / "run" / "summary.json")["status"] == "completed"
