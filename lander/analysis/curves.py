"""Learning curves of a configuration across its runs: the mean over seeds with a bootstrap band over seeds, or
(named so) the mean and standard error over all evaluation episodes of all seeds."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from lander.analysis.runset import Run, with_episodes
from lander.analysis.statistics import bootstrap_band

X_LABELS = {"timesteps": "timesteps", "episodes": "training episodes"}  # what curves are drawn against (``x_axis``)


def mean_curve(runs: list[Run], x: str = "timesteps") -> pd.DataFrame:
    """Eval mean across seeds, with the 95% percentile bootstrap interval over seeds where 2 or more have a value.

    Each run's curve is interpolated onto the union of the runs' eval points on ``x``, within that run's own range;
    a run stopped early by its stop rule stands at its last evaluation past it (as the comparison's table counts it,
    :mod:`lander.analysis.runset`).

    :param x: ``"timesteps"``, or ``"episodes"`` (the training episodes each run had ended by each evaluation)
    :return: columns ``x`` (the grid, named by it), ``mean``, ``low``, ``high`` (NaN where fewer than 2 seeds) and
        ``n_seeds``; one row a grid point
    """
    curves = [(r.eval, r.stopped_early) for r in runs if r.eval is not None and len(r.eval)]
    grid = np.unique(np.concatenate([c[x].to_numpy() for c, _ in curves]))
    values = np.full((len(curves), len(grid)), np.nan)  # shape (n_runs, n_points)
    for i, (c, stopped_early) in enumerate(curves):
        inside = (grid >= c[x].min()) & (grid <= c[x].max())
        values[i, inside] = np.interp(grid[inside], c[x], c["mean"])
        if stopped_early:
            values[i, grid > c[x].max()] = c["mean"].iloc[-1]
    low, high = bootstrap_band(values)
    return pd.DataFrame(
        {
            x: grid,
            "mean": np.nanmean(values, axis=0),
            "low": low,
            "high": high,
            "n_seeds": np.sum(~np.isnan(values), axis=0),
        }
    )


def pooled_curve(runs: list[Run], x: str = "timesteps") -> pd.DataFrame:
    """Eval mean and standard error over all evaluation episodes of all seeds (``metrics/eval_episodes.csv``).

    Episodes of one run are not independent of each other, so this band is narrower than the spread over seeds;
    course assignment 004 asks for it. The k-th evaluations of the runs are pooled (plotted at their mean
    timestep, or number of training episodes with ``x="episodes"``), so runs evaluated at slightly different steps
    line up; a run stopped early by its stop rule adds its last evaluation's episodes to the later ones.

    :return: columns ``x`` (named by it), ``mean``, ``low``/``high`` (mean -/+ one episode s.e.), ``n_seeds``,
        ``n_episodes``
    """
    per_run: list[tuple[Run, list[tuple[int, np.ndarray]]]] = []  # each run's evaluations: (x, returns)
    for run in runs:
        episodes = pd.read_csv(run.paths.eval_episodes)
        at = dict(zip(run.eval["timesteps"], run.eval[x], strict=True)) if run.eval is not None else {}
        grouped = episodes[episodes["timesteps"].isin(at)].groupby("timesteps")
        per_run.append((run, [(int(at[steps]), group["return"].to_numpy(dtype=float)) for steps, group in grouped]))
    evaluations: dict[int, list[tuple[int | None, np.ndarray]]] = {}  # the k-th ones; x None: a stopped run's last
    for _, found in per_run:
        for k, point in enumerate(found):
            evaluations.setdefault(k, []).append(point)
    for run, found in per_run:
        for k in range(len(found), len(evaluations) if run.stopped_early and found else 0):
            evaluations[k].append((None, found[-1][1]))
    rows = []
    for k in sorted(evaluations):
        returns = np.concatenate([r for _, r in evaluations[k]])
        sem = float(returns.std(ddof=1) / np.sqrt(len(returns))) if len(returns) > 1 else 0.0
        rows.append(
            {
                x: float(np.mean([t for t, _ in evaluations[k] if t is not None])),
                "mean": float(returns.mean()),
                "low": float(returns.mean()) - sem,
                "high": float(returns.mean()) + sem,
                "n_seeds": len(evaluations[k]),
                "n_episodes": len(returns),
            }
        )
    return pd.DataFrame(rows)


ONE_EVALUATION = "one evaluation per run: lower eval.freq to see a curve"


def config_curves(
    groups: dict[str, list[Run]], band: str = "seeds", x: str = "timesteps"
) -> dict[str, tuple[list[Run], pd.DataFrame]]:
    """Per configuration: its runs that have evaluations, and their curve (:func:`mean_curve`, or with
    ``band="episodes"`` :func:`pooled_curve` where every run has ``eval_episodes.csv``) against ``x``.

    :return: ``{label: (runs, curve)}``; ``curve`` has columns ``x``, mean, low, high (one row a point); against
        episodes, each run's ``eval`` has an ``episodes`` column
    """
    found = {}
    for label, runs in groups.items():
        with_curves = [r for r in runs if r.eval is not None and len(r.eval)]
        if x == "episodes":  # read only for curves against episodes: each run's training episodes at its evaluations
            with_curves = [replace(r, eval=with_episodes(pd.DataFrame(), r.eval, r.paths)[1]) for r in with_curves]
        if with_curves:
            pooled = band == "episodes" and all(r.paths.eval_episodes.is_file() for r in with_curves)
            found[label] = (with_curves, pooled_curve(with_curves, x) if pooled else mean_curve(with_curves, x))
    return found


def single_evaluations(curves: dict[str, tuple[list[Run], pd.DataFrame]]) -> bool:
    """True where no configuration has a curve of more than one point (a budget below ``eval.freq``): the plots
    then draw points with their intervals, on an axis from 0, and say why (:data:`ONE_EVALUATION`)."""
    return bool(curves) and all(len(curve) <= 1 for _, curve in curves.values())
