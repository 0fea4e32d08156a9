"""Starting, stopping and resuming ``python -m lander.run`` processes for the service.

Requests are checked before anything starts (:mod:`lander.service.overrides`; a resumed run's saved config by
:func:`lander.config.trust.check_trusted`). A process gets its arguments as a list (no shell), its own session, an empty
working directory of the service's own and ``python -P`` (no directory a request or a copied run can write to is
on its ``sys.path``), :data:`lander.config.trust.ALLOW_ENV` (so it checks its own config again before it imports
anything), and its console in ``<run or sweep dir>/service.log``. At most ``max_running`` of them run at once.
What was launched is recorded in ``<root>/.lander-service/launched.jsonl``, so a restarted service still knows it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import yaml

from lander.config.trust import ALLOW_ENV, check_trusted
from lander.errors import ConfigError
from lander.service import files, store
from lander.service.overrides import Refused
from lander.storage.lock import RunLock, owner_process, process_created, same_process
from lander.storage.rundir import RunPaths, Status, new_directory
from lander.storage.yamlfile import safe_yaml

log = logging.getLogger(__name__)
MODULES = ("lander.run", "lander.compare", "lander.reproduce")  # what the service starts
SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []  # no working directory on sys.path (3.11+; 3.10: the
# empty working directory stands in for it)


def remove_working_directory(path: Path, children: dict[int, subprocess.Popen[bytes]]) -> None:
    """Remove the launched processes' working directory ``path`` unless one of ``children`` is still running (an
    empty directory: ``rmdir`` removes nothing else)."""
    if all(process.poll() is not None for process in children.values()):
        try:
            path.rmdir()
        except OSError as exc:
            log.warning("could not remove %s: %s", path, exc)


class Launcher:
    """Processes the service started, recorded under ``<root>/.lander-service``.

    :param root: the service's root (runs go to ``outputs/``, sweeps to ``multirun/``)
    :param max_running: the most launched processes alive at once (429 beyond)
    :param max_jobs: the most jobs one sweep may expand to (422 beyond)
    :param allowed: ``--allow-target`` prefixes: targets beyond lander's own that launched runs may import
    """

    def __init__(self, root: Path, max_running: int = 1, max_jobs: int = 100, allowed: list[str] | None = None) -> None:
        self.root = root.resolve()
        self.record = self.root / ".lander-service" / "launched.jsonl"
        self.children: dict[int, subprocess.Popen[bytes]] = {}  # reaped as they end (no zombies)
        self.max_running, self.max_jobs = max_running, max_jobs
        self.allowed = list(allowed or [])
        self._cwd: Path | None = None  # made at the first launch (:attr:`cwd`)
        self._starting = threading.RLock()  # counting the running processes and starting one: one at a time

    @property
    def cwd(self) -> Path:
        """The launched processes' working directory: an empty one of the service's own (nothing in it to import),
        made at the first launch, removed when the service ends (at its exit, or this launcher's collection) if no
        process it launched still runs there."""
        if self._cwd is None:
            self._cwd = Path(tempfile.mkdtemp(prefix="lander-service-"))
            weakref.finalize(self, remove_working_directory, self._cwd, self.children)
        return self._cwd

    def writable(self) -> None:
        if not os.access(self.root, os.W_OK):
            raise Refused(f"the root {self.root} is not writable: nothing was started", 409)

    def new_dir(self, place: str, label: str = "") -> Path:
        """A new directory, made (:func:`lander.storage.rundir.new_directory`) once the service may start a process
        (:meth:`writable`, :meth:`room`), as ``python -m lander.run`` names its own: ``outputs/<date>/<time>_<label>``
        for a run (``ppo_lunar_lander_seed-0``), ``multirun/<date>/<time>`` for a sweep; ``-2``, ``-3``, ... after it
        where another launch, or a command at a terminal, took that name. Called with :attr:`_starting` held, as
        :meth:`start` then takes it again."""
        self.writable()
        self.room()
        try:
            return new_directory(self.root / place, label)
        except OSError as exc:
            raise Refused(f"cannot write {self.root / place}: {exc.strerror or exc}; nothing was started", 409) from exc

    def start(
        self, args: list[str], directory: Path, kind: str, module: str = "lander.run", console: Path | None = None
    ) -> dict[str, Any]:
        """``python -P -m <module> <args>`` (``lander.run``, or :data:`MODULES`' others) in its own session; its
        console to ``console`` (default ``<directory>/service.log``)."""
        assert module in MODULES
        self.writable()
        command = [sys.executable, *SAFE_PATH, "-m", module, *args]  # a list: no shell reads the overrides
        env = os.environ | {ALLOW_ENV: ",".join(self.allowed), "PYTHONSAFEPATH": "1"}
        with self._starting:
            if kind == "resume":
                self.not_launched_into(directory, status(self.root, directory))
            if kind == "reproduce":
                self.not_reproducing(directory)
            self.room()
            log_file = console or directory / "service.log"
            try:
                log_file.parent.mkdir(parents=True, exist_ok=True)
                output = os.fdopen(files.append_only(log_file), "ab")
            except OSError as exc:
                raise Refused(
                    f"cannot write {log_file.parent}: {exc.strerror or exc}; nothing was started", 409
                ) from exc
            with output:
                process = subprocess.Popen(
                    command,
                    cwd=self.cwd,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            self.children[process.pid] = process
            entry = {
                "pid": process.pid,
                "kind": kind,
                "path": str(directory.relative_to(self.root)),
                "args": args,
                "started": time.time(),
                "created": created(process.pid),
            }
            self.record.parent.mkdir(exist_ok=True)
            with self.record.open("a") as handle:
                handle.write(json.dumps(entry) + "\n")
        return entry

    def not_launched_into(self, run: Path, current: str) -> None:
        """Refuse (409) a run directory a process this service started may still work in: a resume, which takes
        the run's lock only once its imports are done (seconds), or the run's first process before it recorded
        how it ended (``current`` status created or running); a second process must not start meanwhile."""
        path = str(run.relative_to(self.root))
        for entry in self.launched():
            starting = entry["kind"] == "resume" or current in (Status.RUNNING.value, Status.PAUSED.value, "created")
            if entry["alive"] and entry["path"] == path and starting:
                raise Refused(
                    f"{run.name} is being {'resumed' if entry['kind'] == 'resume' else 'run'} by process "
                    f"{entry['pid']}: it cannot be resumed now; nothing was started",
                    409,
                )

    def not_reproducing(self, run: Path) -> None:
        """Refuse (409) a second reproduction of ``run`` while one this service started is alive: both would pick
        the same ``<run>.reproduce-N``."""
        path = str(run.relative_to(self.root))
        for entry in self.launched():
            if entry["alive"] and entry["kind"] == "reproduce" and entry["path"] == path:
                raise Refused(
                    f"{run.name} is being reproduced by process {entry['pid']}: one reproduction at a time; "
                    "nothing was started",
                    409,
                )

    def room(self) -> None:
        """Refuse (429) while ``max_running`` launched processes are alive."""
        running = sum(entry["alive"] for entry in self.launched())
        if running >= self.max_running:
            raise Refused(
                f"{running} running of at most {self.max_running} (--max-running): wait for one to end, "
                "or stop one; nothing was started",
                429,
            )

    def launch_run(self, overrides: list[str], label: str = "") -> dict[str, Any]:
        """:param label: the run's name in its directory (:func:`lander.service.overrides.run_label`)"""
        with self._starting:
            directory = self.new_dir("outputs", label)
            return self.start([*overrides, f"hydra.run.dir={directory}"], directory, "run")

    def launch_sweep(self, overrides: list[str]) -> dict[str, Any]:
        with self._starting:
            directory = self.new_dir("multirun")
            return self.start(["--multirun", *overrides, f"hydra.sweep.dir={directory}"], directory, "sweep")

    def launch_comparison(
        self, runs: list[Path], baseline: str | None = None, at_timesteps: int | None = None
    ) -> dict[str, Any]:
        """``python -m lander.compare <run dirs> --out comparisons/<date>/<time> [--baseline=B] [--at-timesteps=N]``:
        any runs, from any sweeps or none, compared as a sweep's end compares its jobs; ``inputs.json`` there lists
        them. ``--baseline=B`` in one argument: a label starting with ``-`` is not read as an option."""
        options = [f"--baseline={baseline}"] if baseline is not None else []
        options += [f"--at-timesteps={at_timesteps}"] if at_timesteps is not None else []
        with self._starting:
            directory = self.new_dir("comparisons")
            try:
                (directory / "inputs.json").write_text(json.dumps([str(r.relative_to(self.root)) for r in runs]))
            except OSError as exc:
                raise Refused(f"cannot write {directory}: {exc.strerror or exc}; nothing was started", 409) from exc
            args = [*map(str, runs), "--out", str(directory), *options]
            return self.start(args, directory, "compare", "lander.compare")

    def processes(self) -> dict[str, bool]:
        """The directories (paths under the root) of the processes this root's services started, each with whether
        one of them still runs there."""
        found: dict[str, bool] = {}
        for entry in self.launched():
            found[entry["path"]] = found.get(entry["path"], False) or bool(entry["alive"])
        return found

    def launched(self) -> list[dict[str, Any]]:
        """Everything this root's services started, with ``alive`` (the process still runs lander)."""
        self.reap()
        try:
            text = files.read_text(self.root, self.record, store.MAX_RECORD)
        except files.Unreadable:
            return []  # none yet (or not a file this service wrote)
        entries = []
        for line in text.splitlines():
            try:
                entry = json.loads(line)
                entries.append(entry | {"alive": alive(int(entry["pid"]), entry.get("created"))})
            except (ValueError, TypeError, KeyError):
                continue  # a line cut short (a service killed while writing it)
        return entries

    def reap(self) -> None:
        for pid, process in list(self.children.items()):
            if process.poll() is not None:
                del self.children[pid]

    def stop(self, run: Path, group: bool = False) -> dict[str, Any]:
        """SIGINT to the process training ``run`` (running or paused): it stops as ``interrupted``, after a
        checkpoint (with the seeds it trains beside ``run``, if ``group``: :meth:`send`)."""
        sent = self.send(
            run, (Status.RUNNING, Status.PAUSED), signal.SIGINT, ("is not running", "nothing to stop"), group
        )
        return {"stopping": str(run.relative_to(self.root))} | sent

    def pause(self, run: Path, group: bool = False) -> dict[str, Any]:
        """SIGUSR1 to the process training ``run``: it waits at its next step as ``paused``
        (:mod:`lander.process.signals`)."""
        sent = self.send(
            run, (Status.RUNNING,), signal.SIGUSR1, ("is not running", "only a running run can be paused"), group
        )
        return {"pausing": str(run.relative_to(self.root))} | sent

    def go_on(self, run: Path, group: bool = False) -> dict[str, Any]:
        """SIGUSR2 to the process of the paused ``run``: it goes on from where it paused."""
        sent = self.send(run, (Status.PAUSED,), signal.SIGUSR2, ("is not paused", "nothing to continue"), group)
        return {"continuing": str(run.relative_to(self.root))} | sent

    def send(
        self, run: Path, statuses: tuple[Status, ...], signum: int, said: tuple[str, str], group: bool
    ) -> dict[str, Any]:
        """Send ``signum`` to the process that holds ``run``, if the run's status is one of ``statuses``; else
        409 saying ``{run} {state} (status ...): {answer}`` (``said``). A process that trains other seeds beside
        ``run`` (``seeds_per_process``: :func:`lander.service.store.process_group`) gets the signal only if
        ``group`` says it is meant for all of them; else 409 naming them. Returns ``{"pid", "group"}``: the pid and
        every run the signal reaches."""
        state, answer = said
        lock, current = RunLock(run), status(self.root, run)
        owner = lock.owner() or {}
        if current not in {s.value for s in statuses} or not lock.busy() or not owner.get("pid"):
            raise Refused(f"{run.name} {state} (status {current}): {answer}", 409)
        if owner.get("host") not in (None, socket.gethostname()):  # a root shared between machines
            raise Refused(f"{run.name} runs on {owner['host']}, not on this machine: act on it there", 409)
        pid = owner_process(run)  # the pid and creation time the lock file records must be a live process's
        if pid is None:
            raise Refused(
                f"{run.name}: its lock file names process {owner.get('pid')!r}, which is not the process holding "
                "the run (a copied or edited lock file, or a pid reused): no signal was sent",
                409,
            )
        seeds = store.process_group(self.root, run)
        if len(seeds) > 1 and not group:
            raise Refused(
                f"{run.name} trains side by side with {len(seeds) - 1} other seed(s) in process {pid} "
                f"(seeds_per_process): a signal reaches all of them ({', '.join(Path(s).name for s in seeds)}); send "
                '{"group": true} to act on the group; nothing was sent',
                409,
            )
        try:
            os.kill(pid, signum)
        except OSError as exc:  # it ended just now, or is not this user's
            raise Refused(f"{run.name}: process {pid} could not be signalled ({exc.strerror}): {answer}", 409) from exc
        return {"pid": pid, "group": seeds}

    def resume(self, run: Path) -> dict[str, Any]:
        """``python -m lander.run resume=<run>`` for an interrupted, failed or killed run whose saved config
        imports and resolves only what lander trusts (:func:`lander.config.trust.check_trusted`)."""
        if RunLock(run).busy():  # before the status: a run that ends meanwhile is read as it ended
            raise Refused(f"{run.name} is running (or still writing its last files): it cannot be resumed now", 409)
        current = status(self.root, run)
        if current == Status.COMPLETED.value:
            raise Refused(f"{run.name} is completed: nothing to resume", 409)
        self.check_saved_config(run, "resumed")
        return self.start([f"resume={run}"], run, "resume")

    def reproduce(self, run: Path, steps: int | None = None) -> dict[str, Any]:
        """``python -m lander.reproduce <run> [--steps N]`` for a run no process holds, whose saved config lander
        trusts: it trains the run again into ``<run>.reproduce-N`` and writes its verdict there
        (``reproduction.json``); its console goes to ``<root>/.lander-service/reproductions/``, the run itself
        is only read."""
        if RunLock(run).busy():
            raise Refused(f"{run.name} is running (or still writing its last files): reproduce it once it ends", 409)
        summary = store.summary_of(self.root, run)[0]
        if summary.get("status") != Status.COMPLETED.value and not summary.get("timesteps"):
            raise Refused(f"{run.name} has not trained a step: nothing to reproduce", 409)
        self.check_saved_config(run, "reproduced")
        args = [str(run), *(["--steps", str(steps)] if steps is not None else [])]
        args += [f"--allow-target={prefix}" for prefix in self.allowed]
        console = self.record.parent / "reproductions" / f"{datetime.now():%Y-%m-%d_%H-%M-%S}_{run.name}.log"
        return self.start(args, run, "reproduce", "lander.reproduce", console)

    def check_saved_config(self, run: Path, verb: str) -> None:
        """The run's saved config imports and resolves only what lander trusts, and none of its files leads out of
        it (the run appends to them); else 422 saying why it cannot be ``verb`` by the service."""
        config = RunPaths(run).config
        try:
            saved = safe_yaml(files.read_text(self.root, config, store.MAX_CONFIG), files.shown(self.root, config))
            if not isinstance(saved, dict):
                raise ConfigError(f"{config}: not a mapping of keys")
            check_trusted(saved, self.allowed, where=str(config.relative_to(self.root)))
            files.check_contained(self.root, run)
        except (files.Unreadable, yaml.YAMLError, ConfigError) as exc:
            raise Refused(f"{run.name} cannot be {verb} by the service: {str(exc).splitlines()[0]}") from exc


def status(root: Path, run: Path) -> str:
    """A run's status from its ``summary.json``, read as the listing reads it ("unreadable" if it cannot be)."""
    return str(store.summary_of(root, run)[0].get("status", "created"))


def created(pid: int) -> float | None:
    """The creation time of process ``pid`` (:func:`lander.storage.lock.process_created`), recorded with it; None
    if it has ended already."""
    try:
        return process_created(pid)
    except psutil.Error:
        return None


def alive(pid: int, recorded: object) -> bool:
    """True if ``pid`` is the very process the record names (its creation time ``recorded``, :func:`created`) and
    still runs lander (:data:`MODULES`): a pid reused by another process, or a record without it, is not ours."""
    if not same_process(pid, recorded):
        return False
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return any(module.encode() in command for module in MODULES)
