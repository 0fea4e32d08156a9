"""Re-running a sweep to complete it: the same ``--multirun`` command with ``hydra.sweep.dir=<that sweep>``.

Every job finds its directory (``<sweep>/<job number>``) already there and :func:`plan_job` says what to do
with it: skip it (completed: its files are left as they are), resume it from its newest checkpoint
(interrupted, or killed with ``kill -9``), or start it again (failed, or killed before its first checkpoint)
after moving the earlier attempt's files to ``attempts/<n>/``. :func:`check_same_sweep` refuses a re-run
whose jobs would not be the same ones (other overrides or sweep parameters), before anything is written.

An Optuna search (``hparams_search=...``) names each trial's directory by its start time, so there is no job
directory to resume; :func:`continue_study` instead counts ``n_trials`` over the whole stored study, marks
trials that a kill left "running" as failed, queues their parameters again and moves their directories
to ``attempts/``. Re-running the command then completes the study to ``n_trials``.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, RangeSweep
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, read_write

from lander.config.precheck import ADASTOP, same_overrides
from lander.errors import ConfigError
from lander.storage.lock import NAME as LOCK_NAME
from lander.storage.rundir import (
    RUN_ENTRIES,
    RunPaths,
    RunSummary,
    Status,
    SweepPaths,
    find_checkpoints,
    find_run_dirs,
)
from lander.storage.yamlfile import check_aliases

log = logging.getLogger(__name__)
Plan = Literal["fresh", "skip", "resume", "retry"]


def plan_job(paths: RunPaths) -> Plan:
    """What a (re-)started job does with its directory, from its ``summary.json`` and checkpoints."""
    summary = RunSummary.load(paths)
    if summary is None:
        return "fresh"
    if summary.status == Status.COMPLETED:
        return "skip"
    killed = summary.status == Status.FAILED and (summary.error or "").startswith(
        "killed by"
    )  # lander.execution.isolate
    if (summary.status.alive or summary.status == Status.INTERRUPTED or killed) and find_checkpoints(paths.checkpoints):
        return "resume"
    return "retry"


def set_aside(paths: RunPaths) -> Path:
    """Move an earlier attempt's files (all but ``.hydra/``, the logs and earlier attempts) to ``attempts/<n>/``.

    Only what a run writes is moved (:data:`lander.storage.rundir.RUN_ENTRIES`): anything else in the directory
    (a user's notes) stays where it is."""
    attempts = paths.root / "attempts"
    target = attempts / str(len(list(attempts.glob("*"))) + 1 if attempts.is_dir() else 1)
    target.mkdir(parents=True)
    for item in paths.root.iterdir():
        if item.name in RUN_ENTRIES - {".hydra", "attempts", LOCK_NAME} and item.suffix != ".log":
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


def rerun_command(sweep_dir: Path, seed: str | None = None) -> str:
    """The command that completes the sweep in ``sweep_dir``: this process's own command line with
    ``hydra.sweep.dir=<it>`` (completed jobs are skipped, stopped ones resumed, the others run); with ``seed``, its
    ``seed=`` override that instead (:func:`seeds_elsewhere`)."""
    given = [a for a in sys.argv[1:] if not a.startswith("hydra.sweep.dir=")]
    if seed is not None:
        given = [f"seed={seed}" if a.startswith("seed=") else a for a in given]
    return shlex.join(["python", "-m", "lander.run", *given, f"hydra.sweep.dir={sweep_dir}"])


def check_same_sweep(config: DictConfig) -> None:
    """Refuse to run a sweep into a directory that holds a different sweep (``multirun.yaml`` says which).

    Job N's directory is ``<sweep dir>/N``: with other overrides or sweep parameters, job N would be another
    configuration, and a completed run would be skipped under the wrong name.
    """
    saved = SweepPaths(config.hydra.sweep.dir).multirun
    if not saved.is_file():
        return
    text = saved.read_text()
    check_aliases(text, str(saved))
    old = OmegaConf.create(text)
    keys = [("hydra.overrides.task", "overrides"), ("hydra.sweeper.params", "sweep parameters")]
    if str(OmegaConf.select(config, "hydra.sweeper._target_", default="")).endswith(ADASTOP):  # its interims
        # follow its keys
        keys.append(("hydra.sweeper", "AdaStop settings (n, K, alpha, B, baseline, score, seed)"))
    for key, what in keys:
        before, now = OmegaConf.select(old, key), OmegaConf.select(config, key)
        before = OmegaConf.to_container(before) if before is not None else None
        now = OmegaConf.to_container(now) if now is not None else None
        if key == "hydra.overrides.task" and same_overrides(before, now):
            with read_write(config):  # Hydra numbers the jobs in the order of the overrides: the saved order keeps
                config.hydra.overrides.task = before  # job N the configuration it was
            continue
        added = more_seeds(before, now) if key == "hydra.overrides.task" else None
        if added:
            raise ConfigError(seeds_elsewhere(Path(config.hydra.sweep.dir), *added))
        if before != now:
            raise ConfigError(
                f"hydra.sweep.dir={config.hydra.sweep.dir} holds a sweep with other {what}: "
                f"{before} there, {now} now. Re-run it with the same command to complete it, "
                "or give a new hydra.sweep.dir"
            )


def sweep_seeds(override: str) -> list[int] | None:
    """The seeds of a ``seed=`` override as Hydra's parser reads it: ``seed=0,1,2`` or ``seed=range(5)``
    (``range(2, 5)``, ``range(0, 10, 2)``), integers in order; None for any other form (``choice(...)``,
    ``shuffle(...)``, a step of 0, anything not an integer). The parser is Hydra's, as the sweep's own."""
    try:
        value = OverridesParser.create().parse_overrides([override])[0].value()
    except HydraException:
        return None
    if isinstance(value, RangeSweep):
        bounds = [value.start, value.stop, value.step]
        if value.shuffle or value.step == 0 or not all(type(b) is int for b in bounds):
            return None
        return list(range(*bounds))  # type: ignore[arg-type]  # ints, checked above
    if isinstance(value, ChoiceSweep):
        if not value.simple_form or value.shuffle:
            return None
        values: list[Any] = list(value.list)
    else:
        values = [value]
    if not all(type(v) in (int, str) for v in values):
        return None
    try:
        return [int(v) for v in values]  # a string of digits ("007") as OmegaConf makes it the int field's 7
    except ValueError:
        return None


def more_seeds(before: object, now: object) -> tuple[str, list[int]] | None:
    """Where two sweeps' overrides (``hydra.overrides.task``) differ only in ``seed=`` (:func:`sweep_seeds` reads
    both) and ``now`` adds seeds: the same experiment given more seeds. Its ``seed=`` override before, and the seeds
    added; None otherwise."""

    def seeds_and_rest(overrides: list[str]) -> tuple[list[str], list[str]]:
        seeds = [o for o in overrides if o.startswith("seed=")]
        return seeds, sorted(o for o in overrides if not o.startswith("seed="))

    if not isinstance(before, list) or not isinstance(now, list):
        return None
    (old, rest_before), (new, rest_now) = seeds_and_rest(before), seeds_and_rest(now)
    if len(old) != 1 or len(new) != 1 or rest_before != rest_now:
        return None
    old_seeds, new_seeds = sweep_seeds(old[0]), sweep_seeds(new[0])
    if old_seeds is None or new_seeds is None:
        return None
    added = [seed for seed in new_seeds if seed not in old_seeds]
    return (old[0], added) if added else None


def seeds_elsewhere(sweep_dir: Path, seeds: str, added: list[int]) -> str:
    """Why a sweep with more seeds is refused the directory of the sweep of ``seeds`` (its ``seed=`` override), and
    the two commands that add them (:func:`more_seeds`): the new seeds into a directory of their own, then one
    comparison of both, into a third (the first sweep's ``comparison/`` stays its own)."""
    listed = ",".join(map(str, added))
    more = sweep_dir.with_name(sweep_dir.name + "-more-seeds")
    run = rerun_command(more, seed=listed)
    together = sweep_dir.with_name(sweep_dir.name + "-all-seeds")  # not the first sweep's own comparison/
    compare = shlex.join(["python", "-m", "lander.compare", str(sweep_dir), str(more), "--out", str(together)])
    return (
        f"hydra.sweep.dir={sweep_dir} holds this sweep with {seeds}, and a sweep's job N is its Nth configuration "
        f"and seed, so one with other seeds cannot share it. To add seed(s) {listed}, run them into a "
        f"directory of their own and compare the two sweeps together: {run} && {compare}"
    )


def continue_study(config: DictConfig) -> None:
    """For an Optuna sweep into a directory that already holds its study: run only the trials still missing."""
    sweeper = config.hydra.sweeper
    if "optuna" not in str(sweeper.get("_target_", "")) or not sweeper.get("storage"):
        return
    sweep_dir = Path(config.hydra.sweep.dir)
    if not sweep_dir.is_dir() or not any(sweep_dir.iterdir()):  # a new search (its SQLite file would go in there;
        return  # lander's default directory is made empty when the sweep starts: lander.storage.rundir.claim_directory)
    import optuna  # 2.0 s (measured, time.perf_counter around the import): only to resume an Optuna search

    try:
        study = optuna.load_study(study_name=sweeper.study_name, storage=sweeper.storage)
    except KeyError:  # no such study yet: a new search
        return
    killed = [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]
    for trial in killed:  # no invocation is running (this one has not started): these were killed
        study._storage.set_trial_state(trial._trial_id, optuna.trial.TrialState.FAIL)  # optuna 2.x (the sweeper's)
        study.enqueue_trial(trial.params)
    for job in find_run_dirs([Path(config.hydra.sweep.dir)]):
        summary = RunSummary.load(RunPaths(job))
        if summary is None or summary.status.alive:
            target = Path(config.hydra.sweep.dir) / "attempts" / job.name
            log.info("trial directory %s was killed; moved to %s (its parameters are queued again)", job, target)
            target.parent.mkdir(exist_ok=True)
            shutil.move(str(job), str(target))
    finished = sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    with read_write(config):
        sweeper.n_trials = max(0, int(sweeper.n_trials) - finished)
        if sweeper.get("sampler") and sweeper.sampler.get("seed") is not None:  # a fresh sampler with the same
            sweeper.sampler.seed = int(sweeper.sampler.seed) + len(study.trials)  # seed would repeat the trials
    log.info(
        "continuing study %s: %d trials finished, %d to go (%d killed ones again)",
        sweeper.study_name,
        finished,
        sweeper.n_trials,
        len(killed),
    )
