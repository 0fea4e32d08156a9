"""What a training leaves: when it finishes, the saved model, the final evaluation (``eval.json``), the
learning-curve plot and the video, and the summary fields that describe them; when it stops (a signal, an
error), its summary, a checkpoint if it was interrupted, and the learning curve of what it recorded."""

from __future__ import annotations

import logging
import resource
import shlex
import time
from typing import Any

from omegaconf import DictConfig

from lander.algorithms.build import effective_gamma
from lander.evaluation.video import write_video
from lander.faults import fault
from lander.numbers import significant
from lander.reports.plots import plot_learning_curve
from lander.reports.run_report import try_run_report
from lander.storage.normalization import transform
from lander.storage.rundir import RunPaths, RunSummary, Status, write_json
from lander.tracking.base import run_name
from lander.training.callbacks import (
    Checkpointer,
    GpuProbe,
    PeriodicEval,
    check_finite,
    nonfinite_parameters,
    save_checkpoint,
    save_model,
)

log = logging.getLogger(__name__)


def final_evaluation(cfg: DictConfig, model: Any, evaluator: PeriodicEval, paths: RunPaths) -> dict[str, Any]:
    """Evaluate the final model on ``eval.episodes`` fixed seeds (the curve's last point) and write ``eval.json``."""
    reuse = evaluator.last is not None and evaluator.last[0] == model.num_timesteps  # stopped early right after one
    result = evaluator.last[1] if reuse else evaluator.evaluate_now()  # type: ignore[index]
    record = result.to_dict() | {
        "timesteps": int(model.num_timesteps),
        "deterministic": cfg.eval.deterministic,
        "model": paths.model.name,
        "env_id": cfg.env.id,
    }
    write_json(paths.eval_json, record)
    log.info(
        "final evaluation: mean %s +- %s (sem), %d episodes, success rate %s",
        significant(record["mean"]),
        significant(record["sem"], 2),
        record["n"],
        shown_rate(record["success_rate"]),
    )
    return record


def shown_rate(rate: float | None) -> str:
    """A success rate as the console says it: two decimals (it printed 0.3333333333333333), or that there is none."""
    return "none (the env has no reward_threshold)" if rate is None else f"{rate:.2f}"


def record_results(
    cfg: DictConfig, model: Any, evaluator: PeriodicEval, paths: RunPaths, train_seconds: float, first_step: int = 0
) -> dict[str, Any]:
    """Save the model (and, with ``checkpoint_replay_buffer``, a last checkpoint with its replay buffer), evaluate
    it, plot the learning curve, record the video; return summary fields."""
    save_model(model, paths.model)
    if cfg.checkpoint_replay_buffer and cfg.checkpoint_freq > 0 and getattr(model, "replay_buffer", None) is not None:
        # a run trained further resumes from it with its transitions: from model.zip alone, with an empty buffer
        save_checkpoint(model, paths.checkpoints, cfg.checkpoint_keep, replay_buffer=True)
    steps = int(model.num_timesteps)
    out: dict[str, Any] = {
        "timesteps": steps,
        "train_seconds": round(train_seconds, 2),
        "eval_seconds": round(evaluator.eval_seconds, 2),
        "steps_per_second": round((steps - first_step) / train_seconds, 1),
        "train_steps_per_second": round((steps - first_step) / (train_seconds - evaluator.eval_seconds), 1),
    }
    if cfg.final_eval:
        record = final_evaluation(cfg, model, evaluator, paths)
        out |= {
            "final_eval_mean": record["mean"],
            "final_eval_sem": record["sem"],
            "final_eval_std": record["std"],
            "final_eval_success_rate": record["success_rate"],
        }
    evaluator.close()
    out |= {
        "best_eval_mean": evaluator.best_mean if evaluator.best_mean > float("-inf") else None,
        "first_timestep_reaching_threshold": evaluator.first_solved,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),  # Linux: KiB
        **gpu_record(model),
    }
    # matplotlib, pandas and imageio are imported only now, after training, so they do not weigh on it

    fault("finish:plot")
    title = f"{run_name(cfg, effective_gamma(cfg))} ({cfg.env.id})"
    plot_learning_curve(paths.root, title, cfg.env.reward_threshold, x=cfg.get("x_axis", "timesteps"))
    if cfg.video.enabled:
        fault("finish:video")
        started = time.perf_counter()
        normalizer = transform(model.get_vec_normalize_env())
        out["video"] = write_video(model, cfg.env, cfg.video, paths.video, cfg.progress_bar, normalizer)
        log.info(
            "video.mp4: %d frames, return %s, %.0f s",
            out["video"]["frames"],
            significant(out["video"]["return"]),
            time.perf_counter() - started,
        )
    return out


