"""lander's Hydra launcher (``hydra/launcher=parallel``, the default): a sweep's jobs in parallel on this machine,
each in a process of its own.

At most ``n_jobs`` jobs run at once (-1: one per CPU core, as joblib counts), each forked from the sweep's process
after torch and SB3 are imported, so a job starts in milliseconds. The sweep's process does nothing but start jobs
and wait for them, so that what happens to one job happens to it alone:

- a job's process that dies (``kill -9``, the OOM killer, a crash in an env) is recorded ``failed`` in its
  ``summary.json``; the other jobs go on, and the comparison at the end covers them;
- SIGINT or SIGTERM, to the whole process group (Ctrl-C) or to the sweep's process alone: no job starts after it,
  each running job gets the signal once and stops as ``interrupted`` with a checkpoint, and the sweep exits with
  128 + the signal and the command that completes it (:func:`lander.sweeps.rerun.rerun_command`).

``hydra/launcher=joblib`` is Hydra's joblib launcher through :class:`JoblibLauncher`, which keeps loky's workers
alive under SIGINT/SIGTERM to the process group (Ctrl-C): each running job stops as ``interrupted`` with a checkpoint,
no job starts after it, and the sweep exits as above. A loky worker that dies ends loky's whole pool (loky's design:
a broken pool kills every worker with its process tree); the jobs it killed resume from their checkpoints in a new
pool, so the sweep still ends with every job and its comparison.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus, configure_log, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from hydra.utils import get_class
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher as HydraJoblibLauncher
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher as HydraSubmititLocalLauncher
from omegaconf import DictConfig, open_dict, read_write

from lander.config.schema import quiet_hydra_warnings
from lander.errors import RunFileError
from lander.process.isolate import GRACE_SECONDS, fork, record_killed, record_lost, run_in_child
from lander.process.signals import Interrupted, LimitReached, exit_on_signals, handling, stop_on_signals
from lander.storage.lock import RunLock
from lander.storage.rundir import RunPaths, RunSummary, Status
from lander.sweeps.rerun import rerun_command

log = logging.getLogger("lander")


def run_sweep_job(
    job: Callable[[], float | None], launcher: DictConfig, paths: RunPaths, sweep_dir: Path
) -> float | None:
    """One job of a sweep (``job``: ``lander.run``'s, for the run directory ``paths``), in a process of its own
    whatever the launcher (``launcher``: Hydra's ``hydra.launcher`` node): where the launcher gives each job one
    already (lander's, Ray's), here; else (basic, joblib, submitit) in a process forked for it
    (:func:`lander.process.isolate.run_in_child`), so that a job that dies takes no other with it.

    :return: the job's final evaluation mean if it completed, else None
    """
    target = str(launcher.get("_target_", ""))
    if getattr(get_class(target) if target else None, "forks_its_jobs", False):
        return job()
    if worker_stopped():  # a joblib worker (JoblibLauncher) of a stopped sweep
        log.warning("job not started: the sweep was stopped")
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
    imports, ~1.5 s) once, in the process the jobs are forked from, so that no job imports them again."""
    import torch._dynamo  # noqa: F401

    import lander.training.train  # noqa: F401


def parallel_jobs(n_jobs: int) -> int:
    """``n_jobs`` as joblib reads it: a positive count, or -1 for one per CPU core (-2: all but one...)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, n_jobs if n_jobs > 0 else cores + 1 + n_jobs)


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


class ParallelLauncher(HydraSetup):
    """Hydra's launcher interface: ``setup`` once, then ``launch`` each batch of jobs the sweeper makes.

    :param n_jobs: jobs at once; -1 = one per CPU core
    """

    forks_its_jobs = True  # each job already runs in a process of its own (:func:`run_sweep_job`)

    def __init__(self, n_jobs: int = -1) -> None:
        super().__init__()
        self.n_jobs = n_jobs

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        workers = parallel_jobs(int(self.n_jobs))
        log.info("launching %d job(s), %d at a time, in %s", len(job_overrides), workers, sweep_dir)
        import_for_jobs()
        pending = deque(self.groups(job_overrides, initial_job_idx))
        running: dict[int, list[Job]] = {}
        returns: dict[int, JobReturn] = {}
        stop = Stop()
        with handling(stop.handle):
            while running or (pending and stop.signum is None):
                while pending and len(running) < workers and stop.signum is None:
                    jobs = self.start(pending.popleft())
                    running[jobs[0].pid] = jobs
                stop.forward(running)
                ended = 0
                for pid in list(running):  # its own jobs only: another child of this process is not waited for
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        for job in running.pop(pid):
                            returns[job.num] = finished(job, status)
                        ended += 1
                if not ended:
                    time.sleep(0.05)
        if stop.signum is not None:
            stopped(stop.signum, sweep_dir, len(returns), sum(len(group) for group in pending))
        return [returns[num] for num in sorted(returns)]

    def groups(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[list[Job]]:
        """The jobs (not composed yet: :meth:`start` composes them) in groups that each run in one process: one
        job each, or for ``seeds_per_process: K`` > 1, up to K jobs whose overrides differ only in ``seed`` (in job
        order)."""
        assert self.config is not None
        default = int(self.config.get("seeds_per_process") or 1)  # the command's, when not swept
        groups: list[list[Job]] = []
        open_groups: dict[tuple[str, ...], list[Job]] = {}
        for num, overrides in enumerate(job_overrides, initial_job_idx):
            job = Job(0, num, list(overrides), DictConfig({}), Path())
            values = [o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0].lstrip("+~") == "seeds_per_process"]
            per_process = int(values[-1]) if values else default
            if per_process <= 1:
                groups.append([job])
                continue
            key = tuple(o for o in overrides if o.split("=", 1)[0].lstrip("+~") != "seed")
            group = open_groups.get(key)
            if group is None or len(group) >= per_process:
                group = open_groups[key] = []
                groups.append(group)
            group.append(job)
        return groups

    def start(self, jobs: list[Job]) -> list[Job]:
        """Compose ``jobs``' configs and fork their process, which runs each as Hydra's basic launcher would: one
        job, or several seeds side by side (:func:`run_side_by_side`)."""
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        context, task = self.hydra_context, self.task_function
        for job in jobs:
            job.config, job.directory = compose(context, self.config, job.num, job.overrides, job.num)

        def process() -> None:  # in the jobs' own process
            exit_on_signals()  # its own, not the sweep's handler: until training takes over, a signal ends it
            if len(jobs) > 1:
                run_side_by_side(context, task, jobs)
                return
            run_job(
                hydra_context=context,
                task_function=task,
                config=jobs[0].config,
                job_dir_key="hydra.sweep.dir",
                job_subdir_key="hydra.sweep.subdir",
            )

        pid = fork(process)
        if len(jobs) > 1:
            log.info("jobs %s: seeds side by side in process %d", ", ".join(str(job.num) for job in jobs), pid)
        for job in jobs:
            job.pid = pid
        return jobs


def compose(
    context: HydraContext, config: DictConfig, num: int, overrides: list[str], job_id: str | int
) -> tuple[DictConfig, Path]:
    """Job ``num``'s config (``hydra.job.num`` and ``id`` set, as its launcher sets them) and its directory."""
    composed = context.config_loader.load_sweep_config(config, overrides)
    with open_dict(composed):
        composed.hydra.job.num = num
        composed.hydra.job.id = job_id
    return composed, Path(str(composed.hydra.sweep.dir)) / str(composed.hydra.sweep.subdir)


def run_side_by_side(context: HydraContext, task: TaskFunction, jobs: list[Job]) -> None:
    """Several seeds' jobs in this process, side by side (:class:`lander.algorithms.side_by_side.Lockstep`):
    each job is Hydra's, as the basic launcher runs it, with its own ``run.log`` and Hydra config; a signal
    stops every job with a checkpoint; exits with 128 + the signal then, else 0."""
    from hydra.core.hydra_config import HydraConfig

    from lander.algorithms.side_by_side import Lockstep

    handlers: dict[Any, list[logging.Handler]] = {}
    hydra_configs: dict[Any, Any] = {}

    def switched(origin: Any, target: Any) -> None:  # logging and Hydra's config are each job's own
        handlers[origin], hydra_configs[origin] = logging.root.handlers[:], HydraConfig.instance().cfg
        if target in handlers:
            logging.root.handlers, HydraConfig.instance().cfg = handlers[target], hydra_configs[target]

    def job(config: DictConfig) -> int:
        try:
            run_job(
                hydra_context=context,
                task_function=task,
                config=config,
                job_dir_key="hydra.sweep.dir",
                job_subdir_key="hydra.sweep.subdir",
            )
            return 0
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            log.exception("job failed")
            return 1

    def ended(index: int, code: int) -> BaseException | None:  # a job stopped by a signal or a limit: all stop
        try:
            summary = RunSummary.load(RunPaths(jobs[index].directory))
        except RunFileError:
            return None
        if summary is None or summary.status != Status.INTERRUPTED:
            return None
        return Interrupted(code - 128) if code > 128 else LimitReached(summary.error or "a limit of the run")

    with stop_on_signals():  # the outermost handler: the jobs' own nest in it
        codes = Lockstep(switched).run([partial(job, each.config) for each in jobs], ended)
    signalled = [code for code in codes if code > 128]
    if signalled:
        raise SystemExit(signalled[0])


class JoblibLauncher(HydraJoblibLauncher):
    """Hydra's joblib launcher (``hydra/launcher=joblib``: ``lander/conf/hydra/launcher/joblib.yaml``, the same
    keys; Hydra's ``execute_job`` runs each job in a loky worker), with two differences:

    - loky's workers and the sweep's process outlive a signal to the process group, so that the jobs stop with a
      checkpoint: by default a loky worker dies of SIGINT and joblib then ends the whole pool, jobs included;
    - a loky worker that dies (``kill -9``, the OOM killer) does not end the sweep. loky then treats its pool as
      broken and kills every other worker with its process tree, jobs included; their jobs are recorded killed
      and dispatched again in a new pool, where each resumes from its newest checkpoint (at most
      :data:`POOL_RESTARTS` times a sweep). The dead worker's own job, a process of its own, runs on to its end
      and is waited for; nothing already completed runs again.
    """

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from hydra.core.singleton import Singleton
        from hydra_plugins.hydra_joblib_launcher._core import execute_job, process_joblib_cfg
        from joblib import Parallel, delayed
        from joblib.externals.loky.process_executor import BrokenProcessPool

        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        joblib_cfg = {**self.joblib, "backend": "loky", "initializer": start_worker}  # loky runs it in each worker
        process_joblib_cfg(joblib_cfg)
        log.info("Joblib.Parallel(n_jobs=%s) is launching %d jobs in %s", joblib_cfg.get("n_jobs"),
                 len(job_overrides), sweep_dir)  # fmt: skip
        todo = {initial_job_idx + index: list(overrides) for index, overrides in enumerate(job_overrides)}
        returns: dict[int, JobReturn] = {}
        running_on: list[Job] = []  # jobs of a dead worker, still running in their own process
        stop = Stop()
        with handling(stop.handle):
            for restart in range(POOL_RESTARTS + 1):
                try:
                    runs = Parallel(**joblib_cfg)(
                        delayed(execute_job)(num, overrides, self.hydra_context, self.config, self.task_function,
                                             Singleton.get_state())
                        for num, overrides in todo.items()
                    )  # fmt: skip
                    returns.update(zip(todo, runs, strict=True))
                    todo = {}
                    break
                except BrokenProcessPool as broken:  # a worker died: loky killed the others, jobs included
                    jobs = self.jobs(todo)
                    done, running, again = sort_after_broken_pool(jobs)
                    returns.update({job.num: job_return(job.overrides, job.config, job.directory) for job in done})
                    running_on += running
                    todo = {job.num: job.overrides for job in again}
                    if stop.signum is not None or not todo:
                        break
                    if restart == POOL_RESTARTS:
                        log.error("the joblib pool broke %d times; %d job(s) left failed (a re-run resumes them)",
                                  restart + 1, len(todo))  # fmt: skip
                        returns.update({job.num: job_return(job.overrides, job.config, job.directory) for job in again})
                        break
                    log.warning(
                        "a joblib worker died (%s); its pool ended with the jobs of the other workers: job(s) %s "
                        "run again in a new pool, from their checkpoints where they have one%s",
                        [line for line in str(broken).splitlines() if line.strip()][-1],
                        ", ".join(str(num) for num in todo),
                        f", job(s) {', '.join(str(j.num) for j in running)} run on" if running else "",
                    )
            for job in running_on:  # the dead worker's job: its own process, waited for to its end
                while RunLock(job.directory).busy():
                    time.sleep(0.2)
                returns[job.num] = job_return(job.overrides, job.config, job.directory)
        if stop.signum is not None:
            stopped(stop.signum, sweep_dir)
        return [returns[num] for num in sorted(returns)]

    def jobs(self, todo: dict[int, list[str]]) -> list[Job]:
        """The jobs of ``todo`` (number -> overrides), composed as Hydra's ``execute_job`` composes them."""
        assert self.config is not None and self.hydra_context is not None
        context, config = self.hydra_context, self.config
        return [
            Job(0, num, overrides, *compose(context, config, num, overrides, f"{config.hydra.job.name}_{num}"))
            for num, overrides in todo.items()
        ]


POOL_RESTARTS = 3  # new joblib pools a sweep starts after a worker died, before its remaining jobs are left failed


def sort_after_broken_pool(jobs: list[Job]) -> tuple[list[Job], list[Job], list[Job]]:
    """The jobs of a pool that broke: (ended: completed, failed or stopped before, each as it ended; running on:
    a dead worker's job in its own process, holding its lock; to run again: killed with their worker, recorded so
    (a re-run resumes them from their checkpoints), and those that never started)."""
    # loky fails the pool's tasks before it kills the other workers: wait until their jobs are gone
    deadline = time.monotonic() + 60
    while any(in_pool(job) for job in jobs) and time.monotonic() < deadline:
        time.sleep(0.1)
    ended, running, again = [], [], []
    for job in jobs:
        paths = RunPaths(job.directory)
        if RunLock(job.directory).busy():
            running.append(job)
            continue
        try:
            summary = RunSummary.load(paths)
        except RunFileError:
            summary = None
        if summary is not None and summary.status.alive:  # killed with its worker: it could not say so
            record_lost(paths, "killed by SIGKILL: its joblib pool ended when a worker died", "killed with its pool")
            again.append(job)
        elif summary is None:  # not started, or stopped before it wrote a summary (a bad value: it says so again)
            again.append(job)
        else:
            ended.append(job)
    return ended, running, again


def in_pool(job: Job) -> bool:
    """Whether ``job`` runs in a process whose parent is a loky worker of this process (one that loky ends with a
    broken pool; the dead worker's own job, whose parent is gone, does not)."""
    import psutil

    lock = RunLock(job.directory)
    owner = lock.owner() if lock.busy() else None
    try:
        parent = psutil.Process(int(owner["pid"])).parent() if owner else None
        return parent is not None and parent.ppid() == os.getpid()
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


class SubmititLocalLauncher(HydraSubmititLocalLauncher):
    """Hydra's submitit launcher on this machine (``hydra/launcher=submitit_local``:
    ``lander/conf/hydra/launcher/submitit_local.yaml``, the same keys), whose processes other than the jobs' own
    ignore SIGINT/SIGTERM to the process group (Ctrl-C): each job stops with a checkpoint, then the sweep says how
    to continue. By default submitit's controller of each job ends with a traceback and stops its job again."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None
        sweep_dir, started = Path(str(self.config.hydra.sweep.dir)), time.time()
        # inherited by submitit's controllers and their tasks; the tasks handle signals themselves (run.py)
        with handling(signal.SIG_IGN):
            try:
                returns = super().launch(job_overrides, initial_job_idx)
            except Exception:  # submitit: a job without a result (stopped, or killed)
                if (signum := interrupted_since(sweep_dir, started)) is None:
                    raise
                stopped(signum, sweep_dir)
        if (signum := interrupted_since(sweep_dir, started)) is not None:
            stopped(signum, sweep_dir)
        return returns

    def __call__(self, *args: Any, **kwargs: Any) -> JobReturn:  # in the job's task process
        hold_signals()  # a stopped job returns; the sweep says how to continue
        return super().__call__(*args, **kwargs)


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
    return _held["signum"]


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


class RayLauncher(HydraSetup):
    """``hydra/launcher=ray`` (``lander/conf/hydra/launcher/ray.yaml``): each job a Ray task, on this machine (Ray
    started for the sweep) or on an existing Ray cluster (``hydra.launcher.ray.init.address``), with the keys of
    Hydra's Ray launcher (``ray.init``: ``ray.init``'s arguments; ``ray.remote``: each task's options).

    Hydra's own plugin (``hydra-ray-launcher``) requires ``cloudpickle<3`` while joblib, which the default install
    has, requires ``>=3``: the two cannot be installed together, so lander drives Ray's API itself (as that plugin's
    local mode does). A job whose Ray worker dies is recorded ``failed`` and the others go on; a re-run of the
    sweep resumes its jobs as under any launcher. On a cluster, ``hydra.sweep.dir`` must be on a filesystem every
    node shares: each job writes its run directory where it runs, and the comparison reads them all.

    :param ray: ``{"init": {...}, "remote": {...}}``
    """

    forks_its_jobs = True  # each job is a Ray task: a worker process of Ray's

    def __init__(self, ray: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.ray = ray or {}

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray
        from hydra.core.singleton import Singleton

        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        init, remote = dict(self.ray.get("init") or {}), dict(self.ray.get("remote") or {})
        if not ray.is_initialized():
            ray.init(**{key: value for key, value in init.items() if value is not None})
        log.info("launching %d job(s) on Ray (%s)", len(job_overrides), init.get("address") or "this machine")
        task = ray.remote(**remote)(run_ray_job) if remote else ray.remote(run_ray_job)
        state = Singleton.get_state()
        started = []
        for num, overrides in enumerate(job_overrides, initial_job_idx):
            config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(config):
                config.hydra.job.id = f"{config.hydra.job.name}_{num}"
                config.hydra.job.num = num
            directory = Path(str(config.hydra.sweep.dir)) / str(config.hydra.sweep.subdir)
            future = task.remote(self.hydra_context, config, self.task_function, state)
            started.append((list(overrides), config, directory, future))
        returns = []
        for overrides, config, directory, future in started:
            try:
                returns.append(ray.get(future))
            except ray.exceptions.RayError as exc:  # its worker died, or the task could not run
                why = str(exc).splitlines()[0]
                record_lost(RunPaths(directory), f"killed by Ray: its task did not end ({why})", f"its Ray task: {why}")
                returns.append(job_return(overrides, config, directory))
        return returns


def run_ray_job(hydra_context: HydraContext, config: DictConfig, task: TaskFunction, state: Any) -> JobReturn:
    """One job in a Ray worker: Hydra's globals as the sweep's process had them, then the job as Hydra's basic
    launcher runs it."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.singleton import Singleton

    setup_globals()
    Singleton.set_state(state)
    HydraConfig.instance().set_config(config)
    return run_job(
        hydra_context=hydra_context,
        task_function=task,
        config=config,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )
