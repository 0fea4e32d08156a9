"""Comparison of runs: configurations grouped across seeds, learning curves, a table and statistics.

``python -m lander.compare <sweep dir or run dirs...> [--baseline LABEL] [--out DIR] [--at-timesteps N]``
writes the same report a sweep writes at its end: ``comparison/learning_curves_<env>.png``, ``table.csv``,
``table.md`` and ``report.md`` (which also lists the runs that failed or have not finished). With
``--at-timesteps N`` every run that got at least N steps far is compared as it stood at its last evaluation
at or before N (finished or not): an equal budget for runs of different lengths or a sweep still running.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import pandas as pd
import yaml

from lander.plots import plot_curves
from lander.rundir import RunPaths, RunSummary, Status, atomic_write, find_run_dirs, read_json, write_text
from lander.schema import neutral_keys
from lander.statistics import table

log = logging.getLogger(__name__)
# Overrides that are not part of a configuration: the seed (the repetition), keys declared neutral in the schema
# (they do not change what is trained), and the names of the presets that set up the whole sweep
NOT_CONFIGURATION = ("seed", "hydra", "experiment", "hparams_search", *neutral_keys())


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
    def paths(self) -> RunPaths:
        return RunPaths(self.path)

    @property
    def key(self) -> tuple[str, ...]:
        """The configuration: every override except the seed and those that do not change training."""
        return tuple(sorted(o for o in self.overrides if not changes_nothing(o)))


def changes_nothing(override: str) -> bool:
    """True for an override of a key in :data:`NOT_CONFIGURATION` (or below one: ``video.fps=10``)."""
    key = override.lstrip("+~").split("=", 1)[0]
    return any(key == k or key.startswith((k + ".", k + "/")) for k in NOT_CONFIGURATION)


def load_run(path: Path) -> Run:
    """Read a run directory (``.hydra/``, ``summary.json``, ``metrics/eval.csv``, ``eval.json``)."""
    paths = RunPaths(path)
    cfg = yaml.safe_load(paths.config.read_text())
    overrides = yaml.safe_load(paths.overrides.read_text()) if paths.overrides.is_file() else []
    summary = RunSummary.load(paths)
    status = summary.status.value if summary else "failed before training"
    evals = pd.read_csv(paths.eval_csv) if paths.eval_csv.is_file() and paths.eval_csv.stat().st_size else None
    final = read_json(paths.eval_json) or {"episodes": []}
    return Run(
        path=path,
        overrides=[str(o) for o in overrides or []],
        seed=int(cfg["seed"]),
        env=cfg["env"]["name"],
        status=status,
        summary=summary.to_dict() if summary else {},
        evals=evals,
        final_returns=[e["return"] for e in final["episodes"]],
        threshold=cfg["env"].get("reward_threshold"),
        final_mean=final.get("mean", float("nan")),
        final_success=float(final["success_rate"]) if final.get("success_rate") is not None else float("nan"),
    )


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
    episodes_csv = run.paths.eval_episodes
    returns: list[float] = []
    if episodes_csv.is_file():
        episodes = pd.read_csv(episodes_csv)
        returns = episodes.loc[episodes["timesteps"] == last["timesteps"], "return"].tolist()[-int(last["n"]) :]
    reached = [] if run.threshold is None else evals.loc[evals["mean"] >= run.threshold, "timesteps"].tolist()
    summary = {"first_timestep_reaching_threshold": int(reached[0]) if reached else None}
    return replace(
        run,
        status=Status.COMPLETED.value,
        evals=evals,
        final_returns=returns,
        summary=summary,
        final_mean=float(last["mean"]),
        final_success=float(last["success_rate"]),
    )


def find_runs(paths: list[Path]) -> list[Run]:
    """Every run at or below ``paths`` (a sweep directory, run directories, or a mix), job 2 before job 10."""
    return [load_run(run_dir) for run_dir in find_run_dirs(paths)]


def labels(keys: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Name each configuration by the overrides in which it differs from the others."""
    common = set.intersection(*(set(k) for k in keys)) if len(keys) > 1 else set()
    return {k: " ".join(o for o in k if o not in common) or " ".join(k) or "default" for k in keys}


def select(runs: list[Run], at_timesteps: int | None) -> tuple[list[Run], list[Run], list[Run]]:
    """``(compared, failed, unfinished)``: the runs compared (as they stood at ``at_timesteps`` if given)."""
    if at_timesteps is None:
        done = [r for r in runs if r.status == Status.COMPLETED and r.final_returns]
        unfinished = [r for r in runs if r.status == Status.RUNNING]
    else:
        done = [b for b in (at_budget(r, at_timesteps) for r in runs) if b is not None]
        compared = {b.path for b in done}
        unfinished = [r for r in runs if r.path not in compared and r.status in (Status.COMPLETED, Status.RUNNING)]
    failed = [r for r in runs if r.status not in (Status.COMPLETED, Status.RUNNING)]
    return done, failed, unfinished


