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
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from hydra.core.utils import JobReturn, configure_log, run_job, setup_globals
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from lander.config.checks import parallel_jobs
from lander.errors import RunFileError
from lander.execution.isolate import fork, reaped
from lander.execution.jobs import HydraSetup, Job, Stop, compose, finished, import_for_jobs, stopped
from lander.process.signals import Interrupted, LimitReached, exit_on_signals, handling, stop_on_signals
from lander.storage.rundir import RunPaths, RunSummary, Status

log = logging.getLogger("lander")


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
                        reaped(pid)
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


def run_side_by_side(context: HydraContext, task: TaskFunction, jobs: list[Job]) -> None:
    """Several seeds' jobs in this process, side by side (:class:`lander.execution.lockstep.Lockstep`):
    each job is Hydra's, as the basic launcher runs it, with its own ``run.log`` and Hydra config (its
    :class:`lander.execution.lockstep.JobContext`); a signal
    stops every job with a checkpoint; exits with 128 + the signal then, else 0."""
    from lander.execution.lockstep import Lockstep  # torch and SB3 (~2 s): only where seeds share a process

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
        codes = Lockstep().run([partial(job, each.config) for each in jobs], ended)
    signalled = [code for code in codes if code > 128]
    if signalled:
        raise SystemExit(signalled[0])
