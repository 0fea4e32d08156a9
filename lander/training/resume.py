"""Resuming a run in its own directory: ``python -m lander.run resume=<run dir>``.

The run continues from its newest checkpoint that loads (a truncated or foreign one is skipped for the
one before it; a run killed before its first checkpoint starts again from step 0), with the run's own
saved config, checked against the schema again, until the original budget. Metric rows recorded after
that checkpoint (by a run killed before it could save) are dropped, so no step is counted twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lander.config.precheck import check_resumable
from lander.config.schema import load_saved
from lander.errors import RunFileError
from lander.evaluation.loading import safe_load
from lander.storage.csvlog import cut_csv, number, read_complete, write_csv
from lander.storage.normalization import load_stats, stats_path
from lander.storage.replay import load_buffer
from lander.storage.rundir import RunPaths, RunSummary, Status, atomic_write, find_checkpoints
from lander.tracking.base import Tracker
from lander.training.callbacks import EpisodeLogger, PeriodicEval, ResourceMonitor, replay_buffer_path

log = logging.getLogger(__name__)


def resume_config(run_dir: Path, total_timesteps: int | None = None) -> DictConfig:
    """The saved config of the run in ``run_dir``, with ``resume`` set; an error if it cannot be resumed.

    :param total_timesteps: a new budget (``resume=<run> total_timesteps=N``): a completed run is trained
        further, to N steps
    """

    paths = RunPaths(run_dir)
    check_resumable(run_dir, total_timesteps)
    cfg = load_saved(paths.config)  # an edited config is checked as a composed one is
    OmegaConf.set_struct(cfg, False)
    cfg.resume = str(run_dir)
    if total_timesteps is not None:
        cfg.total_timesteps = total_timesteps
    return cfg


def load_newest_checkpoint(cfg: DictConfig, paths: RunPaths, env: VecEnv) -> BaseAlgorithm | None:
    """The newest checkpoint of the run that loads (with its replay buffer), on ``env``; None if the run has
    no checkpoint (it starts again from step 0); an error if it has checkpoints and none loads."""
    found = find_checkpoints(paths.checkpoints)
    summary = RunSummary.load(paths)
    if summary is not None and summary.status == Status.COMPLETED and (not found or found[0][0] < summary.timesteps):
        found.insert(0, (summary.timesteps, paths.model))  # trained further: from its final model
    reasons = []
    for steps, path in found:
        try:
            model = safe_load(cfg, path, env)
            if isinstance(env, VecNormalize):  # its statistics, saved beside the checkpoint as arrays
                load_stats(env, stats_path(path), model.num_timesteps)
            replay = replay_buffer_path(paths.checkpoints, steps)
            if os.path.lexists(replay) and getattr(model, "replay_buffer", None) is not None:  # a FIFO is refused
                load_buffer(model.replay_buffer, replay)  # type: ignore[attr-defined]
            elif getattr(model, "replay_buffer", None) is not None:
                log.warning("no replay buffer saved at %d steps: training goes on with an empty one", steps)
        except RunFileError as exc:
            log.warning("checkpoint %s not used: %s; trying the one before", path.name, exc)
            reasons.append(str(exc))
            continue
        model.num_timesteps = steps
        model._last_obs = None  # the envs are new: learn() resets them
        log.info("resuming from %s", path.name)
        return model
    if found:
        raise RunFileError(f"resume={str(paths.root)!r}: no checkpoint loads: {'; '.join(reasons)}")
    log.info("no checkpoint in %s: starting again from step 0", paths.checkpoints)
    return None


def log_again(paths: RunPaths, trackers: Iterable[Tracker], after: int, upto: int) -> int:
    """Log to ``trackers`` again what the metric files hold after step ``after`` up to ``upto``: the rows that a
    killed attempt's trackers may have lost (they were never finished: W&B's writer loses what it had not written),
    so that a resumed run's trackers hold every row its CSV files hold. Returns the number of rows logged."""
    rows: list[tuple[int, dict[str, float]]] = []
    for path, column, tracked in (
        (paths.train_episodes, "timesteps", EpisodeLogger.tracked),
        (paths.eval_csv, "timesteps", PeriodicEval.tracked),
        (paths.resources, "timesteps", ResourceMonitor.tracked),
        (paths.sb3_progress, "time/total_timesteps", progress_numbers),
    ):
        for row in read_complete(path)[1]:
            step = number(row.get(column))
            if step is None or not after < step <= upto:
                continue
            with contextlib.suppress(KeyError, ValueError):  # a row edited by hand: its text is not the run's numbers
                rows.append((int(step), tracked(row)))
    for step, metrics in sorted(rows, key=lambda found: found[0]):
        for tracker in trackers:
            tracker.log(metrics, step)
    return len(rows)


def progress_numbers(row: dict[str, str]) -> dict[str, float]:
    """A row of SB3's ``progress.csv`` as its logger gave it to the trackers: the keys that have a value."""
    out = {}
    for key, value in row.items():
        with contextlib.suppress(TypeError, ValueError):  # an empty cell: no value that time
            out[key] = float(value)
    return out


def truncate_metrics(paths: RunPaths, timesteps: int) -> None:
    """Repair the metric files and drop rows recorded after ``timesteps`` (the callbacks go on from there):
    every file gets its header, a row cut short by a kill is dropped, and evaluation episodes without
    their evaluation's row (a kill between the two) go too."""

    for path, column, columns in (
        (paths.train_episodes, "timesteps", EpisodeLogger.COLUMNS),
        (paths.eval_csv, "timesteps", PeriodicEval.COLUMNS),
        (paths.eval_episodes, "timesteps", PeriodicEval.EPISODE_COLUMNS),
        (paths.resources, "timesteps", ResourceMonitor.COLUMNS),
        (paths.sb3_progress, "time/total_timesteps", ()),
    ):
        cut_csv(path, column, timesteps, columns)
    evaluated = {row["timesteps"] for row in read_complete(paths.eval_csv)[1]}
    fields, episodes = read_complete(paths.eval_episodes)
    if fields and any(row["timesteps"] not in evaluated for row in episodes):
        kept = [row for row in episodes if row["timesteps"] in evaluated]
        atomic_write(paths.eval_episodes, partial(write_csv, fields=fields, rows=kept))
