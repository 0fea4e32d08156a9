"""A sweep whose job process dies (``kill -9`` of the pid in the job's lock file) goes on under every launcher:
the other jobs finish, the dead one is reported failed, the comparison is written, the exit code is 1."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from helpers import start_lander, tiny

JOB = tiny("ppo", 3072, n_steps=128, eval_every=1024, episodes=2, checkpoints=1024, video=False)


@pytest.mark.parametrize(
    "launcher",
    ["basic", pytest.param("joblib", marks=pytest.mark.slow), pytest.param("submitit_local", marks=pytest.mark.slow)],
)
def test_a_killed_job_leaves_the_other_jobs_and_the_comparison(tmp_path, launcher):
    sweep = tmp_path / "sweep"
    cmd = [
        "--multirun",
        "seed=0,1,2",
        *JOB,
        f"hydra/launcher={launcher}",
        f"hydra.sweep.dir={sweep}",
    ]
    if launcher == "joblib":
        cmd.append("hydra.launcher.n_jobs=3")
    proc = start_lander(*cmd)
    victim = sweep / "1"
    deadline = time.monotonic() + 240
    while not (victim / "summary.json").is_file():  # job 1 is training (its process holds the lock)
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pid = json.loads((victim / ".lander.storage.lock").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=600)
    err = proc.stderr
    assert proc.returncode == 1, err[-3000:]
    statuses = {job: json.loads((sweep / job / "summary.json").read_text())["status"] for job in ("0", "1", "2")}
    assert statuses == {"0": "completed", "1": "failed", "2": "completed"}
    assert "killed by SIGKILL" in json.loads((victim / "summary.json").read_text())["error"]
    assert (sweep / "comparison/table.csv").is_file()
    assert "job 1" in err and "did not complete" in err
