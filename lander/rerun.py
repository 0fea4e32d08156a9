"""Re-running a sweep to complete it: the same ``--multirun`` command with ``hydra.sweep.dir=<that sweep>``.

Every job finds its directory (``<sweep>/<job number>``) already there and :func:`plan_job` says what to do
with it: skip it (completed: its files are left as they are), resume it from its newest checkpoint
(interrupted, or killed with ``kill -9``), or start it again (failed, or killed before its first checkpoint)
after moving the earlier attempt's files to ``attempts/<n>/``. :func:`check_same_sweep` refuses a re-run
whose jobs would not be the same ones (other overrides or sweep parameters), before anything is written.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Literal

from omegaconf import DictConfig, OmegaConf

from lander.config import ConfigError
from lander.rundir import RunPaths, RunSummary, Status, find_checkpoints

log = logging.getLogger(__name__)
Plan = Literal["fresh", "skip", "resume", "retry"]


def plan_job(paths: RunPaths) -> Plan:
    """What a (re-)started job does with its directory, from its ``summary.json`` and checkpoints."""
    summary = RunSummary.load(paths)
    if summary is None:
        return "fresh"
    if summary.status == Status.COMPLETED:
        return "skip"
    if summary.status in (Status.RUNNING, Status.INTERRUPTED) and find_checkpoints(paths.checkpoints):
        return "resume"
    return "retry"


def set_aside(paths: RunPaths) -> Path:
    """Move an earlier attempt's files (all but ``.hydra/``, the log and earlier attempts) to ``attempts/<n>/``."""
    attempts = paths.root / "attempts"
    target = attempts / str(len(list(attempts.glob("*"))) + 1 if attempts.is_dir() else 1)
    target.mkdir(parents=True)
    for item in paths.root.iterdir():
        if item.name not in (".hydra", "attempts") and item.suffix != ".log":
            shutil.move(str(item), str(target / item.name))
    return target


def continue_job(cfg: DictConfig, paths: RunPaths) -> RunSummary | None:
    """A directory that already holds this job (a re-run sweep): skip it if it completed (its summary is
    returned), resume it from its newest checkpoint, or set the failed attempt aside and start again."""
    if cfg.resume is not None:
        return None
    plan = plan_job(paths)
    if plan == "skip":
        log.info("%s: already completed, skipped (its files are left as they are)", paths.root)
        return RunSummary.load(paths)
    if plan == "resume":
        log.info("%s: interrupted earlier; resuming from its newest checkpoint", paths.root)
        cfg.resume = str(paths.root)
    elif plan == "retry":
        log.info(
            "%s: failed or stopped before a checkpoint; earlier attempt moved to %s, starting again",
            paths.root,
            set_aside(paths),
        )
    return None


def check_same_sweep(config: DictConfig) -> None:
    """Refuse to run a sweep into a directory that holds a different sweep (``multirun.yaml`` says which).

    Job N's directory is ``<sweep dir>/N``: with other overrides or sweep parameters, job N would be another
    configuration, and a completed run would be skipped under the wrong name.
    """
    saved = Path(config.hydra.sweep.dir) / "multirun.yaml"
    if not saved.is_file():
        return
    old = OmegaConf.load(saved)
    for key, what in (("hydra.overrides.task", "overrides"), ("hydra.sweeper.params", "sweep parameters")):
        before, now = OmegaConf.select(old, key), OmegaConf.select(config, key)
        before = OmegaConf.to_container(before) if before is not None else None
        now = OmegaConf.to_container(now) if now is not None else None
        if before != now:
            raise ConfigError(
                f"hydra.sweep.dir={config.hydra.sweep.dir} holds a sweep with other {what}: "
                f"{before} there, {now} now. Re-run it with the same command to complete it, "
                "or give a new hydra.sweep.dir"
            )
