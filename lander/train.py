"""``train(cfg, run_dir)``: one training run, from a composed config to a complete run directory.

Read top to bottom: check the config, seed everything, build envs and the model, train with
callbacks that write metrics as they go, then save, evaluate, plot, record a video and summarise.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import set_random_seed

from lander.algos import build_model, effective_gamma
from lander.callbacks import ContinuedCSV
from lander.checkpoints import Checkpointer
from lander.config import ConfigError, check_logger, validate
from lander.envs import action_space_kind, make_train_env, observation_space_kind
from lander.eval_callback import PeriodicEval
from lander.interrupt import deferred, stop_on_signals
from lander.monitoring import check_finite, nonfinite_parameters
from lander.results import record_results
from lander.resume import load_newest_checkpoint, truncate_metrics
from lander.rundir import RunPaths, RunSummary, Status
from lander.snapshot import write_snapshot
from lander.speed import distribution_checks, fast_paths, use_foreach
from lander.stopping import SignalCheck
from lander.tracking import WandbRun, WandbWriter, run_name
from lander.training_callbacks import callbacks_for, user_callbacks

log = logging.getLogger(__name__)


def check_env_kinds(cfg: DictConfig, env: Any) -> None:
    """The env's real action and observation spaces must be the kinds ``lander/conf/env`` declares."""
    for key, kind in (
        ("action_space", action_space_kind(env.action_space)),
        ("observation_space", observation_space_kind(env.observation_space)),
    ):
        if cfg.env[key] != kind:
            env.close()
            raise ConfigError(
                f"env.{key}={cfg.env[key]!r} does not match {cfg.env.id}'s {key.replace('_', ' ')} "
                f"{getattr(env, key)}: set it to {kind!r} in the env's YAML ({cfg.env.name}.yaml)"
            )


def budget(cfg: DictConfig) -> tuple[int, int]:
    """``(total_timesteps, n_envs)``: the top-level values, or the algorithm's tuned ones when null."""
    total = cfg.total_timesteps if cfg.total_timesteps is not None else cfg.algo.total_timesteps
    n_envs = cfg.n_envs if cfg.n_envs is not None else cfg.algo.n_envs
    return int(total), int(n_envs)


def train(cfg: DictConfig, run_dir: Path, group: str | None = None, overrides: list[str] | None = None) -> RunSummary:
    """Train one agent as configured and leave its complete record in ``run_dir``.

    SIGINT and SIGTERM stop the run as :class:`lander.interrupt.Interrupted`, after it has recorded its state.

    :param cfg: the composed config (``lander/conf/config.yaml`` and overrides)
    :param run_dir: the run directory (Hydra's output dir)
    :param group: W&B group (a sweep's id); ``logger.group`` when None
    :param overrides: the command-line overrides, recorded in the summary
    :return: the run summary (also written to ``summary.json``)
    """
    with stop_on_signals(), distribution_checks(not fast_paths(cfg)):
        return _train(cfg, RunPaths(run_dir), group, overrides or [])


def _train(cfg: DictConfig, paths: RunPaths, group: str | None, overrides: list[str]) -> RunSummary:
    validate(cfg)
    check_logger(cfg)
    extra_callbacks = user_callbacks(cfg)
    total_timesteps, n_envs = budget(cfg)
    set_random_seed(cfg.seed)
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    env = make_train_env(cfg.env, n_envs, cfg.seed, cfg.vec_env)
    check_env_kinds(cfg, env)
    summary = start_summary(cfg, paths, n_envs, total_timesteps, overrides)
    wandb_run = start_wandb(cfg, paths, summary, group)
    checkpointer = Checkpointer(
        cfg.checkpoint_freq, paths.checkpoints, cfg.checkpoint_keep, cfg.checkpoint_replay_buffer
    )
    exit_code, start, model = 1, time.perf_counter(), None
    try:
        model = start_model(cfg, paths, env, summary)
        done = int(model.num_timesteps)
        evaluator, stop_reason, seconds, cpu_seconds = learn(
            cfg, model, paths, wandb_run, checkpointer, extra_callbacks
        )
        summary.update(
            **record_results(cfg, model, evaluator, paths, seconds, done),
            stopped_early=stop_reason,  # None, or why training stopped before the budget
            train_cpu_seconds=round(cpu_seconds, 2),  # this process's CPU time in learn, evals included
            status=Status.COMPLETED,
            wall_seconds=round(time.perf_counter() - start, 2),
        )
        summary.save(paths)
        if wandb_run:
            wandb_run.log_files(paths, summary.to_dict(), cfg.logger.log_model)
        exit_code = 0
        return summary
    except BaseException as exc:
        record_stop(exc, model, checkpointer, paths, summary.update(wall_seconds=round(time.perf_counter() - start, 2)))
        raise
    finally:
        env.close()
        if wandb_run:
            wandb_run.finish(exit_code)


