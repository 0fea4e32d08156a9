"""Comparison of runs: configurations grouped across seeds, compared at an equal budget, with statistics over runs.

``python -m lander.compare <sweep dir or run dirs...> [--baseline LABEL] [--out DIR] [--at-timesteps N]``
writes the report a sweep writes at its end: ``comparison/table.csv``, ``table.md``, ``report.md`` and per env
``learning_curves_<env>.png``, ``final_scores_<env>.png`` and ``performance_profile_<env>.png``. Every run of an
env is compared at the largest evaluated timestep all of them reached (:mod:`lander.runset`); with
``--at-timesteps N``, every run that got N steps far is compared as it stood at its last evaluation up to N
(finished or not). The statistics are in :mod:`lander.table` and :mod:`lander.statistics`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from functools import partial
from pathlib import Path

import pandas as pd

from lander.plots import plot_curves, plot_final_scores, plot_profile
from lander.rundir import atomic_write, write_text
from lander.runset import Run, RunSetError, configurations, drop_duplicates, find_runs, select
from lander.table import across_envs, env_table, seed_notes

log = logging.getLogger(__name__)


def readable(table: pd.DataFrame) -> str:
    """The report's table: values with their intervals side by side, blanks where a statistic does not apply."""

    def number(value: float, fmt: str = ".4g") -> str:
        return "" if pd.isna(value) else "inf" if value == float("inf") else format(value, fmt)

    def with_ci(row: pd.Series, name: str, low: str, high: str) -> str:
        value = number(row[name])
        return f"{value} [{number(row[low])}, {number(row[high])}]" if value and not pd.isna(row[low]) else value

    rows = [{"config": r["config"], "seeds": r["seeds"], "timesteps": f"{r['timesteps']:,}",
             "mean [95% CI]": with_ci(r, "final_mean", "ci95_low", "ci95_high"), "s.e.": number(r["sem"]),
             "IQM [95% CI]": with_ci(r, "iqm", "iqm_ci95_low", "iqm_ci95_high"),
             "success": number(r["success_rate"], ".2f"), "diff": number(r["diff"]), "d": number(r["cohens_d"], ".2f"),
             "test": r["test"], "p": number(r["p_value"], ".3g"), "p (Holm)": number(r["p_holm"], ".3g"),
             "P(improvement) [95% CI]": with_ci(r, "prob_improvement", "prob_improvement_ci95_low",
                                                "prob_improvement_ci95_high"),
             "seeds for 80% power": number(r["seeds_needed"], ".0f")}
            for _, r in table.iterrows()]  # fmt: skip
    return pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True)


def check_envs(runs: list[Run]) -> None:
    """A comparison spanning envs needs the same configurations in each (an ``env=...`` sweep over a grid)."""
    by_env: dict[str, set[tuple[str, ...]]] = {}
    for r in runs:
        by_env.setdefault(r.env, set()).add(tuple(o for o in r.key if not o.lstrip("+").startswith("env=")))
    if len({frozenset(keys) for keys in by_env.values()}) > 1:
        listed = "; ".join(f"{env}: {', '.join(' '.join(k) or 'default' for k in sorted(keys))}"
                           for env, keys in by_env.items())  # fmt: skip
        raise RunSetError(
            f"runs of different envs mixed ({listed}): compare the runs of one env at a time, "
            "or sweep the same configurations over every env"
        )


