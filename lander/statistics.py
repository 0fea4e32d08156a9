"""Statistics of a comparison: curves across seeds, interval estimates and tests between configurations.

Everything here is a function of plain numbers and :class:`lander.compare.Run` records, so it is tested in-process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

if TYPE_CHECKING:
    from lander.compare import Run


def mean_curve(runs: list[Run]) -> pd.DataFrame:
    """Eval mean across seeds (interpolated onto the union of eval timesteps, within each run's range).

    The band is the standard error across seeds; with one seed, that run's standard error over episodes.
    """
    curves = [r.evals for r in runs if r.evals is not None and len(r.evals)]
    grid = np.unique(np.concatenate([c["timesteps"].to_numpy() for c in curves]))
    values = np.full((len(curves), len(grid)), np.nan)
    for i, c in enumerate(curves):
        inside = (grid >= c["timesteps"].min()) & (grid <= c["timesteps"].max())
        values[i, inside] = np.interp(grid[inside], c["timesteps"], c["mean"])
    n = np.sum(~np.isnan(values), axis=0)
    mean = np.nanmean(values, axis=0)
    if len(curves) == 1:
        sem = np.interp(grid, curves[0]["timesteps"], curves[0]["sem"])
    else:
        sem = np.where(n > 1, np.nanstd(values, axis=0, ddof=min(1, len(curves) - 1)) / np.sqrt(np.maximum(n, 1)), 0)
    return pd.DataFrame({"timesteps": grid, "mean": mean, "sem": sem, "n_seeds": n})


def pooled_curve(runs: list[Run]) -> pd.DataFrame:
    """Eval mean and standard error over all evaluation episodes of all seeds (``metrics/eval_episodes.csv``).

    The k-th evaluations of the runs are pooled (plotted at their mean timestep), so a configuration
    evaluated at 80-step rollout boundaries in every seed lines up even where the exact steps differ.
    """
    evaluations: dict[int, list[tuple[int, np.ndarray]]] = {}
    for run in runs:
        episodes = pd.read_csv(run.paths.eval_episodes)
        kept = set(run.evals["timesteps"]) if run.evals is not None else set()
        for k, (steps, group) in enumerate(episodes[episodes["timesteps"].isin(kept)].groupby("timesteps")):
            evaluations.setdefault(k, []).append((int(steps), group["return"].to_numpy(dtype=float)))
    rows = []
    for k in sorted(evaluations):
        returns = np.concatenate([r for _, r in evaluations[k]])
        rows.append(
            {
                "timesteps": float(np.mean([t for t, _ in evaluations[k]])),
                "mean": float(returns.mean()),
                "sem": float(returns.std(ddof=1) / np.sqrt(len(returns))) if len(returns) > 1 else 0.0,
                "n_seeds": len(evaluations[k]),
                "n_episodes": len(returns),
            }
        )
    return pd.DataFrame(rows)


def iqm(values: np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% of the values."""
    return float(stats.trim_mean(values, 0.25))


def bootstrap_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean (fixed resampling seed, so reports are reproducible)."""
    if len(values) < 2:
        return float("nan"), float("nan")
    res = stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=2000,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def prob_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) + P(X = Y) / 2 over all pairs of seeds (as in rliable)."""
    greater = (x[:, None] > y[None, :]).mean()
    equal = (x[:, None] == y[None, :]).mean()
    return float(greater + 0.5 * equal)


def table(groups: dict[str, list[Run]], baseline: str) -> pd.DataFrame:
    """One row per configuration: final evaluation statistics and the comparison with ``baseline``."""
    base_means = np.array([r.final_mean for r in groups[baseline]])
    rows = []
    for label, runs in groups.items():
        means = np.array([r.final_mean for r in runs])
        with_episodes = all(r.final_returns for r in runs)
        episodes = np.concatenate([r.final_returns for r in runs]) if with_episodes else np.array([])
        reached = [r.summary.get("first_timestep_reaching_threshold") for r in runs]
        solved = [float(s) for s in reached if s is not None]
        low, high = bootstrap_ci(episodes)
        welch = stats.ttest_ind(means, base_means, equal_var=False) if len(means) > 1 and len(base_means) > 1 else None
        rows.append(
            {
                "config": label,
                "env": runs[0].env,
                "seeds": len(runs),
                "episodes": len(episodes),
                "final_mean": float(means.mean()),
                "sem": float(means.std(ddof=1) / np.sqrt(len(means)))
                if len(means) > 1
                else float(episodes.std(ddof=1) / np.sqrt(len(episodes)))
                if len(episodes) > 1
                else float("nan"),
                "ci95_low": low,
                "ci95_high": high,
                "iqm": iqm(episodes) if len(episodes) else float("nan"),
                "success_rate": float(np.mean([r.final_success for r in runs])),
                "steps_to_threshold": float(np.mean(solved)) if solved else float("nan"),
                "reached_threshold": f"{len(solved)}/{len(runs)}",
                "p_welch_vs_baseline": float(welch.pvalue) if welch is not None and label != baseline else float("nan"),
                "prob_improvement": prob_improvement(means, base_means) if label != baseline else float("nan"),
            }
        )
    return pd.DataFrame(rows)
