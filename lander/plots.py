"""The learning-curve plot of one run."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def plot_learning_curve(run_dir: Path, title: str, threshold: float | None = None, window: int = 50) -> Path | None:
    """Training episode returns (raw and smoothed) and evaluation mean ± standard error vs timesteps.

    :param run_dir: run directory holding ``metrics/train_episodes.csv`` and ``metrics/eval.csv``
    :param title: plot title
    :param threshold: "solved" return, drawn as a dashed line
    :param window: episodes in the moving average of training returns
    :return: the path of ``learning_curve.png``, or None when there is nothing to plot
    """
    train_path, eval_path = run_dir / "metrics" / "train_episodes.csv", run_dir / "metrics" / "eval.csv"
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
        ax.plot(evals["timesteps"], evals["mean"], "o-", color="tab:orange", lw=2, ms=3,
                label=f"evaluation mean ± s.e. ({int(evals['n'].iloc[-1])} episodes)")
        ax.fill_between(evals["timesteps"], evals["mean"] - evals["sem"], evals["mean"] + evals["sem"],
                        color="tab:orange", alpha=0.3)
    if threshold is not None:
        ax.axhline(threshold, color="gray", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("timesteps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = run_dir / "learning_curve.png"
    fig.savefig(out)
    plt.close(fig)
    return out
