"""``seeds_per_process``: a sweep's seeds of one configuration trained side by side in one process, each leaving
the complete run directory a run of its own leaves (metrics, evaluations, checkpoints, a plain SB3 ``model.zip``,
its own ``run.log`` and W&B run, the report), stopped together by Ctrl-C with a checkpoint each and resumed by the
command the sweep prints."""

from __future__ import annotations

import json
import os
import shlex
import signal
import time

import pytest
import torch

from helpers import (
    TINY_STEPS,
    assert_same_results,
    lander,
    lander_env,
    policy_weights,
    start_lander,
    tiny,
    tiny_run,
    wait_for_checkpoints,
)
from helpers.consistency import assert_consistent
from helpers.wandb_reader import read_runs


def test_seeds_side_by_side_each_leave_a_complete_run(tmp_path):
    sweep, temporary = tmp_path / "sweep", tmp_path / "tmp"
    temporary.mkdir()
    proc = lander(
        "--multirun",
        "seed=0,1,2",
        "seeds_per_process=2",
        *tiny("ppo", 1024, eval_every=512, episodes=2, checkpoints=512, logger="wandb", report=True),
        f"hydra.sweep.dir={sweep}",
        env=lander_env(TMPDIR=str(temporary)),
        cold=True,  # W&B imported here, as a user's sweep imports it, not in a warm parent
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "jobs 0, 1: seeds side by side in process" in proc.stdout + proc.stderr  # seed 2 alone in a second process
    # nothing left in the temporary directory by the job processes (W&B's folders, made as it is imported: a
    # process that ends by os._exit runs no finalizer); torch's compile cache, one a user, is meant to stay
    assert [p.name for p in temporary.iterdir() if not p.name.startswith("torchinductor_")] == []
    from stable_baselines3 import PPO

    run_ids = set()
    for job in ("0", "1", "2"):
        run_dir = sweep / job
        summary = assert_consistent(run_dir, "completed", 1024)
        assert summary["seed"] == int(job)
        assert (run_dir / "report.html").is_file()
        assert [p.name for p in (run_dir / "checkpoints").glob("*.zip")] == ["model_512_steps.zip"]
        model = PPO.load(run_dir / "model.zip", device="cpu")  # plain SB3
        assert type(model) is PPO and model.num_timesteps == 1024
        log = (run_dir / "run.log").read_text()  # its own lines only
        assert f"seed={job}) in {run_dir}" in log
        assert all(f"seed={other})" not in log for other in ("0", "1", "2") if other != job)
        runs = read_runs(run_dir)  # its own W&B run, read back from the offline files
        assert [run["id"] for run in runs] == [summary["wandb_run_id"]]
        assert max(row["global_step"] for row in runs[0]["history"] if "global_step" in row) == 1024
        run_ids.add(summary["wandb_run_id"])
    assert len(run_ids) == 3
    weights = [PPO.load(sweep / job / "model.zip", device="cpu").policy.state_dict() for job in ("0", "1")]
    assert any((weights[0][k] != weights[1][k]).any() for k in weights[0])  # two seeds, two policies
    assert (sweep / "comparison" / "table.csv").is_file()


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
def test_one_seed_on_the_batched_engine_is_a_complete_reproducible_run_of_plain_sb3(tmp_path, algo):
    """``batched_engine=true``: one seed alone on the side-by-side engine, with W&B offline as by default. Its run
    directory is complete, its ``model.zip`` plain SB3's, the same seed gives the same results bit for bit, and
    they are not SB3's own (the switch changes the engine, so results are equivalent, not identical)."""
    from stable_baselines3 import A2C, PPO

    cls = {"ppo": PPO, "a2c": A2C}[algo]
    for name in ("a", "b"):
        tiny_run(tmp_path / name, algo, "batched_engine=true", "logger=wandb")
    tiny_run(tmp_path / "sb3", algo)
    summary = assert_consistent(tmp_path / "a", "completed", TINY_STEPS[algo])
    assert_same_results(tmp_path / "a", tmp_path / "b")
    model = cls.load(tmp_path / "a" / "model.zip", device="cpu")
    assert type(model) is cls and model.num_timesteps == TINY_STEPS[algo]
    batched, sb3 = policy_weights(tmp_path / "a"), policy_weights(tmp_path / "sb3")
    assert any(not torch.equal(batched[k], sb3[k]) for k in batched)
    (run,) = read_runs(tmp_path / "a")
    assert run["id"] == summary["wandb_run_id"]
    assert any("train/grad_norm" in row for row in run["history"])  # recorded by the batched update, free
    assert any("train/loss" in row for row in run["history"])
    assert "config.yaml" in {p.name for p in (tmp_path / "a" / ".hydra").iterdir()}


def test_a2c_seeds_side_by_side_each_leave_a_complete_run_of_plain_a2c(tmp_path):
    """``algo=a2c seeds_per_process=2`` with the default trackers and files (W&B offline, video, report): both seeds
    in one process, each with its complete run directory, its own log and W&B run, its video and report, a
    ``model.zip`` that plain SB3's ``A2C.load`` loads, and weights of its own."""
    from stable_baselines3 import A2C

    sweep = tmp_path / "sweep"
    tiny_a2c = tiny("a2c", 1000, eval_every=500, episodes=2, logger="wandb", video=True, report=True)
    proc = lander("--multirun", "seed=0,1", "seeds_per_process=2", *tiny_a2c, f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "jobs 0, 1: seeds side by side in process" in proc.stdout + proc.stderr
    for job in ("0", "1"):
        summary = assert_consistent(sweep / job, "completed", 1000)
        assert summary["seed"] == int(job)
        model = A2C.load(sweep / job / "model.zip", device="cpu")
        assert type(model) is A2C and model.num_timesteps == 1000
        log = (sweep / job / "run.log").read_text()
        assert f"seed={job}) in {sweep / job}" in log and f"seed={1 - int(job)})" not in log
        assert (sweep / job / "video.mp4").stat().st_size > 0 and (sweep / job / "report.html").is_file()
        assert [run["id"] for run in read_runs(sweep / job)] == [summary["wandb_run_id"]]
    weights = [policy_weights(sweep / job) for job in ("0", "1")]
    assert any(not torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert (sweep / "comparison" / "table.csv").is_file()


def wait_for_status(sweep, status, proc) -> None:
    deadline = time.monotonic() + 60
    while any(json.loads((sweep / job / "summary.json").read_text())["status"] != status for job in ("0", "1")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr[-3000:]
        time.sleep(0.05)


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_pause_and_ctrl_c_reach_every_seed_of_the_process_and_the_printed_command_resumes_them(tmp_path):
    sweep = tmp_path / "sweep"
    cmd = ["--multirun", "seed=0,1", "seeds_per_process=2"]
    cmd += tiny("ppo", 8192, n_steps=128, eval_every=1024, episodes=2, checkpoints=1024, video=False, report=False)
    proc = start_lander(*cmd, f"hydra.sweep.dir={sweep}", session=True)
    wait_for_checkpoints(sweep, ("0", "1"), proc)
    os.killpg(proc.pid, signal.SIGUSR1)  # pause: every seed of the process pauses, and each run says so
    wait_for_status(sweep, "paused", proc)
    os.killpg(proc.pid, signal.SIGUSR2)
    wait_for_status(sweep, "running", proc)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for job in ("0", "1"):
        summary = json.loads((sweep / job / "summary.json").read_text())
        assert summary["status"] == "interrupted" and summary["error"] == "Interrupted: SIGINT", summary
        assert (sweep / job / "checkpoints" / f"model_{summary['timesteps']}_steps.zip").is_file()
        log = (sweep / job / "run.log").read_text()  # each seed's own words of the pause, in its own log
        assert log.count("paused at") == 1 and log.count("continuing at") == 1, log[-2000:]
    continued = (proc.stdout + proc.stderr).split("continue: ")[-1].strip()
    rerun = lander(*shlex.split(continued)[3:], timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "jobs 0, 1: seeds side by side in process" in rerun.stdout + rerun.stderr
    for job in ("0", "1"):
        summary = assert_consistent(sweep / job, "completed", 8192)
        assert summary["resumed_at"] and summary["resumed_at"][0] >= 1024
