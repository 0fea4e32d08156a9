"""Starting, stopping and resuming ``python -m lander.run`` processes for the service.

Overrides are checked before anything starts: keys that would let a request run any Python callable
(``_target_``), write outside the root or change Hydra (``hydra.*``, ``hydra/...``), interpolations (``${...}``,
which could read the service's environment) and flags are refused; then the config of every job is composed
and validated as ``python -m lander.run`` would (:func:`lander.precheck.check_command`). A process gets its
arguments as a list (no shell), its own session, and its console in ``<run or sweep dir>/service.log``. What was
launched is recorded in ``<root>/.lander-service/launched.jsonl``, so a restarted service still knows it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from lander.config import ConfigError
from lander.lock import RunLock
from lander.rundir import RunPaths, RunSummary, Status

REFUSED_KEYS = ("hydra", "resume")  # a run is resumed by its own endpoint, on a directory of the root
_compose_lock = threading.Lock()  # Hydra's composition uses process-wide state


class Refused(ValueError):
    """A request that cannot be carried out as asked; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def check_overrides(overrides: list[Any], multirun: bool) -> list[str]:
    """Refuse what a request may not set, then compose and validate every job; return the overrides."""
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise Refused('"overrides" must be a list of strings such as ["algo=ppo", "seed=0"]')
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        if override.startswith("-") or "=" not in override:
            raise Refused(f"{override!r}: each override is key=value (no flags; a sweep is POST /api/sweeps)")
        if "_target_" in override or key.split(".")[0].split("/")[0] in REFUSED_KEYS:
            raise Refused(f"{override!r}: keys _target_, hydra.* and resume are not accepted by the service")
        if "${" in override:
            raise Refused(f"{override!r}: interpolations (${{...}}) are not accepted by the service")
        if key == "env.id" and ":" in override.split("=", 1)[1]:  # gymnasium imports the module before the ':'
            raise Refused(f"{override!r}: env ids naming a module to import are not accepted by the service")
    from lander.precheck import check_command

    with _compose_lock:
        try:
            check_command(["--multirun", *overrides] if multirun else list(overrides))
            compose_first(overrides)
        except ConfigError as exc:
            raise Refused(str(exc)) from exc
    return list(overrides)


def compose_first(overrides: list[str]) -> None:
    """Compose the first job as Hydra will; Hydra's own error (a bad group name, an unparsable value) as
    :class:`ConfigError` (``check_command`` leaves those to Hydra)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from lander.config import CONF_DIR
    from lander.precheck import job_overrides
    from lander.schema import register_configs

    register_configs()
    try:
        first = job_overrides(overrides, multirun=True)[0] if overrides else []
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            compose(config_name="config", overrides=first)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(hydra_message(exc)) from exc


def hydra_message(exc: BaseException) -> str:
    """Hydra's error in one line: the message, the options it lists (not its search path), and the cause."""
    text = str(exc).split("Config search path:")[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    message = lines[0] + (f"; {lines[1]} {', '.join(lines[2:])}" if len(lines) > 2 else "".join(lines[1:2]))
    cause = exc.__cause__
    if cause is not None and str(cause).strip():
        message += f": {str(cause).strip().splitlines()[0]}"  # e.g. "Value 'x' could not be converted to Integer"
    return message


class Launcher:
    """Processes the service started, recorded under ``<root>/.lander-service``.

    :param root: the service's root (runs go to ``outputs/``, sweeps to ``multirun/``)
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.record = self.root / ".lander-service" / "launched.jsonl"
        self.children: dict[int, subprocess.Popen] = {}  # reaped as they end (no zombies)

    def writable(self) -> None:
        if not os.access(self.root, os.W_OK):
            raise Refused(f"the root {self.root} is not writable: nothing was started", 409)

    def new_dir(self, place: str) -> Path:
        """A fresh ``outputs/<date>/<time>_service-<n>`` (or ``multirun/...``) directory name, not created."""
        now = datetime.now()
        base = self.root / place / now.strftime("%Y-%m-%d") / now.strftime("%H-%M-%S")
        n = 0
        while base.with_name(f"{base.name}_service-{n}").exists():
            n += 1
        return base.with_name(f"{base.name}_service-{n}")

    def start(self, args: list[str], directory: Path, kind: str) -> dict[str, Any]:
        """``python -m lander.run <args>`` in its own session; its console to ``<directory>/service.log``."""
        self.writable()
        command = [sys.executable, "-m", "lander.run", *args]  # a list: no shell reads the overrides
        try:
            directory.mkdir(parents=True, exist_ok=True)
            console = (directory / "service.log").open("ab")
        except OSError as exc:
            raise Refused(f"cannot write {directory}: {exc.strerror}; nothing was started", 409) from exc
        with console:
            process = subprocess.Popen(command, cwd=self.root, stdout=console, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        self.children[process.pid] = process
        entry = {"pid": process.pid, "kind": kind, "path": str(directory.relative_to(self.root)), "args": args,
                 "started": time.time()}  # fmt: skip
        self.record.parent.mkdir(exist_ok=True)
        with self.record.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")
        return entry

    def launch_run(self, overrides: list[str]) -> dict[str, Any]:
        directory = self.new_dir("outputs")
        return self.start([*overrides, f"hydra.run.dir={directory}"], directory, "run")

    def launch_sweep(self, overrides: list[str]) -> dict[str, Any]:
        directory = self.new_dir("multirun")
        return self.start(["--multirun", *overrides, f"hydra.sweep.dir={directory}"], directory, "sweep")

    def launched(self) -> list[dict[str, Any]]:
        """Everything this root's services started, with ``alive`` (the process still runs lander)."""
        self.reap()
        if not self.record.is_file():
            return []
        entries = [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]
        return [e | {"alive": alive(e["pid"], e["started"])} for e in entries]

    def reap(self) -> None:
        for pid, process in list(self.children.items()):
            if process.poll() is not None:
                del self.children[pid]

    def stop(self, run: Path) -> dict[str, Any]:
        """SIGINT to the process training ``run``: it stops as ``interrupted``, after a checkpoint."""
        lock, current = RunLock(run), status(run)
        owner = lock.owner() or {}
        if current != Status.RUNNING.value or not lock.busy() or not owner.get("pid"):
            raise Refused(f"{run.name} is not running (status {current}): nothing to stop", 409)
        if owner.get("host") not in (None, socket.gethostname()):  # a root shared between machines
            raise Refused(f"{run.name} runs on {owner['host']}, not on this machine: stop it there", 409)
        os.kill(int(owner["pid"]), signal.SIGINT)
        return {"stopping": str(run.relative_to(self.root)), "pid": owner["pid"]}

    def resume(self, run: Path) -> dict[str, Any]:
        """``python -m lander.run resume=<run>`` for an interrupted, failed or killed run."""
        current = status(run)
        if RunLock(run).busy():
            raise Refused(f"{run.name} is running (or still writing its last files): it cannot be resumed now", 409)
        if current == Status.COMPLETED.value:
            raise Refused(f"{run.name} is completed: nothing to resume", 409)
        return self.start([f"resume={run}"], run, "resume")


def status(run: Path) -> str:
    summary = RunSummary.load(RunPaths(run))
    return summary.status.value if summary else "created"


def alive(pid: int, started: float) -> bool:
    """True if ``pid`` still runs ``lander.run`` and was not started before the record (a reused pid is not ours)."""
    try:
        os.kill(pid, 0)
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        seen = Path(f"/proc/{pid}").stat().st_mtime  # when the kernel first showed the process: not before its start
    except OSError:
        return False
    return b"lander.run" in command and seen >= started - 5
