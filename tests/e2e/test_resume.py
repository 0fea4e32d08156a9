"""Interrupted and killed runs resume in their own directory from the newest checkpoint that loads."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from stable_baselines3 import PPO

from helpers import lander, read_json, run_lander, start_lander, tiny
from helpers.wandb_reader import read_runs

BUDGET = 4096  # 16 rollouts of 2 envs x 128 steps
SMALL_PPO = tiny("ppo", BUDGET, n_steps=128, eval_every=1024, episodes=2, checkpoints=1024, logger="wandb")


def start(run_dir: Path, *extra: str) -> subprocess.Popen:
    cmd = [*SMALL_PPO, *extra, f"hydra.run.dir={run_dir}"]
    return start_lander(*cmd)


def wait_for(condition, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def resume(run_dir: Path) -> subprocess.CompletedProcess:
    proc = lander(f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def assert_continuous_record(run_dir: Path, keep: int | None = 3) -> None:
    """The finished run: the budget reached exactly, metrics without duplicates or gaps."""
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed" and summary["timesteps"] == BUDGET
    assert PPO.load(run_dir / "model.zip", device="cpu").num_timesteps == BUDGET
    episodes = pd.read_csv(run_dir / "metrics/train_episodes.csv")
    assert list(episodes["episode"]) == list(range(1, len(episodes) + 1))
    assert episodes["timesteps"].is_monotonic_increasing
    evals = pd.read_csv(run_dir / "metrics/eval.csv")
    assert list(evals["timesteps"]) == [*range(1024, BUDGET, 1024), BUDGET]  # every evaluation once
    progress = pd.read_csv(run_dir / "metrics/sb3_progress.csv")
    assert progress["time/total_timesteps"].is_unique and progress["time/total_timesteps"].is_monotonic_increasing
    if keep:
        assert len(list((run_dir / "checkpoints").glob("model_*_steps.zip"))) <= keep  # checkpoint_keep


@pytest.mark.parametrize(  # SIGTERM's own path runs by default in test_faults.py (finish:completed:TERM)
    "sig, code", [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow)]
)
def test_interrupted_run_resumes_to_the_budget(tmp_path, sig, code):
    run_dir = tmp_path / "run"
    proc = start(run_dir)
    wait_for(
        lambda: (
            (run_dir / "metrics/eval.csv").is_file()
            and len((run_dir / "metrics/eval.csv").read_text().splitlines()) >= 3
        )
    )
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == code
    stopped = read_json(run_dir / "summary.json")
    assert stopped["status"] == "interrupted" and 0 < stopped["timesteps"] < BUDGET
    assert stopped["timesteps"] % 256 == 0  # on-policy: saved at the rollout boundary
    assert (run_dir / f"checkpoints/model_{stopped['timesteps']}_steps.zip").is_file()
    done = resume(run_dir)
    assert_continuous_record(run_dir)
    summary = read_json(run_dir / "summary.json")
    assert summary["resumed_at"] == [stopped["timesteps"]]
    # the whole run's time, both attempts, as the closing line says: not the resumed stretch's alone
    assert summary["wall_seconds"] >= stopped["wall_seconds"] + summary["train_seconds"]
    said = f"{BUDGET:,} steps in {summary['wall_seconds']:.0f} s"
    assert said in done.stdout + done.stderr
    assert summary["error"] is None  # the interruption is history: resumed_at records it
    assert summary["wandb_run_id"] == stopped["wandb_run_id"]  # the same W&B run goes on
    first, second = read_runs(run_dir)  # one offline record per part, both of the one run
    assert first["id"] == second["id"] == summary["wandb_run_id"]
    assert first["exit_code"] != 0 and second["exit_code"] == 0
    resumed_steps = [row["global_step"] for row in second["history"] if "eval/mean" in row]
    assert resumed_steps and min(resumed_steps) > stopped["timesteps"] and max(resumed_steps) == BUDGET
    assert "resuming from model_" in (run_dir / "run.log").read_text()


def test_killed_run_resumes_from_the_newest_checkpoint_that_loads(tmp_path):
    run_dir = tmp_path / "run"
    proc = start(run_dir, "logger=none", "checkpoint_keep=0")
    checkpoints = run_dir / "checkpoints"
    wait_for(lambda: len(list(checkpoints.glob("model_*_steps.zip"))) >= 3)
    proc.kill()  # SIGKILL: nothing recorded on the way out
    proc.wait(timeout=60)
    assert read_json(run_dir / "summary.json")["status"] == "running"
    newest = max(checkpoints.glob("model_*_steps.zip"), key=lambda p: int(p.name.split("_")[1]))
    newest.write_bytes(newest.read_bytes()[:200])  # a truncated checkpoint is skipped for the one before
    out = resume(run_dir)
    log = (run_dir / "run.log").read_text()
    assert f"checkpoint {newest.name} not used" in log + out.stderr
    assert_continuous_record(run_dir, keep=None)
    assert read_json(run_dir / "summary.json")["resumed_at"][0] < int(newest.name.split("_")[1])


def test_resume_refuses_a_completed_run_and_other_overrides(tmp_path):
    proc = lander(f"resume={tmp_path}", timeout=120)
    assert proc.returncode == 2 and "is not a lander run directory" in proc.stderr


def test_off_policy_checkpoints_carry_the_replay_buffer(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_lander(
        run_dir,
        "algo=dqn",
        "total_timesteps=1200",
        "algo.model.learning_starts=200",
        "eval.freq=600",
        "eval.episodes=2",
        "eval.n_envs=2",
        "checkpoint_freq=300",
        "checkpoint_keep=2",
        "checkpoint_replay_buffer=true",
        "progress_bar=false",
        "video.enabled=false",
        "logger=none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert names == [
        "model_1200_steps.zip",  # the newest 2: the last one as the run ends, with its buffer (before, the final
        "model_900_steps.zip",  # model was model.zip alone, and a run trained further resumed from it with an
        "replay_buffer_1200_steps.npz",  # empty buffer, warned: its 1,200 transitions lost)
        "replay_buffer_900_steps.npz",  # arrays only: nothing is unpickled on resume
    ]
    from stable_baselines3 import DQN

    from lander.storage.replay import load_buffer

    model = DQN.load(run_dir / "checkpoints/model_900_steps.zip", device="cpu", buffer_size=5000)
    load_buffer(model.replay_buffer, run_dir / "checkpoints/replay_buffer_900_steps.npz")
    assert model.num_timesteps == 900 and model.replay_buffer.size() == 900  # every transition up to the checkpoint
    assert model.replay_buffer.rewards[:900].any() and not model.replay_buffer.rewards[900:].any()
    further = lander(f"resume={run_dir}", "total_timesteps=1500")
    assert further.returncode == 0, further.stderr[-3000:]
    log = (run_dir / "run.log").read_text()
    assert "resuming from model_1200_steps.zip" in log and "no replay buffer saved" not in log, log[-3000:]
