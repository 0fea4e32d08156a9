"""``train(cfg, run_dir)``: one training run, from a composed config to a complete run directory.

Read top to bottom: check the config, seed everything, build envs and the model, train with
callbacks that write metrics as they go, then save, evaluate, plot, record a video and summarise.
"""

from __future__ import annotations

import json
import logging
import time
from functools import partial
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from stable_baselines3.common.callbacks import CheckpointCallback
from stable_baselines3.common.logger import CSVOutputFormat, Logger
from stable_baselines3.common.utils import set_random_seed

from lander.algos import build_model, effective_gamma
from lander.callbacks import EpisodeLogger, PeriodicEval
from lander.config import ConfigError, check_logger, validate
from lander.envs import action_space_kind, make_env, make_train_env
from lander.interrupt import stop_on_signals
from lander.plots import plot_learning_curve
from lander.snapshot import write_snapshot
from lander.tracking import WandbRun, WandbWriter, run_name
from lander.video import write_video

log = logging.getLogger(__name__)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON through a temporary file and a rename, so a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


def budget(cfg: DictConfig) -> tuple[int, int]:
    """``(total_timesteps, n_envs)``: the top-level values, or the algorithm's tuned ones when null."""
    total = cfg.total_timesteps if cfg.total_timesteps is not None else cfg.algo.total_timesteps
    n_envs = cfg.n_envs if cfg.n_envs is not None else cfg.algo.n_envs
    return int(total), int(n_envs)


def final_evaluation(cfg: DictConfig, model: Any, evaluator: PeriodicEval, run_dir: Path) -> dict[str, Any]:
    """Evaluate the final model on ``eval.episodes`` fixed seeds (the curve's last point) and write ``eval.json``."""
    result = evaluator.evaluate_now()
    record = result.to_dict() | {"timesteps": int(model.num_timesteps), "deterministic": cfg.eval.deterministic,
                                 "model": "model.zip", "env_id": cfg.env.id}
    write_json(run_dir / "eval.json", record)
    log.info("final evaluation: mean %.1f +- %.1f (sem), %d episodes, success rate %s",
             record["mean"], record["sem"], record["n"], record["success_rate"])
    return record


def train(cfg: DictConfig, run_dir: Path, group: str | None = None) -> dict[str, Any]:
    """Train one agent as configured and leave its complete record in ``run_dir``.

    SIGINT and SIGTERM stop the run as :class:`Interrupted`, after it has recorded its state.

    :param cfg: the composed config (``conf/config.yaml`` and overrides)
    :param run_dir: the run directory (Hydra's output dir)
    :param group: W&B group (a sweep's id); ``logger.group`` when None
    :return: the run summary (also written to ``summary.json``)
    """
    with stop_on_signals():
        return _train(cfg, run_dir, group)


def _train(cfg: DictConfig, run_dir: Path, group: str | None) -> dict[str, Any]:
    validate(cfg)
    check_logger(cfg)
    total_timesteps, n_envs = budget(cfg)
    gamma = effective_gamma(cfg)
    name = run_name(cfg, gamma)

    set_random_seed(cfg.seed)
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    env = make_train_env(cfg.env, n_envs, cfg.seed, cfg.vec_env)
    if action_space_kind(env.action_space) != cfg.env.action_space:
        env.close()
        raise ConfigError(f"env.action_space={cfg.env.action_space!r} does not match {cfg.env.id}'s action space "
                          f"{env.action_space}: set it to {action_space_kind(env.action_space)!r} in conf/env")

    (run_dir / "metrics").mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"status": "running", "run_name": name, "algo": cfg.algo.name, "env": cfg.env.name,
                               "env_id": cfg.env.id, "seed": cfg.seed, "gamma": gamma, "n_envs": n_envs,
                               "total_timesteps": total_timesteps}
    write_json(run_dir / "summary.json", summary)
    write_snapshot(run_dir)

    wandb_run = WandbRun(cfg, run_dir, name, group) if cfg.logger.backend == "wandb" else None
    exit_code, start, model = 1, time.perf_counter(), None
    try:
        model = build_model(cfg, env, cfg.seed)
        evaluator, learn_seconds = learn(cfg, model, run_dir, wandb_run, total_timesteps, n_envs)
        summary |= record_results(cfg, model, evaluator, run_dir, learn_seconds)
        summary |= {"status": "completed", "wall_seconds": round(time.perf_counter() - start, 2)}
        write_json(run_dir / "summary.json", summary)
        if wandb_run:
            wandb_run.log_files(run_dir, summary, cfg.logger.log_model)
        exit_code = 0
        return summary
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        summary |= {"status": status, "error": f"{type(exc).__name__}: {exc}",
                    "timesteps": int(model.num_timesteps) if model is not None else 0,
                    "wall_seconds": round(time.perf_counter() - start, 2)}
        if model is not None and status == "interrupted":
            model.save(run_dir / "checkpoints" / f"model_{model.num_timesteps}_steps.zip")
        write_json(run_dir / "summary.json", summary)
        log.exception("run %s at %d timesteps: %s", status, summary["timesteps"], exc)
        raise
    finally:
        env.close()
        if wandb_run:
            wandb_run.finish(exit_code)


