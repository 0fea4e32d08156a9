"""Resuming a run in its own directory: ``python -m lander.run resume=<run dir>``.

The run continues from its newest checkpoint that loads (a truncated or corrupted one is skipped for
the one before it), with the run's own saved config, until the original budget. Metric rows recorded
after that checkpoint (by a run killed before it could save) are dropped, so no step is counted twice.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from lander.checkpoints import find_checkpoints
from lander.config import ConfigError
from lander.loading import safe_load

log = logging.getLogger(__name__)
# metrics file -> its timestep column
METRICS = {"train_episodes.csv": "timesteps", "eval.csv": "timesteps", "eval_episodes.csv": "timesteps",
           "sb3_progress.csv": "time/total_timesteps"}


def resume_config(run_dir: Path) -> DictConfig:
    """The saved config of the run in ``run_dir``, with ``resume`` set; an error if it cannot be resumed."""
    config, summary = run_dir / ".hydra" / "config.yaml", run_dir / "summary.json"
    if not config.is_file():
        raise ConfigError(f"resume={str(run_dir)!r} is not a lander run directory (no .hydra/config.yaml)")
    status = json.loads(summary.read_text()).get("status") if summary.is_file() else None
    if status == "completed":
        raise ConfigError(f"resume={str(run_dir)!r}: that run is already completed (summary.json)")
    cfg = OmegaConf.load(config)
    cfg.resume = str(run_dir)
    return cfg  # type: ignore[return-value]


def load_newest_checkpoint(cfg: DictConfig, run_dir: Path, env: VecEnv) -> BaseAlgorithm:
    """Load the newest checkpoint of ``run_dir`` that loads, onto ``env``; log the ones skipped."""
    for steps, path in find_checkpoints(run_dir / "checkpoints"):
        try:
            model = safe_load(cfg, path, env)
        except Exception as exc:  # noqa: BLE001 - any unreadable checkpoint is skipped for an older one
            log.warning("checkpoint %s does not load (%s: %s); trying the one before", path.name,
                        type(exc).__name__, exc)
            continue
        replay = run_dir / "checkpoints" / f"replay_buffer_{steps}_steps.pkl"
        if replay.is_file() and hasattr(model, "load_replay_buffer"):
            model.load_replay_buffer(replay)
        model.num_timesteps = steps
        model._last_obs = None  # type: ignore[attr-defined]  # the envs are new: learn() resets them
        log.info("resuming from %s", path.name)
        return model
    raise ConfigError(f"resume={str(run_dir)!r}: no checkpoint in {run_dir / 'checkpoints'} loads")


def truncate_metrics(run_dir: Path, timesteps: int) -> None:
    """Drop metric rows recorded after ``timesteps`` (the callbacks then go on from the rows kept)."""
    for name, column in METRICS.items():
        path = run_dir / "metrics" / name
        if not path.is_file() or not path.stat().st_size:
            continue
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            fields = reader.fieldnames or []
            rows = [r for r in reader if r.get(column) not in (None, "") and float(r[column]) <= timesteps]
        tmp = path.with_name(f".{name}.tmp")
        with tmp.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        tmp.replace(path)


def previous_summary(run_dir: Path) -> dict[str, Any]:
    """The run's ``summary.json`` (empty if it has none), less the error that stopped it."""
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text()) if path.is_file() else {}
    summary.pop("error", None)
    return summary
