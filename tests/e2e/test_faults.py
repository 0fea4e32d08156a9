"""Fault injection on real runs: ``kill -9``, SIGINT and SIGTERM at each phase of a tiny run (``LANDER_FAULT``,
:mod:`lander.faults`), a full disk, two writers on one directory. After each fault the whole run directory
is consistent (:func:`helpers.consistency.assert_consistent`), and ``resume=`` ends exactly at the budget."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from helpers import (
    REPO,
    assert_same_results,
    lander,
    lander_env,
    read_json,
    run_lander,
    start_lander,
    tiny,
    wait_for_checkpoints,
)
from helpers.consistency import assert_consistent, temporaries
from helpers.wandb_reader import read_runs

BUDGET = 1024
RUN = tiny("ppo", BUDGET, n_steps=128, eval_every=256, checkpoints=256, monitor=256, video=True, report=True)
KILLS = [  # (LANDER_FAULT, whether the default suite runs it; the others are @slow)
    ("start:summary:KILL", False),  # right after summary.json says running
    ("start:snapshot:KILL", True),  # during the environment snapshot, before any checkpoint: resumes from 0
    ("write:model_:KILL", False),  # the first checkpoint written to its temporary file, not yet renamed
    ("write:model_@3:KILL", True),  # the third checkpoint, likewise
    ("row:eval.csv@2:KILL", True),  # half of an evaluation's row written
    ("row:eval_episodes.csv@4:KILL", False),  # an evaluation's episodes half written
    ("row:train_episodes.csv@3:KILL", False),
    ("row:resources.csv@2:KILL", False),
    ("write:best_model.zip@2:KILL", False),
    ("write:summary.json@2:KILL", False),
    ("finish:trained:KILL", False),  # trained, before model.zip
    ("write:eval.json:KILL", False),  # the final evaluation's rows written, eval.json not yet
    ("finish:plot:KILL", False),
    ("finish:video:KILL", True),
]
SIGNALS = [  # (LANDER_FAULT, status after the signal)
    ("start:summary:INT", "interrupted"),
    ("start:snapshot:TERM", "interrupted"),
    ("row:train_episodes.csv@5:INT", "interrupted"),
    ("write:model_@2:TERM", "interrupted"),
    ("finish:trained:TERM", "interrupted"),
    ("write:eval.json:INT", "interrupted"),
    ("finish:video:INT", "interrupted"),
    ("finish:completed:TERM", "completed"),  # after the run completed: it stays completed
]


def faulted_run(run_dir: Path, fault: str, *extra: str) -> subprocess.CompletedProcess:
    return run_lander(run_dir, *RUN, *extra, env=lander_env(LANDER_FAULT=fault))


def resume_to_budget(run_dir: Path) -> dict:
    proc = lander(f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not temporaries(run_dir), temporaries(run_dir)
    return assert_consistent(run_dir, "completed", BUDGET)


@pytest.mark.parametrize("fault", [pytest.param(f, marks=[] if quick else [pytest.mark.slow]) for f, quick in KILLS])
def test_kill_9_at_any_point_leaves_complete_files_and_resumes_to_the_budget(tmp_path, fault):
    run_dir = tmp_path / "run"
    proc = faulted_run(run_dir, fault)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert_consistent(run_dir, "running")  # kill -9 leaves no chance to say more
    resume_to_budget(run_dir)


@pytest.mark.parametrize(
    "fault, status",
    [pytest.param(f, s, marks=[] if i in (0, 2, 5, 7) else [pytest.mark.slow]) for i, (f, s) in enumerate(SIGNALS)],
)
def test_a_signal_in_each_phase_leaves_a_true_status(tmp_path, fault, status):
    run_dir = tmp_path / "run"
    proc = faulted_run(run_dir, fault)
    assert proc.returncode == 128 + signal.Signals[f"SIG{fault.rsplit(':', 1)[1]}"], proc.stderr[-3000:]
    summary = assert_consistent(run_dir, status, BUDGET)
    if status == "completed":
        return
    assert summary["error"].startswith("Interrupted: SIG")
    resume_to_budget(run_dir)  # evaluated once at the budget, whatever phase the signal came in


def test_wandb_run_id_is_recorded_at_once_and_resumed_into(tmp_path):
    run_dir = tmp_path / "run"
    proc = faulted_run(run_dir, "start:wandb:KILL", "logger=wandb")
    assert proc.returncode == -signal.SIGKILL
    run_id = read_json(run_dir / "summary.json")["wandb_run_id"]
    assert run_id
    proc = lander(f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_json(run_dir / "summary.json")["wandb_run_id"] == run_id
    assert all(run_id in p.name for p in (run_dir / "wandb").glob("offline-run-*"))


def test_wandb_holds_every_row_of_the_csv_files_after_a_kill_and_a_resume(tmp_path):
    """W&B's offline writer loses what it had not written when its process is killed: the resumed run logs those
    rows again (from the CSV files), so W&B's history and the CSV files hold the same evaluations and episodes."""
    import pandas as pd

    run_dir = tmp_path / "run"
    proc = faulted_run(run_dir, "row:eval.csv@3:KILL", "logger=wandb")  # evaluations 256 and 512 recorded, a
    assert proc.returncode == -signal.SIGKILL  # checkpoint at 512, then killed writing the third
    resume_to_budget(run_dir)
    history = [row for run in read_runs(run_dir) for row in run["history"]]
    logged = {(row["global_step"], row["eval/mean"]) for row in history if "eval/mean" in row}
    evals = pd.read_csv(run_dir / "metrics" / "eval.csv")
    assert logged == set(zip(evals["timesteps"], evals["mean"], strict=True))
    episodes = [(row["global_step"], row["train/episode_return"]) for row in history if "train/episodes" in row]
    train = pd.read_csv(run_dir / "metrics" / "train_episodes.csv")
    assert sorted(set(episodes)) == sorted(zip(train["timesteps"], train["return"], strict=True))
    assert read_json(run_dir / "summary.json")["tracked_to"] == BUDGET


