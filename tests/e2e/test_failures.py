"""A run that fails or is stopped keeps what it recorded, says so in summary.json and finishes W&B."""

from __future__ import annotations

import signal
import time

from helpers import read_json, run_lander, start_lander
from helpers.wandb_reader import read_run


def test_exception_marks_the_run_failed_and_finishes_wandb(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_lander(run_dir, "n_envs=2", "algo.model.n_steps=64", "algo.model.batch_size=1", "progress_bar=false")
    assert proc.returncode == 1
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "failed" and "batch_size" in summary["error"]
    assert "Traceback" in (run_dir / "run.log").read_text()
    assert (run_dir / "environment/versions.json").is_file()
    assert read_run(run_dir)["exit_code"] == 1


def test_sigterm_mid_run_keeps_metrics_and_a_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [
        "n_envs=2",
        "algo.model.n_steps=128",
        "total_timesteps=500000",
        "eval.freq=512",
        "eval.episodes=2",
        "progress_bar=false",
        f"hydra.run.dir={run_dir}",
    ]
    proc = start_lander(*cmd)
    evals = run_dir / "metrics/eval.csv"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (evals.is_file() and len(evals.read_text().splitlines()) >= 3):
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "interrupted" and summary["error"] == "Interrupted: SIGTERM"
    assert 0 < summary["timesteps"] < 500000
    assert (run_dir / f"checkpoints/model_{summary['timesteps']}_steps.zip").is_file()
    assert len(evals.read_text().splitlines()) >= 3
    assert len((run_dir / "metrics/train_episodes.csv").read_text().splitlines()) > 1
    run = read_run(run_dir)
    assert run["exit_code"] != 0 and any("eval/mean" in h for h in run["history"])