def compare(
    paths: list[Path], out_dir: Path, baseline: str | None = None, at_timesteps: int | None = None, band: str = "seeds"
) -> dict:
    """Write the comparison of the runs under ``paths`` to ``out_dir``; return what it found.

    Everything is computed before the first file is written, so bad input (:class:`RunSetError`, naming the
    file or value) leaves ``out_dir`` as it was.

    :param paths: a sweep directory, run directories, or both
    :param out_dir: where ``table.csv``, ``table.md``, ``report.md`` and the plots go
    :param baseline: the configuration label the others are tested against (default: the first)
    :param at_timesteps: compare the runs as they stood at this many steps (default: each env's common budget)
    :param band: the curves' band, ``"seeds"`` (bootstrap over seeds) or ``"episodes"`` (s.e. over episodes)
    :return: ``{"table", "across_envs", "files", "failed", "unfinished", "unevaluated", "duplicates"}``
    """
    runs = find_runs(paths)
    if not runs:
        raise RunSetError(f"no run directories (with .hydra/config.yaml) under {', '.join(map(str, paths))}")
    check_envs(runs)
    compared, failed, unfinished, unevaluated = select(runs, at_timesteps)
    if not compared:
        what = "completed" if at_timesteps is None else f"reached {at_timesteps} timesteps"
        raise RunSetError(f"no run under {', '.join(map(str, paths))} {what}, nothing to compare: {len(runs)} "
                          f"run(s), {len(failed)} failed, {len(unfinished)} not finished")  # fmt: skip
    compared, duplicates = drop_duplicates(compared)
    groups = {env: configurations(runs, compared, env) for env in sorted({r.env for r in compared})}
    base = baseline or next((next(iter(g)) for g in groups.values()), None)
    for env, by_label in groups.items():
        if baseline is not None and baseline not in by_label:
            raise RunSetError(f"baseline={baseline!r} is not a configuration of {env}; "
                              f"configurations: {', '.join(by_label)}")  # fmt: skip
    tables = {env: env_table(by_label, base) for env, by_label in groups.items()}  # type: ignore[arg-type]
    result = pd.concat(tables.values(), ignore_index=True) if tables else pd.DataFrame()
    spanning = across_envs(groups, base) if len(groups) > 1 else pd.DataFrame()  # type: ignore[arg-type]
    out_dir.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for env, by_label in groups.items():
        budget = max(r.timesteps for runs in by_label.values() for r in runs)
        for name, plot in (("learning_curves", partial(plot_curves, band=band, budget=budget)),
                           ("final_scores", plot_final_scores), ("performance_profile", plot_profile)):  # fmt: skip
            files.append(out_dir / f"{name}_{env}.png")
            plot(by_label, env, files[-1])
    left_out: dict[str, list] = {
        "failed": failed,
        "unfinished": unfinished,
        "unevaluated": unevaluated,
        "duplicates": duplicates,
    }
    report = report_lines(runs, groups, tables, spanning, left_out, at_timesteps)
    files += write_tables(result, spanning, out_dir, report)
    log.info("comparison of %d runs written to %s", len(compared), out_dir)
    return {"table": result, "across_envs": spanning, "files": files} | left_out


def write_tables(result: pd.DataFrame, spanning: pd.DataFrame, out_dir: Path, report: list[str]) -> list[Path]:
    """Write ``table.csv``, ``table.md``, ``report.md`` (and ``across_envs.csv`` when the comparison spans envs)."""
    atomic_write(out_dir / "table.csv", partial(result.to_csv, index=False))
    write_text(out_dir / "table.md", result.to_markdown(index=False, floatfmt=".4g") + "\n")
    write_text(out_dir / "report.md", "\n".join(report))
    files = [out_dir / "table.csv", out_dir / "table.md", out_dir / "report.md"]
    if len(spanning):
        atomic_write(out_dir / "across_envs.csv", partial(spanning.to_csv, index=False))
        files.append(out_dir / "across_envs.csv")
    return files


def budget_lines(by_label: dict[str, list[Run]], at_timesteps: int | None) -> list[str]:
    """Where the runs of one env are compared, and which ones trained further than that."""
    runs = [r for group in by_label.values() for r in group]
    at = max(r.timesteps for r in runs)
    if at_timesteps is not None:
        lines = [f"Compared at **{at_timesteps:,} timesteps**: every run that got that far (finished or not), "
                 "as it stood at its last evaluation up to then."]  # fmt: skip
    else:
        limit = min(runs, key=lambda r: r.reached)
        least = ("every run ended there" if all(r.reached == limit.reached for r in runs)
                 else f"the one that stopped first: `{limit.path}`, at {limit.reached:,}")  # fmt: skip
        lines = [f"Compared at **{at:,} timesteps**: the largest evaluated timestep that every compared run "
                 f"reached ({least})."]  # fmt: skip
    further = [r for r in runs if r.reached > r.timesteps]
    if further:
        lines.append(f"{len(further)} run(s) went further (up to {max(r.reached for r in further):,} steps: a longer "
                     "budget, or whole rollouts past it); each is compared at its evaluation at or before that "
                     "point, not at its end.")  # fmt: skip
    for label, group in by_label.items():
        steps = sorted({r.timesteps for r in group})
        if len(steps) > 1 or steps[0] != at:
            lines.append(f"`{label}` is compared at its evaluation at {', '.join(f'{s:,}' for s in steps)} steps "
                         "(its last one at or before that point).")  # fmt: skip
    return lines