def start_wandb(cfg: DictConfig, paths: RunPaths, summary: RunSummary, group: str | None) -> WandbRun | None:
    """The run's W&B run (a resumed run continues its own), or None with ``logger=none``."""
    if cfg.logger.backend != "wandb":
        return None
    wandb_run = WandbRun(cfg, paths.root, summary.run_name, group, run_id=summary.wandb_run_id)
    summary.wandb_run_id = wandb_run.run.id
    return wandb_run


def start_summary(
    cfg: DictConfig, paths: RunPaths, n_envs: int, total_timesteps: int, overrides: list[str]
) -> RunSummary:
    """The run's summary as it starts (a resumed run keeps its record, less the error that stopped it)."""
    paths.metrics.mkdir(parents=True, exist_ok=True)
    resuming = cfg.get("resume") is not None
    summary = (RunSummary.load(paths) if resuming else None) or RunSummary(overrides=overrides)
    gamma = effective_gamma(cfg)
    summary.update(
        status=Status.RUNNING,
        error=None,
        run_name=run_name(cfg, gamma),
        algo=cfg.algo.name,
        env=cfg.env.name,
        env_id=cfg.env.id,
        seed=cfg.seed,
        gamma=gamma,
        n_envs=n_envs,
        total_timesteps=total_timesteps,
    )
    summary.save(paths)
    if not resuming:
        write_snapshot(paths.root)
    return summary


def start_model(cfg: DictConfig, paths: RunPaths, env: Any, summary: RunSummary) -> Any:
    """A new model, or for ``resume=`` the newest checkpoint that loads, with the metrics cut back to it."""
    if cfg.get("resume") is None:
        model = build_model(cfg, env, cfg.seed)
        use_foreach(model, fast_paths(cfg))
        return model
    model = load_newest_checkpoint(cfg, paths, env)
    use_foreach(model, fast_paths(cfg))
    done = int(model.num_timesteps)
    truncate_metrics(paths, done)
    set_random_seed(cfg.seed + done)  # the resumed part is seeded too, from the checkpoint's step
    env.seed(cfg.seed + done)
    summary.resumed_at = [*summary.resumed_at, done]
    return model


def record_stop(
    exc: BaseException, model: Any, checkpointer: Checkpointer, paths: RunPaths, summary: RunSummary
) -> None:
    """Record a failed or interrupted run: ``summary.json``, the log, and a checkpoint if interrupted."""
    status = Status.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else Status.FAILED
    broken = model is not None and bool(nonfinite_parameters(model))
    if broken and not isinstance(exc, FloatingPointError):  # e.g. SB3's ValueError on NaN logits: say what it is
        try:
            check_finite(model, f" ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})")
        except FloatingPointError as nan_error:
            exc = nan_error
    summary.update(
        status=status,
        error=f"{type(exc).__name__}: {exc}",
        timesteps=int(model.num_timesteps) if model is not None else 0,
    )
    if model is not None and status == Status.INTERRUPTED and not broken:
        summary.timesteps, path = checkpointer.save_now(model)
        log.info("checkpoint %s saved; python -m lander.run resume=%s continues the run", path.name, paths.root)
    summary.save(paths)
    log.exception("run %s at %d timesteps: %s", status.value, summary.timesteps, exc)


def learn(
    cfg: DictConfig,
    model: Any,
    paths: RunPaths,
    wandb_run: WandbRun | None,
    checkpointer: Checkpointer,
    extra: list[BaseCallback],
) -> tuple[PeriodicEval, str | None, float, float]:
    """``model.learn`` with lander's callbacks, then ``extra`` (the user's), from ``model.num_timesteps``
    (0, or a resumed run's) to the budget.

    :return: the evaluation callback, why training stopped early (None: it did not), and the wall seconds
        and CPU seconds (this process) ``learn`` took
    """
    total_timesteps, _ = budget(cfg)
    sinks = [wandb_run.log] if wandb_run else []
    writers = [ContinuedCSV(str(paths.sb3_progress)), *([WandbWriter(wandb_run)] if wandb_run else [])]
    model.set_logger(Logger(str(paths.metrics), writers))
    evaluator, rules, callbacks = callbacks_for(cfg, paths, sinks, total_timesteps)
    done = int(model.num_timesteps)
    log.info(
        "training %s from %d to %d timesteps on %d envs (gamma=%g, seed=%d) in %s",
        cfg.algo.name,
        done,
        total_timesteps,
        model.n_envs,
        effective_gamma(cfg),
        cfg.seed,
        paths.root,
    )
    start, cpu_start = time.perf_counter(), time.process_time()
    with deferred():
        model.learn(
            total_timesteps=total_timesteps - done,
            callback=[*callbacks, checkpointer, *extra, SignalCheck()],
            progress_bar=cfg.progress_bar,
            reset_num_timesteps=done == 0,
        )
    stop_reason = next((rule.stop_reason for rule in rules if rule.stop_reason), None)
    if stop_reason:
        log.info("stopped early at %d timesteps: %s", model.num_timesteps, stop_reason)
    return evaluator, stop_reason, time.perf_counter() - start, time.process_time() - cpu_start
