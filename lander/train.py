"""``train(cfg, run_dir)``: one training run, from a composed config to a complete run directory.

Read top to bottom: check the config, seed everything, build envs and the model, train with
callbacks that write metrics as they go, then save, evaluate, plot, record a video and summarise.
"""

from __future__ import annotations

import json
import logging
import resource
import time
from functools import partial
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import set_random_seed

from lander.algos import build_model, effective_gamma
from lander.callbacks import ContinuedCSV, EpisodeLogger, PeriodicEval
from lander.checkpoints import Checkpointer
from lander.config import ConfigError, check_logger, validate
from lander.envs import action_space_kind, make_env, make_train_env, observation_space_kind
from lander.interrupt import deferred, stop_on_signals
from lander.monitoring import NonFiniteGuard, ResourceMonitor, check_finite, nonfinite_parameters
from lander.resume import load_newest_checkpoint, previous_summary, truncate_metrics
from lander.snapshot import write_snapshot
from lander.speed import distribution_checks, fast_paths, use_foreach
from lander.tracking import WandbRun, WandbWriter, run_name

log = logging.getLogger(__name__)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON through a temporary file and a rename, so a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


def check_env_kinds(cfg: DictConfig, env: Any) -> None:
    """The env's real action and observation spaces must be the kinds ``conf/env`` declares (checked against algo)."""
    for key, kind in (("action_space", action_space_kind(env.action_space)),
                      ("observation_space", observation_space_kind(env.observation_space))):
        if cfg.env[key] != kind:
            env.close()
            raise ConfigError(f"env.{key}={cfg.env[key]!r} does not match {cfg.env.id}'s {key.replace('_', ' ')} "
                              f"{getattr(env, key)}: set it to {kind!r} in conf/env/{cfg.env.name}.yaml")


def budget(cfg: DictConfig) -> tuple[int, int]:
    """``(total_timesteps, n_envs)``: the top-level values, or the algorithm's tuned ones when null."""
    total = cfg.total_timesteps if cfg.total_timesteps is not None else cfg.algo.total_timesteps
    n_envs = cfg.n_envs if cfg.n_envs is not None else cfg.algo.n_envs
    return int(total), int(n_envs)


