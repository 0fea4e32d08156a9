"""A sweep cut short by SIGKILL is completed by re-running its command with ``hydra.sweep.dir=<that sweep>``:
completed jobs are skipped untouched, the killed job resumes from its newest checkpoint, the comparison covers all."""

from __future__ import annotations

import hashlib
import os
import shlex
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from helpers import lander, read_json, start_lander, tiny
from helpers.processes import LanderProcess

# job 0 is short, job 1 long enough to be killed between its first checkpoint and its end
SWEEP = [*tiny("ppo", 0, eval_every=2048, episodes=2, checkpoints=2048, video=False), "total_timesteps=2048,16384"]


def command(sweep_dir: Path, launcher: str) -> list[str]:
    return [
        "--multirun",
        f"hydra/launcher={launcher}",
        *SWEEP,
        f"hydra.sweep.dir={sweep_dir}",
    ]


def digests(job: Path) -> dict[str, str]:
    """Content and modification time of every file a run wrote (not Hydra's config copy or the log)."""
    return {
        str(p.relative_to(job)): hashlib.sha256(p.read_bytes()).hexdigest() + f"@{p.stat().st_mtime_ns}"
        for p in sorted(job.rglob("*"))
        if p.is_file() and ".hydra" not in p.parts and p.suffix != ".log"
    }


