"""Seeds side by side in one process: each seed's whole run a greenlet of this thread, their waiting work (a
rollout's actions, an update) done together by :class:`lander.algorithms.batched.SeedStack` (``lander.run``'s
``seeds_per_process``, started by :func:`lander.execution.parallel.run_side_by_side`). What each job owns of the
thread's state (torch's grad mode, logging's handlers, Hydra's config, the run's pause listener, its CPU seconds)
is one :class:`JobContext`, given back to the job at every switch to it (:meth:`Lockstep.resume`), so that neither
the training code, nor :mod:`lander.process.signals`, nor SB3 knows that it shares a process.

A pause (SIGUSR1) pauses the process, so every seed of it: whichever seed holds it, every seed's listener is told
(:class:`GroupPause`), each with its own logging, and each run's ``summary.json`` says ``paused``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from greenlet import getcurrent, greenlet
from hydra.core.hydra_config import HydraConfig

from lander.algorithms.batched import SeedStack, SideBySide
from lander.process.clock import using_cpu_clock
from lander.process.signals import pause_listener, set_pause_listener

log = logging.getLogger(__name__)


@dataclass
class JobContext:
    """What one job owns of its thread's state, kept while another job runs: torch's grad mode (SB3's ``no_grad``
    blocks of one seed must not reach another), logging's root handlers (its ``run.log``), Hydra's config (its
    ``HydraConfig.get()``), its run's pause listener (:func:`lander.process.signals.pausing`), and the CPU seconds
    it has run. A job that has not run yet takes the state it finds (its launcher's), as a job alone would.
    """

    grad_enabled: bool = True
    handlers: list[logging.Handler] | None = None
    hydra_config: Any = None
    pause_listener: Callable[[bool], None] | None = None
    cpu: float = 0.0
    group: GroupPause | None = field(default=None, repr=False)

    def leave(self) -> None:
        """Keep this job's state as it leaves the thread (at a switch away from it)."""
        self.grad_enabled = torch.is_grad_enabled()
        self.handlers = logging.root.handlers[:]
        self.hydra_config = HydraConfig.instance().cfg
        listener = pause_listener()
        if not isinstance(listener, GroupPause):  # the job's own: set (or left) by its run since it entered
            self.pause_listener = listener

    def enter(self) -> None:
        """Give the thread this job's state back (at a switch to it)."""
        torch.set_grad_enabled(self.grad_enabled)
        if self.handlers is not None:
            logging.root.handlers = self.handlers
            HydraConfig.instance().cfg = self.hydra_config
        # a pause, wherever it is held, tells every job of the group (as each job's run only knows its own)
        has_own = self.group is not None and self.pause_listener is not None
        set_pause_listener(self.group if has_own else self.pause_listener)

    @contextmanager
    def entered(self, current: JobContext) -> Iterator[None]:
        """This job's state while the block runs, then ``current``'s again (its logging for a word of its own)."""
        current.leave()
        self.enter()
        try:
            yield
        finally:
            self.leave()
            current.enter()


class GroupPause:
    """The pause listener of every job of a lockstep at once: called with True (or False), it calls each live job's
    own listener, in that job's context (its run's ``summary.json``, its ``run.log``).

    :param lockstep: whose jobs are told
    """

    def __init__(self, lockstep: Lockstep) -> None:
        self.lockstep = lockstep

    def __call__(self, paused: bool) -> None:
        current = self.lockstep.owner  # whose state the thread holds (a job's, also while the batched work runs)
        for let in self.lockstep.lets:
            job = self.lockstep.contexts.get(let)
            if let.dead or job is None or job.pause_listener is None:
                continue
            if job is current:
                job.pause_listener(paused)
                continue
            with job.entered(current):
                listener = job.pause_listener
                if listener is not None:
                    listener(paused)


class Lockstep:
    """Runs the seeds' jobs as greenlets of this thread and does their waiting work together.

    ``run(jobs)`` starts each job (a seed's whole run: lander's ``train`` in it); a job runs until it needs its
    policy's actions or an update (:func:`request`), then the next one runs; once every job waits, their work
    is done in one batched call (:class:`SeedStack`) and each goes on with its part. A job that ends (done,
    failed) leaves the others to go on; ``ended`` may return an exception to raise in the others too (a signal
    that stopped one job stops all: each records its own stop). A signal while the batched work runs is raised in
    every job.

    Each job's state is its :class:`JobContext`; the lockstep's own (the hub's) is one too. The batched work needs
    none of it, so a switch from a job to the hub swaps nothing: the thread holds the job's state until the hub
    lets another job go on, and the hub takes its own back only where it logs or a job has ended (:meth:`home`).
    One swap a seed-step instead of two.
    """

    def __init__(self) -> None:
        self.stack: SeedStack | None = None
        self.rows: dict[int, int] = {}  # job index -> its row in the stack
        self.lets: list[greenlet] = []
        self.contexts: dict[greenlet, JobContext] = {}  # each job's, and the hub's
        self.group = GroupPause(self)
        self.waiting: dict[int, tuple[SideBySide, tuple[str, Any]]] = {}  # job index -> its model and work
        self.codes: dict[int, int] = {}
        self.cpu_mark = time.thread_time()  # this thread's CPU seconds at the last switch to or from a job
        self.started = (time.process_time(), time.thread_time())  # the process's and this thread's, at the start
        self.hub: greenlet | None = None
        self.owner = JobContext()  # whose state the thread holds now (the hub's, at the start)

    def context(self, let: greenlet) -> JobContext:
        """The :class:`JobContext` of greenlet ``let`` (made on its first switch)."""
        if let not in self.contexts:
            self.contexts[let] = JobContext(group=self.group if let in self.lets else None)
        return self.contexts[let]

    def cpu_seconds(self, let: greenlet) -> float:
        """CPU seconds of job ``let`` so far: what this thread spent running it, and its share (split evenly) of the
        batched work and of the process's other threads (W&B's, the BLAS pool's).

        Each switch to a job and back reads this thread's clock (:func:`time.thread_time`, in :meth:`resume`); the
        process's (:func:`time.process_time`, a sum over every thread) only here, when a job asks. Measured on 4 A2C
        seeds x 20k steps, a switch a step: 9.20 s of the process's CPU against 9.33-9.38 s with the process's clock
        at each switch."""
        hub = self.context(self.hub).cpu if self.hub is not None else 0.0
        own = self.context(let).cpu + (time.thread_time() - self.cpu_mark if let is getcurrent() else 0.0)
        others = (time.process_time() - self.started[0]) - (time.thread_time() - self.started[1])
        return own + (hub + max(others, 0.0)) / max(len(self.rows), 1)

    def run(self, jobs: list[Callable[[], int]], ended: Callable[[int, int], BaseException | None]) -> list[int]:
        """Run ``jobs`` side by side; return their exit codes (``ended(index, code)`` as each ends)."""
        self.lets, self.waiting, self.codes, self.contexts = [greenlet(job) for job in jobs], {}, {}, {}
        self.hub, self.cpu_mark = getcurrent(), time.thread_time()
        self.started = (time.process_time(), self.cpu_mark)
        self.owner = self.context(self.hub)
        for let in self.lets:
            let.lockstep = self
        try:
            with using_cpu_clock(self.job_cpu_seconds):
                self.serve(ended)
        finally:
            self.home()
        return [self.codes.get(index, 1) for index in range(len(jobs))]

    def job_cpu_seconds(self) -> float:
        """The CPU seconds of the job running now (:meth:`cpu_seconds`); the process's outside the jobs."""
        let = getcurrent()
        return self.cpu_seconds(let) if getattr(let, "lockstep", None) is self else time.process_time()

    def serve(self, ended: Callable[[int, int], BaseException | None]) -> None:
        """Start every job, then do their waiting work until every job has ended (:meth:`run`)."""
        stop: BaseException | None = None
        for index in range(len(self.lets)):
            stop = self.resume(index, ended) or stop
        while self.waiting:
            try:
                if stop is not None:  # the same exception raised in each job, which records its stop
                    thrown, stop = stop, None
                    for index in list(self.waiting):
                        self.resume(index, ended, throw=thrown)
                    continue
                for index, result in self.do(self.waiting).items():
                    if stop is not None:  # a job that ended meanwhile stops the others
                        break
                    stop = self.resume(index, ended, result) or stop
            except BaseException as exc:  # a signal (Interrupted) while this hub ran: every job stops
                self.home()
                log.debug("stopping every seed", exc_info=exc)
                stop = exc

    def resume(
        self,
        index: int,
        ended: Callable[[int, int], BaseException | None],
        value: Any = None,
        throw: BaseException | None = None,
    ) -> BaseException | None:
        """Let job ``index`` go on (with ``value``, or ``throw`` raised in it) until it waits again or ends; what
        ``ended`` returns for a job that ended.

        Every switch to a job is made here, and the job switches back here (:func:`request`, or its end): the
        hub's CPU seconds since the last switch are counted before, the job's after, and the job gets its
        :class:`JobContext` back before it runs (the hub's batched work runs in the state the thread holds)."""
        let = self.lets[index]
        self.charge(self.hub)
        self.swap(self.context(let))
        try:
            started = bool(let)  # a greenlet not started yet takes no value
            out = let.throw(throw) if throw is not None else let.switch(value) if started else let.switch()
        except BaseException as exc:  # the job ended by an exception of its own
            self.charge(let)
            self.home()
            if exc is not throw:
                log.error("seed %d failed", index, exc_info=exc)
            out = getattr(exc, "exit_code", 1)
        else:
            self.charge(let)
        self.waiting.pop(index, None)
        if let.dead:
            self.home()
            self.codes[index] = int(out)
            return ended(index, int(out))
        self.waiting[index] = out
        return None

    def do(self, waiting: dict[int, tuple[SideBySide, tuple[str, Any]]]) -> dict[int, Any]:
        """The waiting jobs' work, batched: job index -> result, for the jobs whose work was done (the others
        wait on)."""
        if self.stack is None:  # the first work: every job still running waits now, with its model
            order = sorted(waiting)
            self.rows = {index: row for row, index in enumerate(order)}
            self.stack = SeedStack([waiting[index][0] for index in order])
            self.home()
            log.info("training %d seeds side by side in process", len(order))
        # an update waits until every job waits for one, so that each update is every seed's at once: a seed that
        # evaluates, or finished its evaluation first, may be a rollout step ahead of or behind the others
        serving = {index: each for index, each in waiting.items() if each[1][0] != "train"} or waiting
        results = self.stack.do({self.rows[index]: work for index, (_, work) in serving.items()})
        return {index: results[self.rows[index]] for index in serving}

    def charge(self, let: greenlet) -> None:
        """Count the CPU seconds of this thread since the last switch to ``let`` (a job, or the hub) as its own."""
        now = time.thread_time()
        self.context(let).cpu += now - self.cpu_mark
        self.cpu_mark = now

    def home(self) -> None:
        """Give the thread the hub's own state back (the launcher's: its logging), keeping the job's that held it."""
        self.swap(self.context(self.hub) if self.hub is not None else self.owner)

    def swap(self, entering: JobContext) -> None:
        """The thread's state from :attr:`owner`'s to ``entering``'s (nothing if it holds that one already)."""
        if entering is self.owner:
            return
        self.owner.leave()
        if entering.handlers is None and self.hub is not None:  # a job that has not run starts from the hub's state
            self.context(self.hub).enter()
        entering.enter()
        self.owner = entering
