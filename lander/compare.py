"""Comparison of runs: configurations grouped across seeds, learning curves, a table and statistics.

``python -m lander.compare <sweep dir or run dirs...> [--baseline LABEL] [--out DIR] [--at-timesteps N]``
writes the same report a sweep writes at its end: ``comparison/learning_curves_<env>.png``, ``table.csv``,
``table.md`` and ``report.md`` (which also lists the runs that failed or have not finished). With
``--at-timesteps N`` every run that got at least N steps far is compared as it stood at its last evaluation
at or before N (finished or not): an equal budget for runs of different lengths or a sweep still running.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats

log = logging.getLogger(__name__)
# Overrides that do not change what is trained (or name the whole sweep), left out of a configuration's label
IGNORED_OVERRIDES = ("seed", "hydra", "logger", "progress_bar", "video.", "checkpoint_freq", "baseline",
                     "experiment", "hparams_search", "comparison_band", "checkpoint_keep", "monitor_freq",
                     "torch_fast_paths")


@dataclass
class Run:
    """One run directory as the comparison sees it."""

    path: Path
    overrides: list[str]
    seed: int
    env: str
    status: str
    summary: dict = field(default_factory=dict)
    evals: pd.DataFrame | None = None
    final_returns: list[float] = field(default_factory=list)
    threshold: float | None = None
    final_mean: float = float("nan")
    final_success: float = float("nan")

    @property
    def key(self) -> tuple[str, ...]:
        """The configuration: every override except the seed and those that do not change training."""
        return tuple(sorted(o for o in self.overrides if not o.lstrip("+~").startswith(IGNORED_OVERRIDES)))


def load_run(path: Path) -> Run:
    """Read a run directory (``.hydra/``, ``summary.json``, ``metrics/eval.csv``, ``eval.json``)."""
    cfg = yaml.safe_load((path / ".hydra" / "config.yaml").read_text())
    overrides = yaml.safe_load((path / ".hydra" / "overrides.yaml").read_text()) or []
    summary = json.loads((path / "summary.json").read_text()) if (path / "summary.json").is_file() else {}
    status = summary.get("status", "failed before training")
    evals_path, eval_json = path / "metrics" / "eval.csv", path / "eval.json"
    evals = pd.read_csv(evals_path) if evals_path.is_file() and evals_path.stat().st_size else None
    final = json.loads(eval_json.read_text()) if eval_json.is_file() else {"episodes": []}
    return Run(path=path, overrides=[str(o) for o in overrides], seed=int(cfg["seed"]), env=cfg["env"]["name"],
               status=status, summary=summary, evals=evals, final_returns=[e["return"] for e in final["episodes"]],
               threshold=cfg["env"].get("reward_threshold"), final_mean=final.get("mean", float("nan")),
               final_success=final.get("success_rate") if final.get("success_rate") is not None else float("nan"))


def at_budget(run: Run, timesteps: int) -> Run | None:
    """The run as it stood at its last evaluation at or before ``timesteps``; None if it stopped short of that.

    Per-episode returns come from ``metrics/eval_episodes.csv`` (runs older than that file have none, so the
    statistics that need episodes come out as NaN).
    """
    if run.evals is None or not len(run.evals) or run.evals["timesteps"].max() < timesteps:
        return None
    evals = run.evals[run.evals["timesteps"] <= timesteps].drop_duplicates("timesteps", keep="last")
    if not len(evals):
        return None
    last = evals.iloc[-1]
    episodes_csv = run.path / "metrics" / "eval_episodes.csv"
    returns: list[float] = []
    if episodes_csv.is_file():
        episodes = pd.read_csv(episodes_csv)
        returns = episodes.loc[episodes["timesteps"] == last["timesteps"], "return"].tolist()[-int(last["n"]):]
    reached = evals.loc[evals["mean"] >= run.threshold, "timesteps"] if run.threshold is not None else []
    summary = {"first_timestep_reaching_threshold": int(reached.iloc[0]) if len(reached) else None}
    return replace(run, status="completed", evals=evals, final_returns=returns, summary=summary,
                   final_mean=float(last["mean"]), final_success=float(last["success_rate"]))


def find_runs(paths: list[Path]) -> list[Run]:
    """Every run directory at or below ``paths`` (a sweep directory, run directories, or a mix)."""
    found: dict[Path, Run] = {}
    for root in paths:
        for config in sorted(root.glob("**/.hydra/config.yaml"), key=_natural):
            run_dir = config.parent.parent
            if run_dir not in found and "comparison" not in run_dir.parts:
                found[run_dir] = load_run(run_dir)
    return list(found.values())


def _natural(path: Path) -> list:
    """Sort key that puts job 2 before job 10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in path.parts]