def kill_when(proc: LanderProcess, ready, timeout: float = 300) -> None:
    """SIGKILL the sweep's whole process group (launcher workers included) once ``ready()`` holds."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the sweep ended before it could be killed:\n{proc.stderr[-3000:]}"
        assert time.monotonic() < deadline, "the sweep never reached the state to kill it in"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


@pytest.mark.parametrize(
    "launcher",
    ["parallel", pytest.param("basic", marks=pytest.mark.slow), pytest.param("joblib", marks=pytest.mark.slow)],
)  # the logic is in the job, the same under every launcher; the default suite keeps the default launcher
def test_a_killed_sweep_is_completed_by_rerunning_its_command(tmp_path: Path, launcher: str) -> None:
    sweep_dir = tmp_path / "sweep"
    job0, job1 = sweep_dir / "0", sweep_dir / "1"
    proc = start_lander(*command(sweep_dir, launcher), session=True)

    def job0_done_and_job1_checkpointed() -> bool:
        done = (job0 / "summary.json").is_file() and read_json(job0 / "summary.json")["status"] == "completed"
        return done and any((job1 / "checkpoints").glob("model_*_steps.zip"))

    kill_when(proc, job0_done_and_job1_checkpointed)
    killed = read_json(job1 / "summary.json")
    assert killed["status"] == "running" and not (job1 / "model.zip").exists()  # kill -9: no chance to record
    before = digests(job0)

    rerun = lander(*command(sweep_dir, launcher), timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    assert digests(job0) == before  # the completed job was skipped: every file as it was, to the nanosecond
    assert "already completed, skipped" in (job0 / "run.log").read_text()
    resumed = read_json(job1 / "summary.json")
    assert resumed["status"] == "completed" and resumed["timesteps"] >= 16384
    assert len(resumed["resumed_at"]) == 1 and resumed["resumed_at"][0] % 2048 == 0 and resumed["resumed_at"][0] > 0
    evals = pd.read_csv(job1 / "metrics" / "eval.csv")
    assert list(evals["timesteps"]) == list(range(2048, 16385, 2048))  # each step once: no gap, no repeat
    table = pd.read_csv(sweep_dir / "comparison" / "table.csv")
    assert sorted(table["config"]) == ["total_timesteps=16384", "total_timesteps=2048"]

    done = {job: digests(job) for job in (job0, job1)}
    reordered = lander("--multirun", "hydra/launcher=basic", *reversed(SWEEP), f"hydra.sweep.dir={sweep_dir}")
    assert reordered.returncode == 0, reordered.stderr[-4000:]  # the same overrides in another order: the same sweep
    assert {job: digests(job) for job in (job0, job1)} == done  # each job found completed in its own directory


def test_a_rerun_with_other_overrides_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    (sweep_dir / "0").mkdir(parents=True)
    first = ["algo=ppo", "seed=0,1"]
    (sweep_dir / "multirun.yaml").write_text(f"hydra:\n  overrides:\n    task: {first}\n  sweeper:\n    params: null\n")
    proc = lander("--multirun", "algo=ppo", "seed=1,0", f"hydra.sweep.dir={sweep_dir}", timeout=120)
    assert proc.returncode == 2
    assert "holds a sweep with other overrides" in proc.stderr + proc.stdout and "seed=0,1" in proc.stderr + proc.stdout
    assert sorted(p.name for p in sweep_dir.iterdir()) == ["0", "multirun.yaml"] and not any(
        (sweep_dir / "0").iterdir()
    )


def test_more_seeds_for_a_sweep_are_refused_its_directory_with_the_commands_that_add_them(tmp_path: Path) -> None:
    """A sweep of seeds 0 and 1, then the same command with ``seed=0,1,2``: refused (job N is the Nth configuration
    and seed), with two commands that add seed 2, run here as printed (before: only "re-run it with the same
    command, or give a new hydra.sweep.dir"); their comparison has the three seeds."""
    sweep_dir = tmp_path / "sweep"
    small = [*tiny("a2c", 500, episodes=2), "env=cartpole"]
    first = lander("--multirun", *small, "seed=0,1", f"hydra.sweep.dir={sweep_dir}")
    assert first.returncode == 0, first.stderr[-3000:]
    before = {job: digests(sweep_dir / job) for job in ("0", "1")}
    more = lander("--multirun", *small, "seed=0,1,2", f"hydra.sweep.dir={sweep_dir}")
    assert more.returncode == 2, more.stderr[-3000:]
    said = (more.stderr + more.stdout).strip().splitlines()[-1]
    assert "holds this sweep with seed=0,1" in said and "To add seed(s) 2," in said, said
    assert {job: digests(sweep_dir / job) for job in ("0", "1")} == before and not (sweep_dir / "2").exists()
    run, compare = said.split(": ", 2)[-1].split(" && ")
    assert run.startswith("python -m lander.run --multirun ") and compare.startswith("python -m lander.compare "), said
    added = lander(*shlex.split(run)[3:])  # as printed: the new seed into a sweep of its own
    assert added.returncode == 0, added.stderr[-3000:]
    compared = lander(*shlex.split(compare)[3:], module="lander.compare")
    assert compared.returncode == 0, compared.stderr[-3000:]
    out = sweep_dir.with_name("sweep-more-seeds")
    assert read_json(out / "0" / "summary.json")["seed"] == 2
    table = pd.read_csv(sweep_dir.with_name("sweep-all-seeds") / "table.csv")
    assert list(table["seeds"]) == [3], table
    assert list(pd.read_csv(sweep_dir / "comparison" / "table.csv")["seeds"]) == [2]  # the first sweep's, its own


@pytest.mark.slow  # 35 s; the default suite keeps test_sweep.py's resumed (not killed) Optuna study
def test_a_killed_optuna_search_is_completed_to_n_trials(tmp_path: Path) -> None:
    import optuna

    sweep_dir = tmp_path / "optuna"
    cmd = [
        "hparams_search=ppo_optuna",
        "hydra.sweeper.n_trials=3",
        *[o for o in SWEEP if not o.startswith(("algo=", "total_timesteps="))],
        "total_timesteps=12288",
        "eval.freq=0",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    proc = start_lander(*cmd, session=True)

    def second_trial_running() -> bool:
        summaries = [read_json(p) for p in sweep_dir.glob("*/summary.json")]
        return sum(s["status"] == "completed" for s in summaries) == 1 and len(summaries) == 2

    kill_when(proc, second_trial_running)
    rerun = lander(*cmd, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    study = optuna.load_study(study_name="ppo_lunar_lander", storage=f"sqlite:///{sweep_dir}/optuna.db")
    states = [t.state.name for t in study.trials]
    assert states.count("COMPLETE") == 3 and states.count("FAIL") == 1 and "RUNNING" not in states
    killed = next(t for t in study.trials if t.state.name == "FAIL")
    assert any(t.params == killed.params for t in study.trials if t.state.name == "COMPLETE")  # run again
    assert len(list((sweep_dir / "attempts").iterdir())) == 1  # the killed trial's directory, kept aside
    assert len(pd.read_csv(sweep_dir / "comparison" / "table.csv")) == 3
