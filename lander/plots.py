"""Plots: the learning curve of one run, and the comparison's curves of several configurations."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from lander.rundir import RunPaths, atomic_write
from lander.statistics import mean_curve, pooled_curve

if TYPE_CHECKING:
    from lander.compare import Run


def plot_learning_curve(run_dir: Path, title: str, threshold: float | None = None, window: int = 50) -> Path | None:
    """Training episode returns (raw and smoothed) and evaluation mean ± standard error vs timesteps.

    :param run_dir: run directory holding ``metrics/train_episodes.csv`` and ``metrics/eval.csv``
    :param title: plot title
    :param threshold: "solved" return, drawn as a dashed line
    :param window: episodes in the moving average of training returns
    :return: the path of ``learning_curve.png``, or None when there is nothing to plot
    """
    paths = RunPaths(run_dir)
    train_path, eval_path = paths.train_episodes, paths.eval_csv
    train = pd.read_csv(train_path) if train_path.is_file() else pd.DataFrame()
    evals = pd.read_csv(eval_path) if eval_path.is_file() else pd.DataFrame()
    if train.empty and evals.empty:
        return None
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    if not train.empty:
        ax.plot(train["timesteps"], train["return"], color="tab:blue", alpha=0.15, lw=0.6, label="training episode")
        smooth = train["return"].rolling(window, min_periods=1).mean()
        ax.plot(train["timesteps"], smooth, color="tab:blue", lw=1.8, label=f"training, {window}-episode mean")
    if not evals.empty:
        ax.plot(
            evals["timesteps"],
            evals["mean"],
            "o-",
            color="tab:orange",
            lw=2,
            ms=3,
            label=f"evaluation mean ± s.e. ({int(evals['n'].iloc[-1])} episodes)",
        )
        ax.fill_between(
            evals["timesteps"],
            evals["mean"] - evals["sem"],
            evals["mean"] + evals["sem"],
            color="tab:orange",
            alpha=0.3,
        )
    if threshold is not None:
        ax.axhline(threshold, color="gray", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("timesteps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = paths.learning_curve
    atomic_write(out, fig.savefig)
    plt.close(fig)
    return out


def plot_curves(groups: dict[str, list[Run]], env: str, path: Path, band: str = "seeds") -> None:
    """Eval return vs timesteps, one line per configuration with a standard-error band.

    :param band: ``"seeds"`` (standard error of the seeds' means) or ``"episodes"`` (over all evaluation
        episodes of all seeds, as course assignment 004 asks; runs without ``eval_episodes.csv`` fall back to seeds)
    """
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    for label, runs in groups.items():
        with_curves = [r for r in runs if r.evals is not None and len(r.evals)]
        if not with_curves:
            continue
        pooled = band == "episodes" and all(r.paths.eval_episodes.is_file() for r in with_curves)
        curve = pooled_curve(with_curves) if pooled else mean_curve(with_curves)
        (line,) = ax.plot(curve["timesteps"], curve["mean"], lw=2, label=f"{label} (n={len(with_curves)})")
        ax.fill_between(
            curve["timesteps"],
            curve["mean"] - curve["sem"],
            curve["mean"] + curve["sem"],
            color=line.get_color(),
            alpha=0.2,
        )
    threshold = next(iter(groups.values()))[0].threshold
    if threshold is not None:
        ax.axhline(threshold, color="gray", ls="--", lw=1, label=f"threshold {threshold:g}")
    spread = "all eval episodes of all seeds" if band == "episodes" else "across seeds"
    ax.set(xlabel="timesteps", ylabel=f"evaluation return (mean ± s.e., {spread})", title=f"{env}: evaluation return")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    atomic_write(path, fig.savefig)
    plt.close(fig)