def test_a_signal_during_the_wandb_upload_leaves_the_run_completed(tmp_path):
    run_dir = tmp_path / "run"
    proc = faulted_run(run_dir, "finish:wandb:INT", "logger=wandb")
    assert proc.returncode == 130
    assert_consistent(run_dir, "completed", BUDGET)


def sigint_caught(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGINT (``SigCgt`` in ``/proc/<pid>/status``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGINT - 1)))


def test_a_background_run_stops_on_sigint_from_its_first_moment(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "lander.run", *RUN, f"hydra.run.dir={run_dir}"]
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731  # as `cmd &` in a script
    proc = subprocess.Popen(cmd, cwd=REPO, env=lander_env(), preexec_fn=ignore_sigint, stderr=subprocess.PIPE)
    # as soon as lander.run's first line has installed its handler (the kernel says SIGINT is caught), while it is
    # still importing: a fixed sleep raced the interpreter's start-up on a busy machine (the signal came first and
    # was ignored, as it should be before lander runs at all)
    deadline = time.monotonic() + 60
    while not sigint_caught(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130, proc.communicate()[1].decode(errors="replace")[-3000:]
    assert not (run_dir / "summary.json").is_file() or read_json(run_dir / "summary.json")["status"] != "running"


def test_two_writers_are_refused_and_a_stale_lock_is_taken_over(tmp_path):
    run_dir = tmp_path / "run"
    assert faulted_run(run_dir, "write:model_@2:KILL").returncode == -signal.SIGKILL
    stale = json.loads((run_dir / ".lander.storage.lock").read_text())["pid"]  # its owner is dead: stale
    first = start_lander(f"resume={run_dir}")
    deadline = time.monotonic() + 60
    while json.loads((run_dir / ".lander.storage.lock").read_text() or "{}").get("pid") in (None, stale):
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    first.send_signal(signal.SIGSTOP)  # holds the lock, mid-run
    try:
        summary_before = (run_dir / "summary.json").read_bytes()
        second = lander(f"resume={run_dir}", timeout=120)
        assert second.returncode == 2 and f"in use by process {first.pid}" in second.stderr
        assert (run_dir / "summary.json").read_bytes() == summary_before  # the refused one wrote nothing
        fresh = run_lander(run_dir, *RUN, timeout=120)  # nor may a new run be started into it
        assert fresh.returncode == 2 and "in use by process" in fresh.stderr
    finally:
        first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=300) == 0
    assert_consistent(run_dir, "completed", BUDGET)


