"""One process per sweep job: whatever kills a job's process (``kill -9``, the OOM killer, a segfault in an
env), the launcher's process goes on with the other jobs, under Hydra's launchers (basic, joblib, submitit);
lander's own (:mod:`lander.execution.parallel`) forks each job itself.

The job process is forked from the launcher's worker after torch and SB3 are imported (each job starts in
milliseconds, sharing those imports) and before torch has started a thread. A job killed by a signal is
recorded as failed in its ``summary.json``, so the sweep's end reports it and exits non-zero.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from lander.errors import RunFileError
from lander.process.signals import handling
from lander.storage.rundir import RunPaths, RunSummary, Status

log = logging.getLogger("lander")
GRACE_SECONDS = 3.0  # a signal to the launcher reaches the job too after this long, unless the job ended


SCRATCH: dict[int, str] = {}  # in the process that forked them: each running job's temporary folder, by pid


def fork(job: Callable[[], Any]) -> int:
    """Start ``job()`` in a forked process; return its pid. That process ends as the job does: exit code 0, its
    ``SystemExit``'s code, or 1 with the error logged.

    It ends by ``os._exit`` (no exit handler of the launcher's runs twice), which runs no finalizer: so what the
    job's libraries make in the temporary directory and leave to one (W&B makes two folders as it is imported) is
    made in a folder of the job's own there, made before the fork and removed as the job ends, or by
    :func:`reaped` once the job is waited for (a job killed by a signal removes nothing)."""
    scratch = scratch_directory()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the job's process
        code = 1
        try:
            if scratch is not None:
                tempfile.tempdir = scratch
            job()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            log.exception("job failed")
        finally:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            os._exit(code)
    if scratch is not None:
        SCRATCH[pid] = scratch
    return pid


def scratch_directory() -> str | None:
    """A new folder in the temporary directory, for a job's process to make its temporary directory
    (``tempfile.tempdir``); None, and the job's temporary directory left as it is, where none can be made."""
    try:
        return tempfile.mkdtemp(prefix="lander-job-")
    except OSError as exc:
        log.warning("no folder of the job's own in the temporary directory (%s): its libraries use it as it is", exc)
        return None


def reaped(pid: int) -> None:
    """The job :func:`fork` started as ``pid`` has ended and been waited for: its temporary folder is removed
    (what is left there: a killed job's, or a process's the job started and that outlived it)."""
    scratch = SCRATCH.pop(pid, None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def run_in_child(job: Callable[[], Any], paths: RunPaths) -> int:
    """Run ``job()`` in a forked process and wait for it; return its exit code (128 + signal if killed)."""
    pid = fork(job)
    try:
        status = wait_forwarding_signals(pid)
    finally:
        reaped(pid)
    if os.WIFSIGNALED(status):
        record_killed(paths, pid, os.WTERMSIG(status))
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def wait_forwarding_signals(pid: int) -> int:
    """Wait for the job ``pid``; a SIGINT/SIGTERM to this process reaches the job after :data:`GRACE_SECONDS`
    (a signal to the whole process group, such as Ctrl-C, reaches both at once: the job must not get it
    twice). After the job ended, the signal stops this process too (``SystemExit(128 + signal)``)."""
    received: list[tuple[int, float]] = []

    def handle(signum: int, frame: Any) -> None:
        received.append((signum, time.monotonic()))

    with handling(handle):
        forwarded = False
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if received and not forwarded and time.monotonic() - received[0][1] > GRACE_SECONDS:
                os.kill(pid, received[0][0])
                forwarded = True
            time.sleep(0.05)
    if received:
        raise SystemExit(128 + received[0][0])
    return status


def record_killed(paths: RunPaths, pid: int, signum: int) -> None:
    """The job's process died by ``signum`` (it could not say so): :func:`record_lost`."""
    name = signal.Signals(signum).name
    error = f"killed by {name}: process {pid} died without recording its state"
    record_lost(paths, error, f"its process {pid} was killed by {name}")


def record_lost(paths: RunPaths, error: str, what: str) -> None:
    """A job whose process ended without recording how: its summary, where it still says running or paused,
    says failed with ``error`` (``killed by ...``: a re-run resumes it from its checkpoint,
    :func:`lander.sweeps.rerun.plan_job`); ``what`` happened is logged."""
    try:
        summary = RunSummary.load(paths)
    except RunFileError:
        summary = None
    if summary is not None and summary.status.alive:
        summary.update(status=Status.FAILED, error=error)
        summary.save(paths)
    log.error("job %s: %s; the other jobs go on", paths.root, what)