def configurations(runs: list[Run], done: list[Run], env: str) -> dict[str, list[Run]]:
    """The compared runs of ``env`` by configuration label, in the order configurations first appear, by seed."""
    names = labels(list(dict.fromkeys(r.key for r in runs if r.env == env)))  # failed runs' configs count
    groups: dict[str, list[Run]] = {}
    for r in done:
        if r.env == env:
            groups.setdefault(names[r.key], []).append(r)
    for runs_of_config in groups.values():
        runs_of_config.sort(key=lambda r: r.seed)
    return groups


def compare(
    paths: list[Path], out_dir: Path, baseline: str | None = None, at_timesteps: int | None = None, band: str = "seeds"
) -> dict:
    """Write the comparison of the runs under ``paths`` to ``out_dir``; return what it found.

    :param paths: a sweep directory, run directories, or both
    :param out_dir: where ``table.csv``, ``table.md``, ``report.md`` and the plots go
    :param baseline: the configuration label the others are tested against (default: the first)
    :param at_timesteps: compare the runs as they stood at this many steps (see :func:`at_budget`)
    :param band: the curves' standard-error band, ``"seeds"`` or ``"episodes"`` (see :func:`plot_curves`)
    :return: ``{"table": DataFrame, "failed": [...], "unfinished": [...], "files": [...]}``
    """
    runs = find_runs(paths)
    done, failed, unfinished = select(runs, at_timesteps)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    frames = []
    for env in sorted({r.env for r in done}):
        groups = configurations(runs, done, env)
        if baseline is not None and baseline not in groups:
            raise ValueError(f"baseline={baseline!r} is not a configuration here; configurations: {', '.join(groups)}")
        frames.append(table(groups, baseline or next(iter(groups))).assign(baseline=baseline or next(iter(groups))))
        files.append(out_dir / f"learning_curves_{env}.png")
        plot_curves(groups, env, files[-1], band)
    result = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    files += write_tables(result, out_dir, runs, done, failed, unfinished, at_timesteps)
    log.info(
        "comparison of %d runs%s written to %s",
        len(done),
        "" if at_timesteps is None else f" at {at_timesteps}",
        out_dir,
    )
    return {"table": result, "failed": failed, "unfinished": unfinished, "files": files}


def write_tables(
    result: pd.DataFrame,
    out_dir: Path,
    runs: list[Run],
    done: list[Run],
    failed: list[Run],
    unfinished: list[Run],
    at_timesteps: int | None,
) -> list[Path]:
    """Write ``table.csv``, ``table.md`` and ``report.md`` (which also lists failed and unfinished runs)."""
    atomic_write(out_dir / "table.csv", partial(result.to_csv, index=False))
    markdown = result.to_markdown(index=False, floatfmt=".4g") if len(result) else "(no finished runs)"
    write_text(out_dir / "table.md", markdown + "\n")
    budget = "" if at_timesteps is None else f" at {at_timesteps} timesteps (each run's last evaluation up to then)"
    report = [
        f"# Comparison{budget}",
        "",
        f"Runs: {len(runs)}; compared: {len(done)}; failed: {len(failed)}; "
        f"not finished{' or short of the budget' if budget else ''}: {len(unfinished)}.",
        "",
        markdown,
        "",
        *best_lines(result),
        "",
    ]
    short_title = "Runs not finished" if at_timesteps is None else f"Runs short of {at_timesteps} timesteps"
    for title, items in (("Failed runs", failed), (short_title, unfinished)):
        if items:
            report += (
                [f"## {title}", ""]
                + [
                    f"- `{r.path}` ({r.status}): {' '.join(r.overrides)}"
                    + (f": {r.summary['error']}" if r.summary.get("error") else "")
                    for r in items
                ]
                + [""]
            )
    write_text(out_dir / "report.md", "\n".join(report))
    return [out_dir / "table.csv", out_dir / "table.md", out_dir / "report.md"]


def best_lines(result: pd.DataFrame) -> list[str]:
    """One line per env naming the configuration with the highest final mean (e.g. the best alpha)."""
    lines = []
    for env, rows in result.groupby("env", sort=False) if len(result) else []:
        best = rows.loc[rows["final_mean"].idxmax()]
        lines.append(
            f"Best on {env}: **{best['config']}** (final mean {best['final_mean']:.4g} "
            f"± {best['sem']:.2g} s.e. over {best['seeds']} seed(s))."
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lander.compare", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="a sweep directory and/or run directories")
    parser.add_argument("--out", type=Path, help="output directory (default: <first path>/comparison)")
    parser.add_argument("--baseline", help="configuration label to test the others against (default: the first)")
    parser.add_argument(
        "--at-timesteps",
        type=int,
        metavar="N",
        help="compare every run as it stood at N steps (its last evaluation up to N), finished or not",
    )
    parser.add_argument(
        "--band",
        choices=("seeds", "episodes"),
        default="seeds",
        help="standard-error band of the curves: across seeds' means, or over all eval episodes",
    )
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
