"""Statistics over runs: rliable's interval estimates, tests between configurations, power and Holm's correction.

The unit is the run (one seed's final score), never the evaluation episode. Scores are arrays of
``runs x envs``; the bootstrap resamples runs within each env (rliable's stratified bootstrap, Agarwal et al.
2021) and takes percentile intervals. The resampling indices come from ``np.random.RandomState(seed)`` in
the order rliable 1.2.0 draws them from NumPy's global generator, so with the same seed the intervals equal
rliable's exactly (``tests/unit/test_statistics.py`` checks this against committed reference values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

REPS = 50_000  # bootstrap resamples of an interval (rliable's default)
CURVE_REPS = 2_000  # of each point of a curve or a performance profile (rliable's profile default)
SEED = 0  # resampling seed: the same runs always give the same report
ALPHA = 0.05
POWER = 0.8
MAX_SEEDS = 1000  # seeds_needed above this is reported as more than it

Metric = Callable[[np.ndarray], np.ndarray]


def aggregate_mean(scores: np.ndarray) -> np.ndarray:
    """Mean over runs of each env, then over envs (rliable's ``aggregate_mean``); leading axes are kept."""
    return cast(np.ndarray, scores.mean(axis=-2).mean(axis=-1))


def aggregate_iqm(scores: np.ndarray) -> np.ndarray:
    """Interquartile mean of all runs of all envs: the mean of the middle 50% (rliable's ``aggregate_iqm``)."""
    from scipy import stats  # on use: SciPy takes 0.5 s to import, a run's plot none of it

    return cast(np.ndarray, stats.trim_mean(scores.reshape(*scores.shape[:-2], -1), 0.25, axis=-1))


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 over all pairs of runs, per env, averaged over envs (the Mann-Whitney U / nm)."""
    greater = (x[..., :, None, :] > y[..., None, :, :]).mean(axis=(-3, -2))
    ties = (x[..., :, None, :] == y[..., None, :, :]).mean(axis=(-3, -2))
    return cast(np.ndarray, (greater + 0.5 * ties).mean(axis=-1))


def performance_profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Fraction of runs (of all envs) whose score exceeds each ``tau`` (rliable's score distribution: ``> tau``)."""
    flat = scores.reshape(*scores.shape[:-2], -1)
    return cast(np.ndarray, (flat[..., :, None] > np.asarray(taus)).mean(axis=-2))


def resample(scores: np.ndarray, reps: int, seed: int = SEED) -> np.ndarray:
    """``reps`` bootstrap copies of ``runs x envs`` scores, runs drawn with replacement within each env."""
    runs, envs = scores.shape
    index = np.random.RandomState(seed).randint(0, runs, size=(reps, runs, envs))
    return scores[index, np.arange(envs)]


def interval(
    scores: np.ndarray, metric: Metric, reps: int = REPS, seed: int = SEED, size: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and percentile bootstrap interval of ``metric`` over runs (stratified per env).

    :param scores: ``runs x envs`` final scores
    :param metric: maps ``(..., runs, envs)`` to ``(...)`` or ``(..., k)``
    :return: ``(point, low, high)``
    """
    tail = 100 * (1 - size) / 2
    low, high = np.percentile(metric(resample(scores, reps, seed)), [tail, 100 - tail], axis=0)
    return np.asarray(metric(scores)), low, high


def interval_of_improvement(
    x: np.ndarray, y: np.ndarray, reps: int = REPS, seed: int = SEED, size: float = 0.95
) -> tuple[float, float, float]:
    """P(X > Y) and its percentile interval, the runs of X and of Y resampled independently within each env."""
    rng = np.random.RandomState(seed)
    (nx, envs), ny = x.shape, y.shape[0]
    if nx == ny:  # one draw, in rliable's order: per resample, X's indices then Y's
        index_x, index_y = np.moveaxis(rng.randint(0, nx, size=(reps, 2, nx, envs)), 1, 0)
    else:
        index_x = np.empty((reps, nx, envs), dtype=np.int64)
        index_y = np.empty((reps, ny, envs), dtype=np.int64)
        for r in range(reps):
            index_x[r] = rng.randint(0, nx, size=(nx, envs))
            index_y[r] = rng.randint(0, ny, size=(ny, envs))
    columns = np.arange(envs)
    boot = np.concatenate(
        [
            probability_of_improvement(x[index_x[s], columns], y[index_y[s], columns])
            for s in np.array_split(np.arange(reps), max(1, reps * nx * ny * envs // 5_000_000))
        ]
    )
    tail = 100 * (1 - size) / 2
    low, high = np.percentile(boot, [tail, 100 - tail])
    return float(probability_of_improvement(x, y)), float(low), float(high)


def cohens_d(x: np.ndarray, y: np.ndarray) -> float:
    """(mean X - mean Y) over the pooled standard deviation of the runs (ddof 1); NaN if it is 0 or undefined."""
    nx, ny = len(x), len(y)
    if nx + ny < 3:
        return float("nan")
    pooled = np.sqrt(
        ((nx - 1) * np.var(x, ddof=1 if nx > 1 else 0) + (ny - 1) * np.var(y, ddof=1 if ny > 1 else 0)) / (nx + ny - 2)
    )
    return float((x.mean() - y.mean()) / pooled) if pooled > 0 else float("nan")


def power(effect: float, n: float, paired: bool, alpha: float = ALPHA) -> float:
    """Power of a two-sided t test at ``alpha``: paired on ``n`` pairs, or two samples of ``n`` runs each."""
    from scipy import stats  # on use: SciPy takes 0.5 s to import, a run's plot none of it

    df, nc = (n - 1, effect * np.sqrt(n)) if paired else (2 * n - 2, effect * np.sqrt(n / 2))
    crit = stats.t.isf(alpha / 2, df)
    value = stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc)
    return 1.0 if np.isnan(value) else float(value)  # NaN only far out in the tail, where power is 1


def required_n(effect: float, paired: bool, alpha: float = ALPHA, target: float = POWER) -> float:
    """Runs per configuration (pairs, if ``paired``) for ``target`` power at the given standardised effect;
    inf when more than :data:`MAX_SEEDS` would be needed (as statsmodels' ``solve_power``, not rounded up)."""
    from scipy import optimize  # on use: SciPy takes 0.5 s to import, a run's plot none of it

    effect = abs(effect)
    if np.isnan(effect) or effect == 0:
        return float("inf")
    if np.isinf(effect):  # a difference without spread: the least runs a test takes show it
        return 2.0
    low, high = 2.0, 4.0
    if power(effect, low, paired, alpha) >= target:
        return low
    while power(effect, high, paired, alpha) < target:
        if high >= MAX_SEEDS:
            return float("inf")
        low, high = high, min(2 * high, MAX_SEEDS)
    return float(optimize.brentq(lambda n: power(effect, n, paired, alpha) - target, low, high, xtol=1e-10))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of p-values tested together (NaNs stay NaN and are not counted)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p[i]))
        adjusted[i] = running
    return cast(list[float], adjusted.tolist())


def versus_baseline(scores: dict[int, float], baseline: dict[int, float]) -> dict[str, float | str]:
    """Compare one configuration's per-seed scores with the baseline's.

    Paired t test on per-seed differences when both ran the same seeds (2 or more), Welch's t test otherwise;
    with fewer than 2 seeds on either side there is no test.

    :param scores: final score by seed
    :param baseline: the baseline's final score by seed
    :return: ``test``, ``p_value``, ``diff`` (mean difference), ``cohens_d`` and ``seeds_needed`` (runs per
        configuration for 80% power at the observed effect; inf when it would take more than 1000)
    """
    from scipy import stats  # on use: SciPy takes 0.5 s to import, a run's plot none of it

    x, y = np.array(list(scores.values())), np.array(list(baseline.values()))
    out: dict[str, float | str] = {"test": "", "p_value": float("nan"), "diff": float(x.mean() - y.mean())}
    out["cohens_d"] = d = cohens_d(x, y)
    out["seeds_needed"] = float("nan")
    if len(x) < 2 or len(y) < 2:
        return out
    paired = sorted(scores) == sorted(baseline)
    rounding = 1e-12 * max(np.abs(x).max(), np.abs(y).max())  # what float subtraction leaves of equal differences
    if paired:  # the test is on each seed's difference; without spread in them it is certain, or there is none
        diffs = np.array([scores[s] - baseline[s] for s in sorted(scores)])
        flat = np.ptp(diffs) <= rounding
    else:
        diffs = np.array([out["diff"]])
        flat = np.ptp(x) <= rounding and np.ptp(y) <= rounding
    if flat:  # SciPy's t is d/0 (p 0) or 0/0 (nan), with a warning of moments of equal values: said here instead
        p_value, effect = (0.0, float("inf")) if np.abs(diffs).max() > rounding else (1.0, float("nan"))
    elif paired:
        p_value = float(
            stats.ttest_rel([scores[s] for s in sorted(scores)], [baseline[s] for s in sorted(scores)]).pvalue
        )
        effect = diffs.mean() / diffs.std(ddof=1)
    else:
        p_value, effect = float(stats.ttest_ind(x, y, equal_var=False).pvalue), d
    out |= {"test": "paired t" if paired else "Welch t", "p_value": p_value}
    out["seeds_needed"] = float(np.ceil(required_n(effect, paired)))
    return out


def bootstrap_band(values: np.ndarray, reps: int = CURVE_REPS, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile bootstrap interval of the mean over runs at each column of ``runs x points``.

    NaN marks a run without a value at that point; columns with fewer than 2 values get NaN (no band).
    """
    low = np.full(values.shape[1], np.nan)
    high = np.full(values.shape[1], np.nan)
    for j in range(values.shape[1]):
        column = values[~np.isnan(values[:, j]), j]
        if len(column) > 1:
            _, low[j], high[j] = interval(column[:, None], aggregate_mean, reps, seed)
    return low, high
