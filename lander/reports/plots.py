"""Plots: the learning curve of one run; the comparison's learning curves, final scores and performance profiles."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lander.analysis import statistics as st
from lander.analysis.curves import ONE_EVALUATION, X_LABELS, config_curves, single_evaluations
from lander.analysis.runset import Run, label_lines, short_labels, with_episodes
from lander.storage.rundir import RunPaths, atomic_write


def plot_learning_curve(
    run_dir: Path, title: str, threshold: float | None = None, window: int = 50, x: str = "timesteps"
) -> Path | None:
    """Training episode returns (raw and smoothed) and evaluation mean ± standard error vs timesteps or episodes.

    :param run_dir: run directory holding ``metrics/train_episodes.csv`` and ``metrics/eval.csv``
    :param title: plot title
    :param threshold: "solved" return, drawn as a dashed line
    :param window: episodes in the moving average of training returns
    :param x: ``"timesteps"`` or ``"episodes"`` (training episodes ended; an evaluation at those ended by then)
    :return: the path of ``learning_curve.png``, or None when there is nothing to plot
    """
    paths = RunPaths(run_dir)
    train = pd.read_csv(paths.train_episodes) if paths.train_episodes.is_file() else pd.DataFrame()
    evals = pd.read_csv(paths.eval_csv) if paths.eval_csv.is_file() else pd.DataFrame()
    if x == "episodes":
        train, evals = with_episodes(train, evals, paths)
    if train.empty and evals.empty:
        return None
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    if not train.empty:
        ax.plot(train[x], train["return"], color="tab:blue", alpha=0.15, lw=0.6, label="training episode")
        smooth = train["return"].rolling(window, min_periods=1).mean()
        ax.plot(train[x], smooth, color="tab:blue", lw=1.8, label=f"training, {window}-episode mean")
    if not evals.empty:
        ax.plot(
            evals[x],
            evals["mean"],
            "o-",
            color="tab:orange",
            lw=2,
            ms=3,
            label=f"evaluation mean ± s.e. ({int(evals['n'].iloc[-1])} episodes)",
        )
        ax.fill_between(
            evals[x],
            evals["mean"] - evals["sem"],
            evals["mean"] + evals["sem"],
            color="tab:orange",
            alpha=0.3,
        )
    if threshold is not None:
        ax.axhline(threshold, color="gray", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.set_xlabel(X_LABELS[x])
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = paths.learning_curve
    atomic_write(out, fig.savefig)
    plt.close(fig)
    return out


def plot_curves(
    groups: dict[str, list[Run]],
    env: str,
    path: Path,
    band: str = "seeds",
    budgets: Sequence[int] = (),
    x: str = "timesteps",
) -> None:
    """Eval return vs timesteps (or training episodes): per configuration the mean over seeds and a band, and the
    compared budget.

    :param band: ``"seeds"`` (95% bootstrap interval of the mean over seeds; none where only one seed has a
        value) or ``"episodes"`` (mean ± s.e. over all evaluation episodes of all seeds, as course assignment
        004 asks; runs without ``eval_episodes.csv`` fall back to seeds)
    :param budgets: the timesteps the comparison is made at (one, or one a budget where the configurations differ
        in it), each drawn as a dotted line (none against episodes, where they have no one place)
    :param x: ``"timesteps"`` or ``"episodes"`` (training episodes each run had ended by each evaluation)
    """
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    curves = config_curves(groups, band, x)
    single = single_evaluations(curves)
    budgets = budgets if x == "timesteps" else ()
    for label, (runs, curve) in curves.items():
        at, mean = curve[x], curve["mean"]
        (line,) = ax.plot(at, mean, lw=2, marker="o" if single else None, label=f"{label} (n={len(runs)})")
        if single:  # one point: its interval as an error bar (a band of one point is not drawn)
            ax.errorbar(at, mean, yerr=[mean - curve["low"], curve["high"] - mean], color=line.get_color(), capsize=4)
        else:
            ax.fill_between(at, curve["low"], curve["high"], color=line.get_color(), alpha=0.2)
    draw_threshold(ax, groups)
    for budget in budgets:
        ax.axvline(budget, color="black", ls=":", lw=1, label=f"compared at {budget:,}")
    if single:
        last = max([*budgets, *(int(c[x].max()) for _, c in curves.values())])
        ax.set_xlim(0, last * 1.1)
        ax.text(0.5, 0.04, ONE_EVALUATION, transform=ax.transAxes, ha="center", color="dimgray")
    spread = "± s.e. over all eval episodes of all seeds" if band == "episodes" else "and 95% bootstrap CI over seeds"
    ax.set(xlabel=X_LABELS[x], ylabel=f"evaluation return (mean {spread})", title=f"{env}: evaluation return")
    finish(fig, ax, path)


def plot_final_scores(groups: dict[str, list[Run]], env: str, path: Path) -> None:
    """Each configuration's compared score: every seed as a dot, the mean and its 95% bootstrap CI over seeds.

    Configurations stand side by side, their labels one ``key=value`` a line; where that would be wider than
    :data:`MAX_WIDTH` (an Optuna search's twenty trials, each three keys of long numbers), they are rows instead,
    one label a line beside its row."""
    ticks = [tick_label(label, len(runs)) for label, runs in groups.items()]
    longest = max(len(line) for tick in ticks for line in tick.splitlines())
    width = max(1.6, 0.075 * longest) * len(groups) + 2  # a digit is about 0.07 inch at 8 points
    rows, size = width > MAX_WIDTH, (max(5.0, width), 5.0)
    if rows:
        shown = zip(short_labels(list(groups)), groups.values(), strict=True)
        ticks = [f"{label} (n={len(runs)})" for label, runs in shown]
        longest = max(len(tick) for tick in ticks)
        size = (min(6 + 0.065 * longest, MAX_WIDTH), max(4.0, 0.32 * len(groups) + 1.5))
    fig, ax = plt.subplots(figsize=size, dpi=110)
    for i, runs in enumerate(groups.values()):
        values = np.array([r.final_mean for r in runs])
        jitter = np.linspace(-0.1, 0.1, len(values)) if len(values) > 1 else np.zeros(1)
        at, mean, low, high = i + 0.2, values[0], values[0], values[0]
        if len(values) > 1:
            mean, low, high = st.interval(values[:, None], st.aggregate_mean)
        bar, caps = [[mean - low], [high - mean]], 5 if len(values) > 1 else 0  # one seed: its mean, no interval
        if rows:
            ax.scatter(values, i - 0.1 + jitter, s=22, alpha=0.7, zorder=3)
            ax.errorbar(mean, at, xerr=bar, fmt="D", color="black", capsize=caps, ms=5)
        else:
            ax.scatter(i - 0.1 + jitter, values, s=22, alpha=0.7, zorder=3)
            ax.errorbar(at, mean, yerr=bar, fmt="D", color="black", capsize=caps, ms=5)
    draw_threshold(ax, groups, vertical=rows)
    what, title = "evaluation mean return per seed", f"{env}: final scores (mean, 95% bootstrap CI)"
    if rows:
        ax.set_yticks(range(len(groups)), ticks, fontsize=7)
        ax.set_ylim(len(groups) - 0.4, -0.6)  # the first configuration on top
        ax.set(xlabel=what, title=title)
    else:
        ax.set_xticks(range(len(groups)), ticks, fontsize=8)
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set(ylabel=what, title=title)
    finish(fig, ax, path)


LEGEND_INSIDE = (8, 40)  # a legend of at most this many entries, each at most this many characters, in the plot
MAX_WIDTH = 16.0  # inches: final scores wider than this side by side are drawn as rows


def tick_label(label: str, n: int) -> str:
    """A configuration's label under its scores: one ``key=value`` a line (an Optuna trial's is three keys of
    twenty-digit values, which overlapped their neighbours'), then its number of seeds."""
    return "\n".join([*label_lines(label), f"(n={n})"])


def plot_profile(groups: dict[str, list[Run]], env: str, path: Path) -> None:
    """Performance profile: the fraction of runs whose score exceeds tau, over tau, with a bootstrap band."""
    every = np.array([r.final_mean for runs in groups.values() for r in runs])
    spread = max(every.max() - every.min(), 1.0)
    taus = np.linspace(every.min() - 0.05 * spread, every.max() + 0.05 * spread, 101)
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for label, runs in groups.items():
        values = np.array([[r.final_mean] for r in runs])
        point, low, high = st.interval(values, lambda s: st.performance_profile(s, taus), st.CURVE_REPS)
        (line,) = ax.step(taus, point, where="post", lw=2, label=f"{label} (n={len(runs)})")
        if len(runs) > 1:
            ax.fill_between(taus, low, high, step="post", color=line.get_color(), alpha=0.15)
    ax.set(
        xlabel="score tau (evaluation mean return)",
        ylabel="fraction of runs with score > tau",
        title=f"{env}: performance profile (95% bootstrap band over runs)",
        ylim=(-0.02, 1.02),
    )
    finish(fig, ax, path)


def draw_threshold(ax: Axes, groups: dict[str, list[Run]], vertical: bool = False) -> None:
    """The env's "solved" return as a dashed line (across the plot, or up it where returns run along x), if it has
    one."""
    threshold = next(iter(groups.values()))[0].threshold
    if threshold is not None:
        line = ax.axvline if vertical else ax.axhline
        line(threshold, color="gray", ls="--", lw=1, label=f"threshold {threshold:g}")


def finish(fig: Figure, ax: Axes, path: Path) -> None:
    """Grid, legend, layout; write ``path`` atomically and free the figure."""
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if handles and (len(labels) > LEGEND_INSIDE[0] or max(map(len, labels)) > LEGEND_INSIDE[1]):
        # many or long entries (an Optuna search's trials) under the plot, one a line: inside, they covered it;
        # each wrapped at spaces to the figure's width (a 7-point character is about 0.06 inch wide)
        width, height = fig.get_size_inches()
        wrapped = ["\n".join(textwrap.wrap(label, int(width / 0.06) - 8)) or label for label in short_labels(labels)]
        fig.set_size_inches(width, height + 0.16 * sum(w.count("\n") + 1 for w in wrapped) + 0.3)
        ax.legend(handles, wrapped, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    elif handles:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    atomic_write(path, fig.savefig)
    plt.close(fig)
