"""What a finished training leaves: the saved model, the final evaluation (``eval.json``), the learning-curve
plot and the video, and the summary fields that describe them."""

from __future__ import annotations

import logging
import resource
from typing import Any

from omegaconf import DictConfig

from lander.algos import effective_gamma
from lander.eval_callback import PeriodicEval
from lander.faults import fault
from lander.rundir import RunPaths, atomic_write, write_json
from lander.tracking import run_name

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
        "final evaluation: mean %.4g +- %.2g (sem), %d episodes, success rate %s",
        record["mean"],
        record["sem"],
        record["n"],
        record["success_rate"],
    )
    return record


def record_results(
    cfg: DictConfig, model: Any, evaluator: PeriodicEval, paths: RunPaths, train_seconds: float, first_step: int = 0
) -> dict[str, Any]:
    """Save the model, evaluate it, plot the learning curve, record the video; return summary fields."""
    atomic_write(paths.model, model.save)
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
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }  # Linux: KiB
    # matplotlib, pandas and imageio are imported only now, after training, so they do not weigh on it
    from lander.plots import plot_learning_curve
    from lander.video import write_video

    fault("finish:plot")
    plot_learning_curve(paths.root, f"{run_name(cfg, effective_gamma(cfg))} ({cfg.env.id})", cfg.env.reward_threshold)
    if cfg.video.enabled:
        fault("finish:video")
        out["video"] = write_video(model, cfg.env, cfg.video, paths.video)
    return out
