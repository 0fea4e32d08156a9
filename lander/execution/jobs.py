"""What every launcher of lander's shares: a job (:class:`Job`) composed as Hydra composes it (:func:`compose`), its
record when it ends (:func:`finished`, :func:`job_return`), a sweep stopped by a signal (:class:`Stop`,
:func:`stopped`), the state of a joblib worker that holds signals, and :func:`run_sweep_job`, which runs one job of
any launcher in a process of its own (``lander.run``'s entry to this layer).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from hydra.utils import get_class
from omegaconf import DictConfig, open_dict, read_write

from lander.config.schema import quiet_hydra_warnings
from lander.errors import RunFileError
from lander.execution.isolate import GRACE_SECONDS, record_killed, run_in_child
from lander.storage.rundir import RunPaths, RunSummary, Status, remove_unstarted
from lander.sweeps.rerun import rerun_command

log = logging.getLogger("lander")


def run_sweep_job(
    job: Callable[[], float | None], launcher: DictConfig, paths: RunPaths, sweep_dir: Path
) -> float | None:
    """One job of a sweep (``job``: ``lander.run``'s, for the run directory ``paths``), in a process of its own
    whatever the launcher (``launcher``: Hydra's ``hydra.launcher`` node): where the launcher gives each job one
    already (lander's, Ray's), here; else (basic, joblib, submitit) in a process forked for it
    (:func:`lander.execution.isolate.run_in_child`), so that a job that dies takes no other with it.

    :return: the job's final evaluation mean if it completed, else None
    """
    target = str(launcher.get("_target_", ""))
    if getattr(get_class(target) if target else None, "forks_its_jobs", False):
        return job()
    if worker_stopped():  # a joblib worker (JoblibLauncher) of a stopped sweep, given a job after the stop
        log.warning("job not started: the sweep was stopped")
        remove_unstarted(paths.root)  # the directory Hydra made for it, as lander's launcher makes none
        return None
    import_for_jobs()  # once here, shared by every job's forked process
    try:
        run_in_child(job, paths)
    except SystemExit as stop:  # a signal to this process (the basic launcher's, or a worker of another)
        if signals_held():  # a joblib worker lives on (its pool with it), starts no job; the sweep says the rest
            hold_signal(int(stop.code or 0) - 128)
            return None
        log.warning("sweep stopped (exit %s).\n  continue: %s", stop.code, rerun_command(sweep_dir))
        raise
    summary = RunSummary.load(paths)
    return summary.final_eval_mean if summary is not None and summary.status == Status.COMPLETED else None


def import_for_jobs() -> None:
    """Import what every job imports (torch, SB3, lander's training; torch._dynamo, which torch's first optimizer
    imports, ~1.5 s) once, in the process the jobs are forked from, so that no job imports them again. Where the
    jobs log to W&B (the sweep's checks imported ``wandb`` for them, :func:`lander.config.checks.wandb_refusal`),
    also the module each ``wandb.init`` imports as it returns (its launch inputs: 0.8 CPU s a process)."""
    # late: Hydra imports this module (the launchers') in every process, and these take ~2 s; see above
    import torch._dynamo  # noqa: F401

    import lander.training.train  # noqa: F401

    if "wandb" in sys.modules:
        import wandb.sdk.launch.inputs.internal  # noqa: F401


@dataclass
class Job:
    """A job: its process (0 until started; seeds side by side share one), number, overrides, config (with
    ``hydra``) and directory."""

    pid: int
    num: int
    overrides: list[str]
    config: DictConfig
    directory: Path


@dataclass
class Stop:
    """SIGINT/SIGTERM to the sweep's process: no job starts after the first; each running job gets it once,
    :data:`GRACE_SECONDS` later unless it ended (a signal to the whole group has reached it already); a second
    signal reaches the jobs at once."""

    signum: int | None = None
    at: float = 0.0
    urgent: bool = False
    forwarded: set[int] = field(default_factory=set)

    def handle(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum, self.at = signum, time.monotonic()
        else:
            self.urgent = True
            self.forwarded.clear()  # each running job gets the second signal too

    def forward(self, running: dict[int, list[Job]]) -> None:
        if self.signum is None or not (self.urgent or time.monotonic() - self.at > GRACE_SECONDS):
            return
        for pid in set(running) - self.forwarded:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(pid, self.signum)
            self.forwarded.add(pid)


class HydraSetup(Launcher):
    """What Hydra gives a launcher once (``setup``), kept for ``launch``: lander's own launchers share it."""

    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function


def compose(
    context: HydraContext, config: DictConfig, num: int, overrides: list[str], job_id: str | int
) -> tuple[DictConfig, Path]:
    """Job ``num``'s config (``hydra.job.num`` and ``id`` set, as its launcher sets them) and its directory."""
    composed = context.config_loader.load_sweep_config(config, overrides)
    with open_dict(composed):
        composed.hydra.job.num = num
        composed.hydra.job.id = job_id
    return composed, Path(str(composed.hydra.sweep.dir)) / str(composed.hydra.sweep.subdir)


def interrupted_since(sweep_dir: Path, since: float) -> int | None:
    """The signal that stopped a job of ``sweep_dir`` (its ``summary.json`` written since ``since``), if one did."""
    for path in sweep_dir.glob("*/summary.json"):
        try:
            summary = RunSummary.load(RunPaths(path.parent)) if path.stat().st_mtime >= since else None
        except (RunFileError, OSError):
            continue
        if summary is not None and summary.status == Status.INTERRUPTED:
            name = (summary.error or "").removeprefix("Interrupted: ")
            if name in ("SIGINT", "SIGTERM"):
                return int(signal.Signals[name])
    return None


_held: dict[str, Any] = {"on": False, "signum": None}


def start_worker() -> None:
    """A worker of the joblib launcher, as loky starts it: signals held (:func:`hold_signals`), Hydra's warnings
    about lander's ``joblib.yaml`` not shown (the job function, pickled by value from ``__main__``, does not import
    :mod:`lander.run`)."""
    hold_signals()
    quiet_hydra_warnings()


def hold_signals() -> None:
    """In a worker of the joblib launcher: SIGINT/SIGTERM no longer end the worker (its job, a process of its own,
    stops itself with a checkpoint); the worker starts no job after one (:func:`worker_stopped`)."""
    _held["on"] = True
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, hold_signal)


def hold_signal(signum: int, frame: Any = None) -> None:
    """Remember a signal to this worker (the first): its next jobs do not start."""
    _held["signum"] = _held["signum"] or signum


def signals_held() -> bool:
    """Whether this process is a worker of the joblib launcher (:func:`hold_signals`)."""
    return bool(_held["on"])


def worker_stopped() -> int | None:
    """The signal that stopped this worker's sweep, if one did."""
    signum = _held["signum"]
    return None if signum is None else int(signum)


def stopped(signum: int, sweep_dir: Path, ran: int | None = None, pending: int | None = None) -> None:
    """End a sweep stopped by ``signum``: say so and how to continue, exit 128 + ``signum``."""
    counts = f"{ran} job(s) ran, {pending} not started; " if ran is not None else ""
    log.warning(
        "sweep stopped by %s: %seach stopped job kept a checkpoint.\n  continue: %s",
        signal.Signals(signum).name,
        counts,
        rerun_command(sweep_dir),
    )
    raise SystemExit(128 + signum)


def finished(job: Job, status: int) -> JobReturn:
    """Hydra's record of an ended job (:func:`job_return`); a job killed by a signal is recorded failed in its
    ``summary.json`` first."""
    if os.WIFSIGNALED(status):
        record_killed(RunPaths(job.directory), job.pid, os.WTERMSIG(status))
    return job_return(job.overrides, job.config, job.directory)


def job_return(overrides: list[str], config: DictConfig, directory: Path) -> JobReturn:
    """Hydra's record of an ended job: its return value (the final evaluation's mean, as ``lander.run`` returns
    it) read from its ``summary.json``."""
    try:
        summary = RunSummary.load(RunPaths(directory))
    except RunFileError:
        summary = None
    task = copy.deepcopy(config)
    with read_write(task), open_dict(task):
        del task["hydra"]
    done = JobReturn(
        overrides=overrides,
        cfg=task,
        hydra_cfg=config,
        working_dir=str(directory),
        task_name=str(config.hydra.job.name),
        status=JobStatus.COMPLETED,
    )
    done.return_value = summary.final_eval_mean if summary and summary.status == Status.COMPLETED else None
    return done