@contextlib.contextmanager
def small_disk(tmp_path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted in ``tmp_path`` (root only; skipped elsewhere)."""
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_fails_the_run_truly_and_it_resumes_elsewhere(tmp_path):
    with small_disk(tmp_path, "360k") as mount:
        run_dir = mount / "run"
        proc = run_lander(run_dir, *RUN)
        assert proc.returncode == 1
        summary = assert_consistent(run_dir, "failed")
        assert "No space left on device" in summary["error"]
        assert not temporaries(run_dir)  # nothing half-written left behind
        moved = tmp_path / "moved"
        shutil.copytree(run_dir, moved)
    resume_to_budget(moved)


def test_a_disk_that_fills_while_the_report_is_written_fails_the_run(tmp_path):
    """Everything but the report (~5 MB) fits: the run is failed, saying so, not completed without its report."""
    with small_disk(tmp_path, "1200k") as mount:
        run_dir = mount / "run"
        proc = run_lander(run_dir, *RUN)
        assert proc.returncode == 1
        summary = read_json(run_dir / "summary.json")
        assert summary["status"] == "failed" and (run_dir / "model.zip").is_file()  # it had trained to its end
        assert summary["error"] == f"OSError: [Errno 28] No space left on device: '{run_dir / 'report.html'}'"
        assert not (run_dir / "report.html").exists() and not temporaries(run_dir)


@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_a_signal_to_the_process_group_stops_a_subproc_run_as_interrupted(tmp_path, sig):
    """Ctrl-C reaches every process of the terminal's group, the env processes of ``vec_env=subproc`` too, as
    SLURM's and ``timeout``'s SIGTERM do: the run stops at its next step, ``interrupted`` with a checkpoint, exit
    130/143, no traceback, and resumes (before: the env processes died first and the run's next step broke their
    pipes: ``failed`` with ``BrokenPipeError``, no checkpoint, three tracebacks, exit 1)."""
    run_dir = tmp_path / "run"
    run = tiny("ppo", 200_000, n_steps=64, eval_every=100_000, checkpoints=256)
    proc = start_lander(*run, "vec_env=subproc", f"hydra.run.dir={run_dir}", session=True)
    try:
        wait_for_checkpoints(run_dir.parent, (run_dir.name,), proc)  # training, in its env processes
        os.killpg(proc.pid, sig)
        assert proc.wait(timeout=120) == 128 + sig, proc.stderr[-3000:]
    finally:  # a run left hanging, its env processes with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    summary = assert_consistent(run_dir, "interrupted")
    assert summary["error"] == f"Interrupted: {sig.name}"
    assert (run_dir / "checkpoints" / f"model_{summary['timesteps']}_steps.zip").is_file()
    resumed = lander(f"resume={run_dir}", f"total_timesteps={summary['timesteps'] + 256}")  # a shorter budget
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert assert_consistent(run_dir, "completed")["timesteps"] >= summary["timesteps"] + 256


@pytest.mark.slow
def test_a_subproc_run_pauses_and_goes_on_by_signals_to_its_process_group(tmp_path):
    """SIGUSR1 and SIGUSR2 to the whole group pause the run and let it go on (they ended its env processes: by
    default these signals end a process), then Ctrl-C stops it as interrupted."""
    run_dir = tmp_path / "run"
    run = tiny("ppo", 200_000, n_steps=64, eval_every=100_000, checkpoints=256)
    proc = start_lander(*run, "vec_env=subproc", f"hydra.run.dir={run_dir}", session=True)

    def wait_until(done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 240
        while not done():
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr[-3000:]
            time.sleep(0.05)

    def newest_checkpoint() -> int:
        return max((int(p.name.split("_")[1]) for p in (run_dir / "checkpoints").glob("model_*_steps.zip")), default=0)

    try:
        wait_for_checkpoints(run_dir.parent, (run_dir.name,), proc)
        os.killpg(proc.pid, signal.SIGUSR1)
        wait_until(lambda: read_json(run_dir / "summary.json")["status"] == "paused")
        paused_at = newest_checkpoint()
        os.killpg(proc.pid, signal.SIGUSR2)
        wait_until(lambda: newest_checkpoint() > paused_at)  # stepping its env processes again
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=120) == 130, proc.stderr[-3000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert assert_consistent(run_dir, "interrupted")["timesteps"] > paused_at


@pytest.mark.slow  # the default suite has the same broken pipe from an env that raises (test_user_extensions.py)
def test_an_env_process_killed_fails_the_run_at_once_and_it_resumes(tmp_path):
    """``vec_env=subproc``, one env process killed (the OOM killer, a segfault in an env's C code): the run, recorded
    failed, waited for ever in SB3's ``SubprocVecEnv.close`` for answers the other env processes had given already.
    Now it ends, exit 1, ``summary.json`` naming the env process and the signal, and resumes from its checkpoint."""
    run_dir = tmp_path / "run"
    run = tiny("ppo", 200_000, n_steps=64, eval_every=100_000, checkpoints=256)
    proc = start_lander(*run, "vec_env=subproc", f"hydra.run.dir={run_dir}", session=True)
    try:
        wait_for_checkpoints(run_dir.parent, (run_dir.name,), proc)  # training, in its env processes
        # the env processes: children of multiprocessing's fork server, itself a child of the run's process
        env_processes = [p for p in psutil.Process(proc.pid).children(recursive=True) if p.ppid() != proc.pid]
        assert len(env_processes) == 2, env_processes
        env_processes[1].kill()
        assert proc.wait(timeout=120) == 1, proc.stderr[-3000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    summary = assert_consistent(run_dir, "failed")
    assert summary["error"].startswith("EnvProcessEnded: env process "), summary["error"]
    assert summary["error"].endswith(" of 2 (vec_env=subproc) ended: killed by SIGKILL"), summary["error"]
    resumed = lander(f"resume={run_dir}", f"total_timesteps={summary['timesteps'] + 256}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert assert_consistent(run_dir, "completed")["timesteps"] >= summary["timesteps"] + 256


def test_subproc_envs_give_the_same_results_as_one_process(tmp_path):
    """``vec_env=subproc`` steps the same envs in processes of their own: the same metrics and weights as
    ``vec_env=dummy`` (for LunarLander, lander's lean vec env in the run's process)."""
    run = tiny("ppo", 1024, n_steps=128, eval_every=512)
    for vec_env in ("dummy", "subproc"):
        proc = run_lander(tmp_path / vec_env, *run, f"vec_env={vec_env}")
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_results(tmp_path / "dummy", tmp_path / "subproc")