def report_lines(
    runs: list[Run],
    groups: dict[str, dict[str, list[Run]]],
    tables: dict[str, pd.DataFrame],
    spanning: pd.DataFrame,
    left_out: dict[str, list],
    at_timesteps: int | None,
) -> list[str]:
    """``report.md``: per env the budget, the table, what its seeds allow and the best; then the runs left out."""
    compared = sum(len(g) for by_label in groups.values() for g in by_label.values())
    names = {"failed": "failed", "unfinished": "not finished" if at_timesteps is None else "short of the budget",
             "unevaluated": "not evaluated by then", "duplicates": "duplicates not counted"}  # fmt: skip
    counts = "; ".join(f"{names[key]}: {len(items)}" for key, items in left_out.items())
    report = [
        "# Comparison",
        "",
        f"Runs: {len(runs)}; compared: {compared}; {counts}.",
        "",
        "Every statistic is over runs: a run's score is the mean return of its evaluation episodes at the compared "
        "timestep, and intervals are 95% percentile bootstrap intervals over seeds (rliable's method).",
        "",
    ]
    for env, by_label in groups.items():
        table = tables[env]
        report += [f"## {env}", "", *budget_lines(by_label, at_timesteps), "",
                   f"Baseline: `{table['baseline'].iloc[0]}`.", ""]  # fmt: skip
        report += [readable(table), ""]
        report += [f"- {note}" for note in seed_notes(table)] + [""] + best_lines(table) + [""]
    if len(spanning):
        report += ["## Across envs", "", "P(improvement) over the baseline averaged over envs, with rliable's "
                   "stratified bootstrap (seeds resampled within each env):", "",
                   spanning.to_markdown(index=False, floatfmt=".4g"), ""]  # fmt: skip
    listed = [
        ("Duplicates not counted (the same configuration and seed; the newest is kept)",
         [f"- `{r.path}` (seed {r.seed}): same as `{kept.path}`" for r, kept in left_out["duplicates"]]),
        ("Failed runs", [run_line(r) for r in left_out["failed"]]),
        ("Runs not finished" if at_timesteps is None else f"Runs short of {at_timesteps} timesteps",
         [run_line(r) for r in left_out["unfinished"]]),
        ("Runs with no evaluation at or before their env's compared timestep (e.g. eval.freq=0 and a longer budget)",
         [f"{run_line(r)} (compared timestep {r.timesteps:,})" for r in left_out["unevaluated"]]),
    ]  # fmt: skip
    for title, items in listed:
        report += [f"## {title}", "", *items, ""] if items else []
    return report


def run_line(run: Run) -> str:
    """A failed or unfinished run in the report: its path, status, overrides and error."""
    error = f": {run.summary['error']}" if run.summary.get("error") else ""
    return f"- `{run.path}` ({run.status}): {' '.join(run.overrides)}{error}"


def best_lines(result: pd.DataFrame) -> list[str]:
    """One line per env naming the configuration with the highest final mean, with its interval over seeds."""
    lines = []
    for env, rows in result.groupby("env", sort=False) if len(result) else []:
        best = rows.loc[rows["final_mean"].idxmax()]
        spread = (f"95% CI [{best['ci95_low']:.4g}, {best['ci95_high']:.4g}] over {best['seeds']} seeds"
                  if best["seeds"] > 1 else "n=1 seed: no interval")  # fmt: skip
        lines.append(f"Highest final mean on {env}: **{best['config']}** ({best['final_mean']:.4g}, {spread}).")
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
        help="band of the curves: 95%% bootstrap interval of the mean over seeds (seeds), or the standard error "
        "over all evaluation episodes of all seeds (episodes)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    missing = [str(p) for p in args.paths if not p.is_dir()]
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    if args.at_timesteps is not None and args.at_timesteps < 1:
        parser.error(f"--at-timesteps={args.at_timesteps}: must be a number of timesteps >= 1")
    out = args.out or args.paths[0] / "comparison"
    try:
        compare(args.paths, out, args.baseline, args.at_timesteps, args.band)
    except RunSetError as exc:
        log.error("lander.compare: %s", exc)
        return 2
    print((out / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