def final_evaluation(cfg: DictConfig, model: Any, evaluator: PeriodicEval, run_dir: Path) -> dict[str, Any]:
    """Evaluate the final model on ``eval.episodes`` fixed seeds (the curve's last point) and write ``eval.json``."""
    reuse = evaluator.last is not None and evaluator.last[0] == model.num_timesteps  # stopped early right after one
    result = evaluator.last[1] if reuse else evaluator.evaluate_now()  # type: ignore[index]
    record = result.to_dict() | {"timesteps": int(model.num_timesteps), "deterministic": cfg.eval.deterministic,
                                 "model": "model.zip", "env_id": cfg.env.id}
    write_json(run_dir / "eval.json", record)
    log.info("final evaluation: mean %.4g +- %.2g (sem), %d episodes, success rate %s",
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
    with stop_on_signals(), distribution_checks(not fast_paths(cfg)):
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
    check_env_kinds(cfg, env)

    (run_dir / "metrics").mkdir(parents=True, exist_ok=True)
    resuming = cfg.get("resume") is not None
    summary: dict[str, Any] = {"status": "running", "run_name": name, "algo": cfg.algo.name, "env": cfg.env.name,
                               "env_id": cfg.env.id, "seed": cfg.seed, "gamma": gamma, "n_envs": n_envs,
                               "total_timesteps": total_timesteps}
    summary = previous_summary(run_dir) | summary if resuming else summary
    write_json(run_dir / "summary.json", summary)
    if not resuming:
        write_snapshot(run_dir)

    wandb_run = None
    if cfg.logger.backend == "wandb":
        wandb_run = WandbRun(cfg, run_dir, name, group, run_id=summary.get("wandb_run_id"))
        summary["wandb_run_id"] = wandb_run.run.id
    checkpointer = Checkpointer(cfg.checkpoint_freq, run_dir / "checkpoints", cfg.checkpoint_keep,
                                cfg.checkpoint_replay_buffer)
    exit_code, start, model = 1, time.perf_counter(), None
    try:
        model = start_model(cfg, run_dir, env, summary)
        done = int(model.num_timesteps)
        evaluator, learn_seconds, learn_cpu_seconds = learn(cfg, model, run_dir, wandb_run, total_timesteps,
                                                            checkpointer)
        summary |= record_results(cfg, model, evaluator, run_dir, learn_seconds, done)
        summary["train_cpu_seconds"] = round(learn_cpu_seconds, 2)  # this process's CPU time in learn, evals included
        summary |= {"status": "completed", "wall_seconds": round(time.perf_counter() - start, 2)}
        write_json(run_dir / "summary.json", summary)
        if wandb_run:
            wandb_run.log_files(run_dir, summary, cfg.logger.log_model)
        exit_code = 0
        return summary
    except BaseException as exc:
        record_stop(exc, model, checkpointer, run_dir, summary | {"wall_seconds": round(time.perf_counter() - start, 2)})
        raise
    finally:
        env.close()
        if wandb_run:
            wandb_run.finish(exit_code)


def start_model(cfg: DictConfig, run_dir: Path, env: Any, summary: dict[str, Any]) -> Any:
    """A new model, or for ``resume=`` the newest checkpoint that loads, with the metrics cut back to it."""
    if cfg.get("resume") is None:
        model = build_model(cfg, env, cfg.seed)
        use_foreach(model, fast_paths(cfg))
        return model
    model = load_newest_checkpoint(cfg, run_dir, env)
    use_foreach(model, fast_paths(cfg))
    done = int(model.num_timesteps)
    truncate_metrics(run_dir, done)
    set_random_seed(cfg.seed + done)  # the resumed part is seeded too, from the checkpoint's step
    env.seed(cfg.seed + done)
    summary["resumed_at"] = [*summary.get("resumed_at", []), done]
    return model


def record_stop(exc: BaseException, model: Any, checkpointer: Checkpointer, run_dir: Path,
                summary: dict[str, Any]) -> None:
    """Record a failed or interrupted run: ``summary.json``, the log, and a checkpoint if interrupted."""
    status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
    broken = model is not None and bool(nonfinite_parameters(model))
    if broken and not isinstance(exc, FloatingPointError):  # e.g. SB3's ValueError on NaN logits: say what it is
        try:
            check_finite(model, f" ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})")
        except FloatingPointError as nan_error:
            exc = nan_error
    summary |= {"status": status, "error": f"{type(exc).__name__}: {exc}",
                "timesteps": int(model.num_timesteps) if model is not None else 0}
    if model is not None and status == "interrupted" and not broken:
        summary["timesteps"], path = checkpointer.save_now(model)
        log.info("checkpoint %s saved; python -m lander.run resume=%s continues the run", path.name, run_dir)
    write_json(run_dir / "summary.json", summary)
    log.exception("run %s at %d timesteps: %s", status, summary["timesteps"], exc)


def learn(cfg: DictConfig, model: Any, run_dir: Path, wandb_run: WandbRun | None, total_timesteps: int,
          checkpointer: Checkpointer) -> tuple[PeriodicEval, float, float]:
    """``model.learn`` with lander's callbacks, from ``model.num_timesteps`` (0, or a resumed run's) to the budget.

    :return: the evaluation callback, the wall seconds and the CPU seconds (this process) ``learn`` took
    """
    sinks = [wandb_run.log] if wandb_run else []
    writers = [ContinuedCSV(str(run_dir / "metrics" / "sb3_progress.csv"))]
    model.set_logger(Logger(str(run_dir / "metrics"), [*writers, *([WandbWriter(wandb_run)] if wandb_run else [])]))
    evaluator = PeriodicEval(cfg.eval.freq or total_timesteps + 1, partial(make_env, cfg.env), cfg.eval.episodes,
                             cfg.eval.seed, cfg.eval.n_envs, run_dir, cfg.env.reward_threshold,
                             cfg.eval.deterministic, sinks, final_at=total_timesteps if cfg.final_eval else None,
                             stop_at=cfg.early_stop.reward_threshold, patience=cfg.early_stop.patience)
    episodes = EpisodeLogger(run_dir / "metrics" / "train_episodes.csv", sinks, cfg.max_episodes)
    done = int(model.num_timesteps)
    log.info("training %s from %d to %d timesteps on %d envs (gamma=%g, seed=%d) in %s",
             cfg.algo.name, done, total_timesteps, model.n_envs, effective_gamma(cfg), cfg.seed, run_dir)
    callbacks: list[BaseCallback] = [NonFiniteGuard(), episodes, evaluator, checkpointer]  # guard first: no NaN saved
    if cfg.monitor_freq > 0:
        callbacks.append(ResourceMonitor(cfg.monitor_freq, run_dir / "metrics" / "resources.csv",
                                         lambda: episodes.episodes, sinks))
    start, cpu_start = time.perf_counter(), time.process_time()
    with deferred():
        model.learn(total_timesteps=total_timesteps - done, callback=callbacks, progress_bar=cfg.progress_bar,
                    reset_num_timesteps=done == 0)
    evaluator.stop_reason = evaluator.stop_reason or episodes.stop_reason
    if evaluator.stop_reason:
        log.info("stopped early at %d timesteps: %s", model.num_timesteps, evaluator.stop_reason)
    return evaluator, time.perf_counter() - start, time.process_time() - cpu_start


def record_results(cfg: DictConfig, model: Any, evaluator: PeriodicEval, run_dir: Path,
                   train_seconds: float, first_step: int = 0) -> dict[str, Any]:
    """Save the model, evaluate it, plot the learning curve, record the video; return summary fields."""
    model.save(run_dir / "model.zip")
    steps = int(model.num_timesteps)
    out: dict[str, Any] = {
        "timesteps": steps, "train_seconds": round(train_seconds, 2), "eval_seconds": round(evaluator.eval_seconds, 2),
        "steps_per_second": round((steps - first_step) / train_seconds, 1),
        "train_steps_per_second": round((steps - first_step) / (train_seconds - evaluator.eval_seconds), 1)}
    if cfg.final_eval:
        record = final_evaluation(cfg, model, evaluator, run_dir)
        out |= {"final_eval_mean": record["mean"], "final_eval_sem": record["sem"], "final_eval_std": record["std"],
                "final_eval_success_rate": record["success_rate"]}
    evaluator.close()
    out |= {"best_eval_mean": evaluator.best_mean if evaluator.best_mean > float("-inf") else None,
            "first_timestep_reaching_threshold": evaluator.first_solved}
    out |= {"stopped_early": evaluator.stop_reason,  # None, or why training stopped before the budget
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}  # Linux: KiB
    # matplotlib, pandas and imageio are imported only now, after training, so they do not weigh on it
    from lander.plots import plot_learning_curve
    from lander.video import write_video

    plot_learning_curve(run_dir, f"{run_name(cfg, effective_gamma(cfg))} ({cfg.env.id})", cfg.env.reward_threshold)
    if cfg.video.enabled:
        out["video"] = write_video(model, cfg.env, cfg.video, run_dir / "video.mp4")
    return out