def gpu_record(model: Any) -> dict[str, Any]:
    """``summary.json``'s GPU fields: the CUDA device's name and the most torch allocated on it (none on the CPU)."""
    if model.device.type != "cuda":
        return {}
    probe = GpuProbe(model.device, utilisation=False)
    return {"gpu": probe.name, "gpu_peak_memory_mb": probe.sample()["gpu_peak_memory_mb"]}


def record_stop(
    cfg: DictConfig, exc: BaseException, model: Any, checkpointer: Checkpointer, paths: RunPaths, summary: RunSummary
) -> None:
    """Record a failed or interrupted run: ``summary.json``, a checkpoint if interrupted, the learning curve of
    what it recorded, and one block on the console (a traceback only for a failure)."""
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
        timesteps=int(model.num_timesteps) if model is not None else summary.timesteps,
    )
    saved = []
    if model is not None and status == Status.INTERRUPTED and not broken:
        summary.timesteps, path = checkpointer.save_now(model)
        saved.append(f"checkpoints/{path.name}")
    summary.save(paths)
    saved += ["summary.json", "metrics/"] + (["learning_curve.png"] if plot_recorded(cfg, paths) else [])
    saved += ["report.html"] if write_report(cfg, paths) else []
    if status == Status.FAILED:
        log.exception("run failed at %d timesteps: %s", summary.timesteps, exc)
        return
    exc.report = (  # type: ignore[attr-defined]  # lander.run prints it last, after W&B's lines
        f"interrupted by {exc} at {summary.timesteps} timesteps.\n  saved in {paths.root}: {', '.join(saved)}\n"
        f"  continue: python -m lander.run {shlex.quote(f'resume={paths.root}')}"  # its newest checkpoint, or step 0
    )


def plot_recorded(cfg: DictConfig, paths: RunPaths) -> bool:
    """The learning curve of a stopped run, from what it recorded; False if there was nothing (or it failed)."""

    try:
        title = f"{run_name(cfg, effective_gamma(cfg))} ({cfg.env.id}), stopped"
        x = cfg.get("x_axis", "timesteps")
        return plot_learning_curve(paths.root, title, cfg.env.reward_threshold, x=x) is not None
    except Exception as exc:  # a stopping run must still exit cleanly; the plot is a convenience
        log.warning("no learning curve for the stopped run: %s", exc)
        return False


def write_report(cfg: DictConfig, paths: RunPaths, full_disk_fails: bool = False) -> bool:
    """``report.html`` (unless ``report=false``), from what the run recorded; False if none was written.

    :param full_disk_fails: a full disk (``ENOSPC``, ``EDQUOT``) raises its ``OSError``: a completed run whose
        record could not be written is not completed. Any other failure is logged (the report is a convenience).
    """
    if not cfg.get("report", True):
        return False
    return try_run_report(paths.root, full_disk_fails) is not None


def run_closing(summary: RunSummary, paths: RunPaths) -> str:
    """What a finished run printed last (after W&B's own lines): its result and where its files are."""
    lines = [
        f"done: {summary.algo} on {summary.env_id}, seed {summary.seed}: {summary.timesteps:,} steps "
        f"in {summary.wall_seconds or 0:.0f} s"
        + (f" (stopped early: {summary.stopped_early})" if summary.stopped_early else "")
    ]
    if summary.final_eval_mean is not None:
        lines.append(
            f"  final evaluation: {significant(summary.final_eval_mean)} +- "
            f"{significant(summary.final_eval_sem or 0, 2)} (s.e.)"
            f", success rate {shown_rate(summary.final_eval_success_rate)}"
        )
    files = [p.name for p in (paths.model, paths.eval_json, paths.learning_curve, paths.video) if p.is_file()]
    lines += [f"  run directory: {paths.root}", f"  files: {', '.join(files)}, metrics/"]
    if paths.report.is_file():
        lines.append(f"  report: {paths.report}")
    if any((paths.root / "wandb").glob("offline-run-*")):  # the artifact's files are recorded relative to the run
        lines.append(f"  W&B upload: cd {shlex.quote(str(paths.root))} && wandb sync wandb/offline-run-*")
    if paths.tensorboard.is_dir():  # logger=tensorboard or wandb_tensorboard
        lines.append(f"  TensorBoard: tensorboard --logdir {shlex.quote(str(paths.tensorboard))}")
    return "\n".join(lines)
