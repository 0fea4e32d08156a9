"""One run directory, one writer: ``<run dir>/.lander.storage.lock``, held for as long as a process trains there;
one sweep directory, one sweep: ``<sweep dir>/.lander.sweep.lock``, held by the process that runs the sweep.

The lock is an ``flock`` on the file, so the kernel releases it when its owner dies, ``kill -9`` included:
a lock file left behind by a dead process is stale and taken over. The file holds the owner's pid, host, the time
it took the lock and its process's start (``created``, seconds since boot: :func:`process_created`), for the message
that refuses a second writer and so that a signal goes only to the process that wrote it (:func:`owner_process`).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import IO, Any

import psutil

from lander.errors import ConfigError

NAME = ".lander.storage.lock"
PROBE_RETRIES = 25  # acquire() tries again for half a second: a reader's busy() holds the lock for microseconds
SWEEP_NAME = ".lander.sweep.lock"


class RunLock:
    """The lock on one run directory; :meth:`acquire` it before writing anything there.

    :param run_dir: the run directory
    """

    name = NAME

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / self.name
        self._handle: IO[str] | None = None

    def message(self, owner: dict[str, Any] | None) -> str:
        """Why the directory cannot be taken while ``owner`` holds it."""
        return busy_message(self.path.parent, owner)

    def owner(self) -> dict[str, Any] | None:
        """The pid, host and start time recorded by the process holding (or last holding) the lock."""
        try:
            with self._open() as handle:
                owner = json.loads(handle.read(4096) or "null")
        except (OSError, ValueError):
            return None
        return owner if isinstance(owner, dict) else None

    def busy(self) -> bool:
        """True if a live process holds the lock (a stale lock file does not count, nor a link or a FIFO of that
        name: a copied directory's, which no process of this machine holds)."""
        try:
            with self._open() as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
        except BlockingIOError:
            return True
        except OSError:
            return False
        return False

    def _open(self) -> IO[str]:
        """The lock file for reading, neither following a link nor blocking; OSError if it is not a regular file."""
        handle = os.fdopen(os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK))
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            handle.close()
            raise OSError(f"{self.path}: not a regular file")
        return handle

    def acquire(self) -> RunLock:
        """Take the lock, or raise :class:`ConfigError` naming the process that holds it."""
        if self._handle is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+")
        for attempt in range(PROBE_RETRIES + 1):  # busy() of a reader takes the lock for microseconds
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == PROBE_RETRIES:
                    handle.close()
                    raise ConfigError(self.message(self.owner())) from None
                time.sleep(0.02)
        handle.seek(0)
        handle.truncate()
        created = process_created(os.getpid())
        handle.write(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), "created": created})
        )
        handle.flush()
        self._handle = handle
        return self

    def release(self) -> None:
        """Give the lock up (the file stays: the next owner takes it over)."""
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


class SweepLock(RunLock):
    """The lock on one sweep directory, taken as the sweep starts (:class:`lander.sweeps.callback.ComparisonCallback`)
    and held until its process ends, by it and by the job processes it forks: the same sweep run again into the
    directory meanwhile is refused at once, and the service tells a sweep that still runs from one that ended.

    :param sweep_dir: the sweep directory
    """

    name = SWEEP_NAME

    def message(self, owner: dict[str, Any] | None) -> str:
        who = f"process {owner.get('pid')} on {owner.get('host')}" if owner else "another process"
        return (
            f"sweep directory {self.path.parent} is in use by {who}, which runs this sweep (lock file {self.path}); "
            "wait for it to end, or stop it (Ctrl-C), then run the same command to complete the sweep"
        )


def busy_message(run_dir: Path, owner: dict[str, Any] | None) -> str:
    who = f"process {owner.get('pid')} on {owner.get('host')}" if owner else "another process"
    return (
        f"run directory {run_dir} is in use by {who} (lock file {run_dir / NAME}); "
        "wait for it to end, or stop it, before running or resuming there"
    )


def check_free(run_dir: Path, kind: type[RunLock] = RunLock) -> None:
    """Raise :class:`ConfigError` if a live process holds ``run_dir``'s lock (``kind``: a run's, or a sweep's
    :class:`SweepLock`), before Hydra writes there."""
    lock = kind(run_dir)
    if lock.busy():
        raise ConfigError(lock.message(lock.owner()))


def process_created(pid: int) -> float:
    """When process ``pid`` started, in seconds since the machine booted: psutil's creation time less its boot
    time, both read from the kernel as the clock now stands. psutil's creation time alone moves with the clock
    (the boot time in ``/proc/stat`` is the wall clock less the time since boot, in whole seconds): a clock set
    forward by a few milliseconds near a second's end moved every process's creation time by a second, and a
    process recorded before it was no longer itself.

    :raise psutil.Error: no such process
    """
    return float(psutil.Process(pid).create_time() - psutil.boot_time())


BOOT_RELATIVE = 1e8  # a recorded creation time below this is seconds since boot; above, an older lander's epoch time


def same_process(pid: int, created: object) -> bool:
    """True if ``pid`` is alive and is the process created at ``created`` (:func:`process_created`, recorded by
    the process itself or its starter): not another process that was given the same pid, nor one a copied file
    names. A record of an older lander (psutil's epoch time) is compared as it was written."""
    if not isinstance(created, int | float) or isinstance(created, bool):
        return False
    try:
        now = psutil.Process(pid).create_time() if created > BOOT_RELATIVE else process_created(pid)
        return bool(abs(now - created) < 0.01)
    except (psutil.Error, OSError, ValueError, OverflowError):
        return False


def owner_process(run_dir: Path) -> int | None:
    """The pid of the process that holds ``run_dir``'s lock, checked to be the process that recorded itself in
    the lock file (pid and creation time); None if the lock is free or the file names another process."""
    lock = RunLock(run_dir)
    owner = lock.owner() or {}
    pid = owner.get("pid")
    if not lock.busy() or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    return pid if same_process(pid, owner.get("created")) else None
