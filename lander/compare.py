"""Comparison of runs: configurations grouped across seeds, learning curves, a table and statistics.

``python -m lander.compare <sweep dir or run dirs...> [--baseline LABEL] [--out DIR]`` writes the same
report a sweep writes at its end: ``comparison/learning_curves_<env>.png``, ``table.csv``, ``table.md``
and ``report.md`` (which also lists the runs that failed or have not finished).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats

log = logging.getLogger(__name__)
# Overrides that do not change what is trained (or name the whole sweep), left out of a configuration's label
IGNORED_OVERRIDES = ("seed", "hydra", "logger", "progress_bar", "video.", "checkpoint_freq", "baseline",
                     "experiment", "hparams_search")


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
    final = [e["return"] for e in json.loads(eval_json.read_text())["episodes"]] if eval_json.is_file() else []
    return Run(path=path, overrides=[str(o) for o in overrides], seed=int(cfg["seed"]), env=cfg["env"]["name"],
               status=status, summary=summary, evals=evals, final_returns=final,
               threshold=cfg["env"].get("reward_threshold"))


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
    base_means = np.array([np.mean(r.final_returns) for r in groups[baseline]])
    rows = []
    for label, runs in groups.items():
        means = np.array([np.mean(r.final_returns) for r in runs])
        episodes = np.concatenate([r.final_returns for r in runs])
        threshold = runs[0].threshold
        solved = [r.summary.get("first_timestep_reaching_threshold") for r in runs]
        solved = [s for s in solved if s is not None]
        low, high = bootstrap_ci(episodes)
        welch = stats.ttest_ind(means, base_means, equal_var=False) if len(means) > 1 and len(base_means) > 1 else None
        rows.append({
            "config": label, "env": runs[0].env, "seeds": len(runs), "episodes": len(episodes),
            "final_mean": float(means.mean()),
            "sem": float(means.std(ddof=1) / np.sqrt(len(means))) if len(means) > 1
            else float(episodes.std(ddof=1) / np.sqrt(len(episodes))),
            "ci95_low": low, "ci95_high": high, "iqm": iqm(episodes),
            "success_rate": float(np.mean(episodes >= threshold)) if threshold is not None else float("nan"),
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


def plot_curves(groups: dict[str, list[Run]], env: str, path: Path) -> None:
    """Eval return vs timesteps, one line per configuration with a standard-error band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    for label, runs in groups.items():
        with_curves = [r for r in runs if r.evals is not None and len(r.evals)]
        if not with_curves:
            continue
        curve = mean_curve(with_curves)
        line, = ax.plot(curve["timesteps"], curve["mean"], lw=2, label=f"{label} (n={len(with_curves)})")
        ax.fill_between(curve["timesteps"], curve["mean"] - curve["sem"], curve["mean"] + curve["sem"],
                        color=line.get_color(), alpha=0.2)
    threshold = next(iter(groups.values()))[0].threshold
    if threshold is not None:
        ax.axhline(threshold, color="gray", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.set(xlabel="timesteps", ylabel="evaluation return (mean ± s.e. across seeds)", title=f"{env}: evaluation return")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def compare(paths: list[Path], out_dir: Path, baseline: str | None = None) -> dict:
    """Write the comparison of the runs under ``paths`` to ``out_dir``; return what it found.

    :param paths: a sweep directory, run directories, or both
    :param out_dir: where ``table.csv``, ``table.md``, ``report.md`` and the plots go
    :param baseline: the configuration label the others are tested against (default: the first)
    :return: ``{"table": DataFrame, "failed": [...], "unfinished": [...], "files": [...]}``
    """
    runs = find_runs(paths)
    done = [r for r in runs if r.status == "completed" and r.final_returns]
    failed = [r for r in runs if r.status not in ("completed", "running")]
    unfinished = [r for r in runs if r.status == "running"]
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
        plot_curves(groups, env, plot)
        files.append(plot)
    result = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    result.to_csv(out_dir / "table.csv", index=False)
    markdown = result.to_markdown(index=False, floatfmt=".4g") if len(result) else "(no finished runs)"
    (out_dir / "table.md").write_text(markdown + "\n")
    report = ["# Comparison", "", f"Runs: {len(runs)}; finished: {len(done)}; failed: {len(failed)}; "
              f"not finished: {len(unfinished)}.", "", markdown, ""]
    for title, items in (("Failed runs", failed), ("Runs not finished", unfinished)):
        if items:
            report += [f"## {title}", ""] + [f"- `{r.path}` ({r.status}): {' '.join(r.overrides)}"
                                               + (f": {r.summary['error']}" if r.summary.get("error") else "")
                                               for r in items] + [""]
    (out_dir / "report.md").write_text("\n".join(report))
    files += [out_dir / "table.csv", out_dir / "table.md", out_dir / "report.md"]
    log.info("comparison of %d finished runs written to %s", len(done), out_dir)
    return {"table": result, "failed": failed, "unfinished": unfinished, "files": files}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lander.compare", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="a sweep directory and/or run directories")
    parser.add_argument("--out", type=Path, help="output directory (default: <first path>/comparison)")
    parser.add_argument("--baseline", help="configuration label to test the others against (default: the first)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    missing = [str(p) for p in args.paths if not p.is_dir()]
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    out = args.out or args.paths[0] / "comparison"
    try:
        result = compare(args.paths, out, args.baseline)
    except ValueError as exc:
        parser.error(str(exc))
    print((out / "table.md").read_text())
    for r in result["failed"]:
        print(f"failed: {r.path} ({' '.join(r.overrides)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
