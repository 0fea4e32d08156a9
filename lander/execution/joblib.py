"""``hydra/launcher=joblib`` is Hydra's joblib launcher through :class:`JoblibLauncher`, which keeps loky's workers
alive under SIGINT/SIGTERM to the process group (Ctrl-C): each running job stops as ``interrupted`` with a checkpoint,
no job starts after it, and the sweep exits as above. A loky worker that dies ends loky's whole pool (loky's design:
a broken pool kills every worker with its process tree); the jobs it killed resume from their checkpoints in a new
pool, so the sweep still ends with every job and its comparison.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
from hydra.core.utils import JobReturn, configure_log, setup_globals
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher as HydraJoblibLauncher

from lander.errors import RunFileError
from lander.execution.isolate import record_lost
from lander.execution.jobs import Job, Stop, compose, job_return, start_worker, stopped
from lander.process.signals import handling
from lander.storage.lock import RunLock
from lander.storage.rundir import RunPaths, RunSummary

log = logging.getLogger("lander")


class JoblibLauncher(HydraJoblibLauncher):  # type: ignore[misc]  # an untyped Hydra plugin
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
        # Hydra imports every launcher plugin in every run: joblib and Hydra's joblib plugin (0.17 s, measured with
        # time.perf_counter around the import) only when this launcher launches
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
    lock = RunLock(job.directory)
    owner = lock.owner() if lock.busy() else None
    try:
        parent = psutil.Process(int(owner["pid"])).parent() if owner else None
        return parent is not None and parent.ppid() == os.getpid()
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False
