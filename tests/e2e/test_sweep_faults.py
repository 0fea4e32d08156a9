"""A sweep whose job process dies (``kill -9`` of the pid in the job's lock file) goes on under every launcher:
the other jobs finish, the dead one is reported failed, the comparison is written, the exit code is 1. A sweep
stopped by SIGINT (Ctrl-C, to the process group) or SIGTERM (to the sweep's process alone; under joblib to the group)
stops each running job with a checkpoint, starts no other, says how to continue, and that command completes it, under
lander's launcher and Hydra's joblib and submitit_local (through lander's subclasses)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import time

import pytest

from helpers import lander, lander_env, start_lander, tiny

JOB = tiny("ppo", 3072, n_steps=128, eval_every=1024, episodes=2, checkpoints=1024, video=False)


@pytest.mark.parametrize(
    "launcher",
    [
        "parallel",  # lander's, the default
        pytest.param("basic", marks=pytest.mark.slow),
        pytest.param("joblib", marks=pytest.mark.slow),
        pytest.param("submitit_local", marks=pytest.mark.slow),
    ],
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
    if launcher in ("joblib", "parallel"):
        cmd.append("hydra.launcher.n_jobs=3")
    temporary = tmp_path / "tmp"  # the sweep's temporary directory, where each job makes a folder of its own
    temporary.mkdir()
    proc = start_lander(*cmd, env=lander_env(TMPDIR=str(temporary)))
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
    assert not list(temporary.glob("lander-job-*"))  # the killed job's too, which could not remove its own


@pytest.mark.parametrize(
    "sig,to,launcher",
    [
        (signal.SIGINT, "group", "parallel"),  # lander's, the default
        (signal.SIGTERM, "sweep", "parallel"),
        (signal.SIGINT, "group", "joblib"),  # joblib by default too: its stop left a folder, seen in -m slow only
        pytest.param(signal.SIGTERM, "group", "joblib", marks=pytest.mark.slow),
        pytest.param(signal.SIGINT, "group", "submitit_local", marks=pytest.mark.slow),
    ],
    ids=["ctrl-c", "sigterm", "joblib-ctrl-c", "joblib-sigterm", "submitit-ctrl-c"],
)
def test_a_stopped_sweep_stops_its_running_jobs_with_a_checkpoint_and_is_continued(tmp_path, sig, to, launcher):
    from lander.service.store import list_sweeps

    sweep = tmp_path / "multirun" / "sweep"  # a sweep of the service's root tmp_path, started elsewhere
    budget = 4096 if to == "group" else 32768  # a signal to the sweep alone reaches its jobs 3 s later
    cmd = ["--multirun", "seed=0,1,2", *tiny("ppo", budget, n_steps=128, eval_every=1024, episodes=2, checkpoints=1024)]
    cmd += ["video.enabled=false", "report=false", f"hydra/launcher={launcher}", f"hydra.sweep.dir={sweep}"]
    cmd += [] if launcher == "submitit_local" else ["hydra.launcher.n_jobs=2"]  # submitit: every job at once
    running = ("0", "1", "2") if launcher == "submitit_local" else ("0", "1")
    proc = start_lander(*cmd, session=True)
    deadline = time.monotonic() + 240
    while not all(any((sweep / job / "checkpoints").glob("*.zip")) for job in running):  # all are training
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr[-3000:]
        time.sleep(0.05)
    if to == "sweep":  # its jobs long enough: the same sweep run again while it runs is refused at once (it
        # would wait on each running job's lock, run the jobs not started yet beside the sweep's own, compare
        # unfinished runs), the sweep's files left as they are; the service sees it run
        saved = (sweep / "multirun.yaml").read_bytes()
        again = lander(*cmd)
        assert again.returncode == 2, again.stderr[-3000:]
        assert f"sweep directory {sweep} is in use by process {proc.pid}" in again.stderr, again.stderr[-3000:]
        assert (sweep / "multirun.yaml").read_bytes() == saved and "Traceback" not in again.stderr
        assert [(s["path"], s["state"]) for s in list_sweeps(tmp_path)] == [("multirun/sweep", "sweeping")]
        assert proc.poll() is None and not (sweep / "2").exists()
    os.killpg(proc.pid, sig) if to == "group" else proc.send_signal(sig)
    assert proc.wait(timeout=120) == 128 + sig, proc.stderr[-3000:]
    for job in running:
        summary = json.loads((sweep / job / "summary.json").read_text())
        assert summary["status"] == "interrupted" and summary["error"] == f"Interrupted: {sig.name}"
        assert (sweep / job / "checkpoints" / f"model_{summary['timesteps']}_steps.zip").is_file()
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if launcher != "submitit_local":
        assert not (sweep / "2" / "summary.json").exists()  # not started after the signal
    (listed,) = list_sweeps(tmp_path)  # ended, without a comparison: the dashboard says so (not "not yet")
    assert (listed["state"], listed["error"].split(";")[0]) == (
        "ended",
        f"{len(running)} run(s): {len(running)} interrupted",
    )
    continued = (proc.stdout + proc.stderr).split("continue: ")[-1].strip()
    assert continued.startswith("python -m lander.run --multirun seed=0,1,2") and continued.endswith(f"={sweep}")
    if sig == signal.SIGINT:  # the printed command completes the sweep: the stopped jobs resumed, the others run
        rerun = lander(*shlex.split(continued)[3:], timeout=600)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        summaries = [json.loads((sweep / job / "summary.json").read_text()) for job in ("0", "1", "2")]
        assert [s["status"] for s in summaries] == ["completed"] * 3
        assert [bool(s["resumed_at"]) for s in summaries] == [job in running for job in ("0", "1", "2")]
        assert (sweep / "comparison" / "table.csv").is_file()
        assert [s["state"] for s in list_sweeps(tmp_path)] == ["compared"]


@pytest.mark.slow
def test_a_dead_joblib_worker_costs_no_job(tmp_path):
    """``kill -9`` of a loky worker (the parent of a job's process, not the job): loky ends its pool and kills the
    other workers' jobs; those resume from their checkpoints in a new pool, the dead worker's own job runs on, the
    job not started yet runs, and the sweep ends with every job completed and its comparison."""
    import psutil

    sweep = tmp_path / "sweep"
    budget = 12288
    cmd = ["--multirun", "seed=0,1,2", *tiny("ppo", budget, n_steps=128, eval_every=1024, episodes=2, checkpoints=1024)]
    cmd += ["video.enabled=false", "report=false", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    proc = start_lander(*cmd, f"hydra.sweep.dir={sweep}")
    deadline = time.monotonic() + 240
    while not all(any((sweep / job / "checkpoints").glob("*.zip")) for job in ("0", "1")):  # both are training
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr[-3000:]
        time.sleep(0.05)
    # job 0 paused (SIGUSR1) until the pool ends, so that it is still training then on a busy machine too (its
    # whole budget had run before this test's kill once, the machine loaded by other tests)
    os.kill(json.loads((sweep / "0" / ".lander.storage.lock").read_text())["pid"], signal.SIGUSR1)
    while json.loads((sweep / "0" / "summary.json").read_text())["status"] != "paused":
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr[-3000:]
        time.sleep(0.05)
    job = json.loads((sweep / "1" / ".lander.storage.lock").read_text())["pid"]
    worker = psutil.Process(job).ppid()
    assert worker != proc.pid and psutil.Process(worker).ppid() == proc.pid  # a loky worker of the sweep
    os.kill(worker, signal.SIGKILL)
    assert proc.wait(timeout=600) == 0, proc.stderr[-3000:]
    summaries = {n: json.loads((sweep / n / "summary.json").read_text()) for n in ("0", "1", "2")}
    assert {n: s["status"] for n, s in summaries.items()} == {"0": "completed", "1": "completed", "2": "completed"}
    assert all(s["timesteps"] >= budget for s in summaries.values())
    assert summaries["0"]["resumed_at"] and not summaries["1"]["resumed_at"]  # killed by loky; ran on
    said = proc.stdout + proc.stderr
    assert "a joblib worker died" in said and "job(s) 0, 2 run again in a new pool" in said, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    assert (sweep / "comparison" / "table.csv").is_file()


def test_a_sweep_whose_comparison_cannot_be_written_exits_non_zero(tmp_path):
    """Every job completes, but ``comparison/`` cannot be written (here a file stands in its place; a full disk
    gives the same OSError): before, Hydra turned the error into a ``UserWarning`` and the sweep exited 0."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "comparison").write_text("not a directory")
    job = tiny("ppo", 512, n_steps=128, eval_every=256, episodes=2, video=False, report=False)
    proc = lander("--multirun", "seed=0", *job, f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "the sweep did not complete: no comparison" in proc.stderr and "comparison" in proc.stderr
    assert json.loads((sweep / "0" / "summary.json").read_text())["status"] == "completed"  # the job's record stays
