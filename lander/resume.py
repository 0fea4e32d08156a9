"""Resuming a run in its own directory: ``python -m lander.run resume=<run dir>``.

The run continues from its newest checkpoint that loads (a truncated or corrupted one is skipped for
the one before it), with the run's own saved config, until the original budget. Metric rows recorded
after that checkpoint (by a run killed before it could save) are dropped, so no step is counted twice.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from lander.config import ConfigError
from lander.loading import safe_load
from lander.rundir import RunPaths, RunSummary, Status, atomic_write, find_checkpoints

log = logging.getLogger(__name__)


def resume_config(run_dir: Path) -> DictConfig:
    """The saved config of the run in ``run_dir``, with ``resume`` set; an error if it cannot be resumed."""
    paths = RunPaths(run_dir)
    if not paths.is_run():
        raise ConfigError(f"resume={str(run_dir)!r} is not a lander run directory (no .hydra/config.yaml)")
    summary = RunSummary.load(paths)
    if summary is not None and summary.status == Status.COMPLETED:
        raise ConfigError(f"resume={str(run_dir)!r}: that run is already completed (summary.json)")
    cfg = OmegaConf.load(paths.config)
    cfg.resume = str(run_dir)
    return cfg  # type: ignore[return-value]


def load_newest_checkpoint(cfg: DictConfig, paths: RunPaths, env: VecEnv) -> BaseAlgorithm:
    """Load the newest checkpoint of the run that loads, onto ``env``; log the ones skipped."""
    for steps, path in find_checkpoints(paths.checkpoints):
        try:
            model = safe_load(cfg, path, env)
        except Exception as exc:
            log.warning(
                "checkpoint %s does not load (%s: %s); trying the one before", path.name, type(exc).__name__, exc
            )
            continue
        replay = paths.checkpoints / f"replay_buffer_{steps}_steps.pkl"
        if replay.is_file() and hasattr(model, "load_replay_buffer"):
            model.load_replay_buffer(replay)
        model.num_timesteps = steps
        model._last_obs = None  # type: ignore[assignment]  # the envs are new: learn() resets them
        log.info("resuming from %s", path.name)
        return model
    raise ConfigError(f"resume={str(paths.root)!r}: no checkpoint in {paths.checkpoints} loads")


def truncate_metrics(paths: RunPaths, timesteps: int) -> None:
    """Drop metric rows recorded after ``timesteps`` (the callbacks then go on from the rows kept)."""
    for path, column in (
        (paths.train_episodes, "timesteps"),
        (paths.eval_csv, "timesteps"),
        (paths.eval_episodes, "timesteps"),
        (paths.sb3_progress, "time/total_timesteps"),
    ):
        if not path.is_file() or not path.stat().st_size:
            continue
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            fields = reader.fieldnames or []
            rows = [r for r in reader if r.get(column) not in (None, "") and float(r[column]) <= timesteps]
        atomic_write(path, partial(_write_csv, fields=fields, rows=rows))


def _write_csv(path: Path, fields: Sequence[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
