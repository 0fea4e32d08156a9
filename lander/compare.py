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
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pandas as pd

from lander.plots import plot_curves, plot_final_scores, plot_profile
from lander.report_md import report_lines
from lander.report_sweep import write_sweep_report
from lander.rundir import atomic_write, write_text
from lander.runset import Run, RunSetError, configurations, drop_duplicates, find_runs, select
from lander.table import across_envs, env_table

log = logging.getLogger(__name__)


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


@dataclass
class Comparison:
    """What :func:`analyse` found: the runs, the compared ones by env and configuration, the tables, the others.

    :param runs: every run found
    :param groups: per env, the compared runs by configuration label (each as it stood at its compared budget)
    :param tables: per env, the table of :func:`lander.table.env_table`
    :param table: the tables of every env, one after the other (``table.csv``)
    :param spanning: P(improvement) across envs (``across_envs.csv``); empty for one env
    :param left_out: the runs not compared: ``failed``, ``unfinished``, ``unevaluated``, ``duplicates``
    """

    runs: list[Run]
    groups: dict[str, dict[str, list[Run]]]
    tables: dict[str, pd.DataFrame]
    table: pd.DataFrame
    spanning: pd.DataFrame
    left_out: dict[str, list] = field(default_factory=dict)
    at_timesteps: int | None = None

    @property
    def compared(self) -> int:
        """How many runs are compared."""
        return sum(len(runs) for by_label in self.groups.values() for runs in by_label.values())

    def budget(self, env: str) -> int:
        """The timestep ``env``'s runs are compared at."""
        return max(r.timesteps for runs in self.groups[env].values() for r in runs)


def analyse(paths: list[Path], baseline: str | None = None, at_timesteps: int | None = None) -> Comparison:
    """Find the runs under ``paths``, select those to compare and compute the statistics; write nothing.

    :raise RunSetError: runs that cannot be compared as asked (the message names the file or value)
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
    left_out: dict[str, list] = {"failed": failed, "unfinished": unfinished, "unevaluated": unevaluated,
                                 "duplicates": duplicates}  # fmt: skip
    return Comparison(
        runs=runs,
        groups=groups,
        tables=tables,
        table=pd.concat(tables.values(), ignore_index=True) if tables else pd.DataFrame(),
        spanning=across_envs(groups, base) if len(groups) > 1 else pd.DataFrame(),  # type: ignore[arg-type]
        left_out=left_out,
        at_timesteps=at_timesteps,
    )


def compare(
    paths: list[Path], out_dir: Path, baseline: str | None = None, at_timesteps: int | None = None, band: str = "seeds"
) -> dict:
    """Write the comparison of the runs under ``paths`` to ``out_dir``; return what it found.

    Everything is computed before the first file is written, so bad input (:class:`RunSetError`, naming the
    file or value) leaves ``out_dir`` as it was.

    :param paths: a sweep directory, run directories, or both
    :param out_dir: where ``table.csv``, ``table.md``, ``report.md``, ``report.html`` and the plots go
    :param baseline: the configuration label the others are tested against (default: the first)
    :param at_timesteps: compare the runs as they stood at this many steps (default: each env's common budget)
    :param band: the curves' band, ``"seeds"`` (bootstrap over seeds) or ``"episodes"`` (s.e. over episodes)
    :return: ``{"table", "across_envs", "files", "failed", "unfinished", "unevaluated", "duplicates"}``
    """
    found = analyse(paths, baseline, at_timesteps)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for env, by_label in found.groups.items():
        for name, plot in (("learning_curves", partial(plot_curves, band=band, budget=found.budget(env))),
                           ("final_scores", plot_final_scores), ("performance_profile", plot_profile)):  # fmt: skip
            files.append(out_dir / f"{name}_{env}.png")
            plot(by_label, env, files[-1])
    report = report_lines(found.runs, found.groups, found.tables, found.spanning, found.left_out, at_timesteps)
    files += write_tables(found.table, found.spanning, out_dir, report)
    files.append(write_sweep_report(found, out_dir / "report.html", band))
    log.info("comparison of %d runs written to %s", found.compared, out_dir)
    return {"table": found.table, "across_envs": found.spanning, "files": files, "comparison": found} | found.left_out


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