def labels(keys: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Name each configuration by the overrides in which it differs from the others."""
    common = set.intersection(*(set(k) for k in keys)) if len(keys) > 1 else set()
    return {k: " ".join(o for o in k if o not in common) or " ".join(k) or "default" for k in keys}


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
        episodes = pd.read_csv(run.path / "metrics" / "eval_episodes.csv")
        kept = set(run.evals["timesteps"]) if run.evals is not None else set()
        for k, (steps, group) in enumerate(episodes[episodes["timesteps"].isin(kept)].groupby("timesteps")):
            evaluations.setdefault(k, []).append((int(steps), group["return"].to_numpy(dtype=float)))
    rows = []
    for k in sorted(evaluations):
        returns = np.concatenate([r for _, r in evaluations[k]])
        rows.append({"timesteps": float(np.mean([t for t, _ in evaluations[k]])), "mean": float(returns.mean()),
                     "sem": float(returns.std(ddof=1) / np.sqrt(len(returns))) if len(returns) > 1 else 0.0,
                     "n_seeds": len(evaluations[k]), "n_episodes": len(returns)})
    return pd.DataFrame(rows)


def iqm(values: np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% of the values."""
    return float(stats.trim_mean(values, 0.25))


def bootstrap_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean (fixed resampling seed, so reports are reproducible)."""
    if len(values) < 2:
        return float("nan"), float("nan")
    res = stats.bootstrap((values,), np.mean, n_resamples=2000, confidence_level=0.95, method="percentile",
                          random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def table(groups: dict[str, list[Run]], baseline: str) -> pd.DataFrame:
    """One row per configuration: final evaluation statistics and the comparison with ``baseline``."""
    base_means = np.array([r.final_mean for r in groups[baseline]])
    rows = []
    for label, runs in groups.items():
        means = np.array([r.final_mean for r in runs])
        with_episodes = all(r.final_returns for r in runs)
        episodes = np.concatenate([r.final_returns for r in runs]) if with_episodes else np.array([])
        solved = [r.summary.get("first_timestep_reaching_threshold") for r in runs]
        solved = [s for s in solved if s is not None]
        low, high = bootstrap_ci(episodes)
        welch = stats.ttest_ind(means, base_means, equal_var=False) if len(means) > 1 and len(base_means) > 1 else None
        rows.append({
            "config": label, "env": runs[0].env, "seeds": len(runs), "episodes": len(episodes),
            "final_mean": float(means.mean()),
            "sem": float(means.std(ddof=1) / np.sqrt(len(means))) if len(means) > 1
            else float(episodes.std(ddof=1) / np.sqrt(len(episodes))) if len(episodes) > 1 else float("nan"),
            "ci95_low": low, "ci95_high": high, "iqm": iqm(episodes) if len(episodes) else float("nan"),
            "success_rate": float(np.mean([r.final_success for r in runs])),
            "steps_to_threshold": float(np.mean(solved)) if solved else float("nan"),
            "reached_threshold": f"{len(solved)}/{len(runs)}",
            "p_welch_vs_baseline": float(welch.pvalue) if welch is not None and label != baseline else float("nan"),
            "prob_improvement": prob_improvement(means, base_means) if label != baseline else float("nan"),
        })
    return pd.DataFrame(rows)


def prob_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) + P(X = Y) / 2 over all pairs of seeds (as in rliable)."""
    greater = (x[:, None] > y[None, :]).mean()
    equal = (x[:, None] == y[None, :]).mean()
    return float(greater + 0.5 * equal)


def plot_curves(groups: dict[str, list[Run]], env: str, path: Path, band: str = "seeds") -> None:
    """Eval return vs timesteps, one line per configuration with a standard-error band.

    :param band: ``"seeds"`` (standard error of the seeds' means) or ``"episodes"`` (over all evaluation
        episodes of all seeds, as course assignment 004 asks; runs without ``eval_episodes.csv`` fall back to seeds)
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    for label, runs in groups.items():
        with_curves = [r for r in runs if r.evals is not None and len(r.evals)]
        if not with_curves:
            continue
        pooled = band == "episodes" and all((r.path / "metrics" / "eval_episodes.csv").is_file() for r in with_curves)
        curve = pooled_curve(with_curves) if pooled else mean_curve(with_curves)
        line, = ax.plot(curve["timesteps"], curve["mean"], lw=2, label=f"{label} (n={len(with_curves)})")
        ax.fill_between(curve["timesteps"], curve["mean"] - curve["sem"], curve["mean"] + curve["sem"],
                        color=line.get_color(), alpha=0.2)
    threshold = next(iter(groups.values()))[0].threshold
    if threshold is not None:
        ax.axhline(threshold, color="gray", ls="--", lw=1, label=f"threshold {threshold:g}")
    spread = "all eval episodes of all seeds" if band == "episodes" else "across seeds"
    ax.set(xlabel="timesteps", ylabel=f"evaluation return (mean ± s.e., {spread})", title=f"{env}: evaluation return")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def compare(paths: list[Path], out_dir: Path, baseline: str | None = None, at_timesteps: int | None = None,
            band: str = "seeds") -> dict:
    """Write the comparison of the runs under ``paths`` to ``out_dir``; return what it found.

    :param paths: a sweep directory, run directories, or both
    :param out_dir: where ``table.csv``, ``table.md``, ``report.md`` and the plots go
    :param baseline: the configuration label the others are tested against (default: the first)
    :param at_timesteps: compare the runs as they stood at this many steps (see :func:`at_budget`)
    :param band: the curves' standard-error band, ``"seeds"`` or ``"episodes"`` (see :func:`plot_curves`)
    :return: ``{"table": DataFrame, "failed": [...], "unfinished": [...], "files": [...]}``
    """
    runs = find_runs(paths)
    if at_timesteps is None:
        done = [r for r in runs if r.status == "completed" and r.final_returns]
        unfinished = [r for r in runs if r.status == "running"]
    else:
        done = [b for b in (at_budget(r, at_timesteps) for r in runs) if b is not None]
        compared = {b.path for b in done}
        unfinished = [r for r in runs if r.path not in compared and r.status in ("completed", "running")]
    failed = [r for r in runs if r.status not in ("completed", "running")]
    out_dir.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    frames = []
    for env in sorted({r.env for r in done}):
        env_runs = [r for r in done if r.env == env]
        names = labels(list(dict.fromkeys(r.key for r in runs if r.env == env)))  # failed runs' configs count
        groups: dict[str, list[Run]] = {}  # in the order configurations first appear (the sweep's order)
        for r in env_runs:
            groups.setdefault(names[r.key], []).append(r)
        for runs_of_config in groups.values():
            runs_of_config.sort(key=lambda r: r.seed)
        if baseline is not None and baseline not in groups:
            raise ValueError(f"baseline={baseline!r} is not a configuration here; configurations: {', '.join(groups)}")
        frames.append(table(groups, baseline or next(iter(groups))).assign(baseline=baseline or next(iter(groups))))
        plot = out_dir / f"learning_curves_{env}.png"
        plot_curves(groups, env, plot, band)
        files.append(plot)
    result = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    result.to_csv(out_dir / "table.csv", index=False)
    markdown = result.to_markdown(index=False, floatfmt=".4g") if len(result) else "(no finished runs)"
    (out_dir / "table.md").write_text(markdown + "\n")
    budget = "" if at_timesteps is None else f" at {at_timesteps} timesteps (each run's last evaluation up to then)"
    report = [f"# Comparison{budget}", "", f"Runs: {len(runs)}; compared: {len(done)}; failed: {len(failed)}; "
              f"not finished{' or short of the budget' if budget else ''}: {len(unfinished)}.", "", markdown, "",
              *best_lines(result), ""]
    short_title = "Runs not finished" if at_timesteps is None else f"Runs short of {at_timesteps} timesteps"
    for title, items in (("Failed runs", failed), (short_title, unfinished)):
        if items:
            report += [f"## {title}", ""] + [f"- `{r.path}` ({r.status}): {' '.join(r.overrides)}"
                                               + (f": {r.summary['error']}" if r.summary.get("error") else "")
                                               for r in items] + [""]
    (out_dir / "report.md").write_text("\n".join(report))
    files += [out_dir / "table.csv", out_dir / "table.md", out_dir / "report.md"]
    log.info("comparison of %d runs%s written to %s", len(done), budget, out_dir)
    return {"table": result, "failed": failed, "unfinished": unfinished, "files": files}


def best_lines(result: pd.DataFrame) -> list[str]:
    """One line per env naming the configuration with the highest final mean (e.g. the best alpha)."""
    lines = []
    for env, rows in (result.groupby("env", sort=False) if len(result) else []):
        best = rows.loc[rows["final_mean"].idxmax()]
        lines.append(f"Best on {env}: **{best['config']}** (final mean {best['final_mean']:.4g} "
                     f"± {best['sem']:.2g} s.e. over {best['seeds']} seed(s)).")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lander.compare", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="a sweep directory and/or run directories")
    parser.add_argument("--out", type=Path, help="output directory (default: <first path>/comparison)")
    parser.add_argument("--baseline", help="configuration label to test the others against (default: the first)")
    parser.add_argument("--at-timesteps", type=int, metavar="N",
                        help="compare every run as it stood at N steps (its last evaluation up to N), finished or not")
    parser.add_argument("--band", choices=("seeds", "episodes"), default="seeds",
                        help="standard-error band of the curves: across seeds' means, or over all eval episodes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    missing = [str(p) for p in args.paths if not p.is_dir()]
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    out = args.out or args.paths[0] / "comparison"
    try:
        result = compare(args.paths, out, args.baseline, args.at_timesteps, args.band)
    except ValueError as exc:
        parser.error(str(exc))
    print((out / "table.md").read_text())
    print("\n".join(best_lines(result["table"])))
    for r in result["failed"]:
        print(f"failed: {r.path} ({' '.join(r.overrides)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
