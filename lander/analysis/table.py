"""The comparison table: one row per configuration of an env, every statistic over runs (seeds).

Columns (``docs/sweeps-and-statistics.md``, "Reading a comparison"): ``seeds`` distinct seeds; ``timesteps`` the
evaluation compared;
``final_mean`` mean over seeds of each seed's evaluation mean, ``sem`` its standard error over seeds,
``ci95_low/high`` rliable's percentile bootstrap interval over seeds, ``iqm`` with ``iqm_ci95_low/high``;
against the baseline ``diff``, ``cohens_d``, ``test`` (paired t when both ran the same seeds, else Welch t),
``p_value``, ``p_holm`` (Holm-adjusted over the configurations tested against the baseline),
``prob_improvement`` with ``prob_improvement_ci95_low/high`` and ``seeds_needed`` (for 80% power at the
observed effect). ``episode_count`` counts evaluation episodes; nothing else is per episode.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from lander.analysis import statistics as st
from lander.analysis.runset import Run
from lander.numbers import significant

NAN = float("nan")


def scores(runs: list[Run]) -> np.ndarray:
    """The runs' final scores as rliable's ``runs x envs`` array (one env)."""
    return np.array([[r.final_mean] for r in runs], dtype=float)


def summary_row(label: str, runs: list[Run]) -> dict[str, Any]:
    """The configuration's own statistics over its runs (no baseline)."""
    values = scores(runs)
    many = len(runs) > 1
    mean, low, high = st.interval(values, st.aggregate_mean) if many else (values.mean(), NAN, NAN)
    iqm, iqm_low, iqm_high = st.interval(values, st.aggregate_iqm) if many else (values.mean(), NAN, NAN)
    reached = [r.summary.get("first_timestep_reaching_threshold") for r in runs]
    solved = [float(s) for s in reached if s is not None]
    return {
        "config": label,
        "env": runs[0].env,
        "seeds": len(runs),
        "timesteps": max(r.timesteps for r in runs),
        "final_mean": float(mean),
        "sem": float(values.std(ddof=1) / np.sqrt(len(values))) if many else NAN,
        "ci95_low": float(low),
        "ci95_high": float(high),
        "iqm": float(iqm),
        "iqm_ci95_low": float(iqm_low),
        "iqm_ci95_high": float(iqm_high),
        "success_rate": float(np.mean([r.final_success for r in runs])),
        "steps_to_threshold": float(np.mean(solved)) if solved else NAN,
        "reached_threshold": f"{len(solved)}/{len(runs)}",
    }


def versus_row(runs: list[Run], base: list[Run]) -> dict[str, Any]:
    """The comparison of a configuration's runs with the baseline's (NaN where either has one seed)."""
    out = st.versus_baseline({r.seed: r.final_mean for r in runs}, {r.seed: r.final_mean for r in base})
    out |= {"prob_improvement": NAN, "prob_improvement_ci95_low": NAN, "prob_improvement_ci95_high": NAN}
    if len(runs) > 1 and len(base) > 1:
        point, low, high = st.interval_of_improvement(scores(runs), scores(base))
        out |= {"prob_improvement": point, "prob_improvement_ci95_low": low, "prob_improvement_ci95_high": high}
    return out


def env_table(groups: dict[str, list[Run]], baseline: str) -> pd.DataFrame:
    """One row per configuration of one env, tested against ``baseline`` (Holm over the configurations)."""
    rows = []
    for label, runs in groups.items():
        row = summary_row(label, runs)
        blank = {"test": "", "p_value": NAN, "diff": NAN, "cohens_d": NAN, "seeds_needed": NAN}
        row |= blank | {"prob_improvement": NAN} if label == baseline else versus_row(runs, groups[baseline])
        row["episode_count"] = sum(len(r.final_returns) for r in runs)
        rows.append(row)
    table = pd.DataFrame(rows)
    table["p_holm"] = st.holm(table["p_value"].tolist())
    table["baseline"] = baseline
    order = [
        "config",
        "env",
        "seeds",
        "timesteps",
        "final_mean",
        "sem",
        "ci95_low",
        "ci95_high",
        "iqm",
        "iqm_ci95_low",
        "iqm_ci95_high",
        "success_rate",
        "steps_to_threshold",
        "reached_threshold",
        "diff",
        "cohens_d",
        "test",
        "p_value",
        "p_holm",
        "prob_improvement",
        "prob_improvement_ci95_low",
        "prob_improvement_ci95_high",
        "seeds_needed",
        "episode_count",
        "baseline",
    ]
    return table.reindex(columns=order)


def across_envs(groups_by_env: dict[str, dict[str, list[Run]]], baseline: str) -> pd.DataFrame:
    """P(improvement) over the baseline averaged over envs, its interval from rliable's stratified bootstrap.

    Only for configurations that ran in every env with the same seeds as in the others (a ``runs x envs``
    array); scores of different envs are never pooled, so no normalisation is needed.
    """
    envs = list(groups_by_env)
    rows = []
    for label in groups_by_env[envs[0]]:
        per_env = [groups_by_env[env].get(label) or [] for env in envs]
        base = [groups_by_env[env].get(baseline) or [] for env in envs]
        if label == baseline or any(not runs for runs in per_env + base):
            continue
        if len({tuple(r.seed for r in runs) for runs in per_env}) > 1 or len({len(runs) for runs in base}) > 1:
            continue
        x = np.hstack([scores(runs) for runs in per_env])
        y = np.hstack([scores(runs) for runs in base])
        if len(x) < 2 or len(y) < 2:
            continue
        point, low, high = st.interval_of_improvement(x, y)
        rows.append(
            {
                "config": label,
                "envs": len(envs),
                "seeds": len(x),
                "prob_improvement": point,
                "prob_improvement_ci95_low": low,
                "prob_improvement_ci95_high": high,
            }
        )
    return pd.DataFrame(rows)


def seed_notes(table: pd.DataFrame) -> list[str]:
    """What the rows' numbers of seeds allow: nothing across seeds for n=1, wide intervals for 2-4 seeds (a point
    where they scored alike)."""
    notes = []
    for _, row in table.iterrows():
        n = int(row["seeds"])
        if n == 1:
            notes.append(f"`{row['config']}`: n=1 seed, so no interval, test or P(improvement) across seeds.")
        elif n < 5 and row["ci95_low"] == row["ci95_high"]:  # every seed scored the same: no spread to widen it
            notes.append(
                f"`{row['config']}`: only {n} seeds, each scoring {significant(row['final_mean'])}: the interval over "
                f"seeds is that point, which more seeds may widen.{needed_note(row)}"
            )
        elif n < 5:
            notes.append(
                f"`{row['config']}`: only {n} seeds: the interval over seeds is wide (with 3 seeds it is "
                f"close to their range).{needed_note(row)}"
            )
    return notes


def needed_note(row: pd.Series) -> str:
    """How many seeds the observed difference from the baseline would need for 80% power ('' for the baseline)."""
    needed = row["seeds_needed"]
    if np.isnan(needed):
        return ""
    if row["diff"] == 0:
        return " It scored the same as the baseline."
    if np.isinf(needed):
        return (
            f" The observed difference ({significant(row['diff'], plus=True)}) is too small to detect with "
            f"{st.MAX_SEEDS} seeds."
        )
    return (
        f" The observed difference from the baseline ({significant(row['diff'], plus=True)}) would need about "
        f"{int(needed)} seeds per configuration for 80% power ({row['test']} test, alpha 0.05)."
    )