def learn(cfg: DictConfig, model: Any, run_dir: Path, wandb_run: WandbRun | None, total_timesteps: int,
          n_envs: int) -> tuple[PeriodicEval, float]:
    """``model.learn`` with lander's callbacks; returns the evaluation callback and the seconds ``learn`` took."""
    sinks = [wandb_run.log] if wandb_run else []
    writers = [CSVOutputFormat(str(run_dir / "metrics" / "sb3_progress.csv"))]
    model.set_logger(Logger(str(run_dir / "metrics"), [*writers, *([WandbWriter(wandb_run)] if wandb_run else [])]))
    evaluator = PeriodicEval(cfg.eval.freq or total_timesteps + 1, partial(make_env, cfg.env), cfg.eval.episodes,
                             cfg.eval.seed, cfg.eval.n_envs, run_dir, cfg.env.reward_threshold,
                             cfg.eval.deterministic, sinks, final_at=total_timesteps if cfg.final_eval else None)
    callbacks = [EpisodeLogger(run_dir / "metrics" / "train_episodes.csv", sinks), evaluator]
    if cfg.checkpoint_freq > 0:
        callbacks.append(CheckpointCallback(max(cfg.checkpoint_freq // n_envs, 1), str(run_dir / "checkpoints"),
                                            name_prefix="model"))
    log.info("training %s for %d timesteps on %d envs (gamma=%g, seed=%d) in %s",
             cfg.algo.name, total_timesteps, n_envs, effective_gamma(cfg), cfg.seed, run_dir)
    start = time.perf_counter()
    model.learn(total_timesteps=total_timesteps, callback=callbacks, progress_bar=cfg.progress_bar)
    return evaluator, time.perf_counter() - start


def record_results(cfg: DictConfig, model: Any, evaluator: PeriodicEval, run_dir: Path,
                   train_seconds: float) -> dict[str, Any]:
    """Save the model, evaluate it, plot the learning curve, record the video; return summary fields."""
    model.save(run_dir / "model.zip")
    steps = int(model.num_timesteps)
    out: dict[str, Any] = {
        "timesteps": steps, "train_seconds": round(train_seconds, 2), "eval_seconds": round(evaluator.eval_seconds, 2),
        "steps_per_second": round(steps / train_seconds, 1),
        "train_steps_per_second": round(steps / (train_seconds - evaluator.eval_seconds), 1)}
    if cfg.final_eval:
        record = final_evaluation(cfg, model, evaluator, run_dir)
        out |= {"final_eval_mean": record["mean"], "final_eval_sem": record["sem"], "final_eval_std": record["std"],
                "final_eval_success_rate": record["success_rate"]}
    evaluator.close()
    out |= {"best_eval_mean": evaluator.best_mean if evaluator.best_mean > float("-inf") else None,
            "first_timestep_reaching_threshold": evaluator.first_solved}
    plot_learning_curve(run_dir, f"{run_name(cfg, effective_gamma(cfg))} ({cfg.env.id})", cfg.env.reward_threshold)
    if cfg.video.enabled:
        out["video"] = write_video(model, cfg.env, cfg.video, run_dir / "video.mp4")
    return out
