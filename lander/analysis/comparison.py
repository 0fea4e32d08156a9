"""Comparison of runs: configurations grouped across seeds, compared at an equal budget, with statistics over runs.

Every run of an env is compared at the largest evaluated timestep all of them reached (each budget's runs at their
own, where the configurations differ in the budget: :mod:`lander.analysis.runset`);
with ``at_timesteps=N``, every run that got N steps far is compared as it stood at its last evaluation up to N
(finished or not); a run a stop rule ended early, at its last evaluation either way. The statistics are in
:mod:`lander.analysis.table` and :mod:`lander.analysis.statistics`;
:func:`lander.reports.sweep_report.compare` writes what :func:`analyse` finds.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from lander.analysis.runset import Run, by_budget, configurations, drop_duplicates, find_runs, select, without_env
from lander.analysis.sequential import read_record
from lander.analysis.table import across_envs, env_table
from lander.errors import RunSetError
from lander.storage.rundir import SweepPaths

log = logging.getLogger(__name__)


def check_envs(runs: list[Run]) -> None:
    """A comparison spanning envs needs the same configurations in each (an ``env=...`` sweep over a grid)."""
    by_env: dict[str, set[tuple[str, ...]]] = {}
    for r in runs:
        by_env.setdefault(r.env, set()).add(without_env(r.key))
    if len({frozenset(keys) for keys in by_env.values()}) > 1:
        listed = "; ".join(
            f"{env}: {', '.join(' '.join(k) or 'default' for k in sorted(keys))}" for env, keys in by_env.items()
        )
        raise RunSetError(
            f"runs of different envs mixed ({listed}): compare the runs of one env at a time, "
            "or sweep the same configurations over every env"
        )


@dataclass
class Comparison:
    """What :func:`analyse` found: the runs, the compared ones by env and configuration, the tables, the others.

    :param runs: every run found
    :param groups: per env, the compared runs by configuration label (each as it stood at its compared budget)
    :param tables: per env, the table of :func:`lander.analysis.table.env_table`
    :param table: the tables of every env, one after the other (``table.csv``)
    :param spanning: P(improvement) across envs (``across_envs.csv``); empty for one env
    :param left_out: the runs not compared: ``failed``, ``unfinished``, ``unevaluated``, ``duplicates``
    :param at_timesteps: the budget asked for (None: each env's common budget)
    :param files: what :func:`lander.reports.sweep_report.compare` wrote (empty until then)
    :param sequential: a sweep's AdaStop record (``comparison/adastop.json``, :mod:`lander.analysis.sequential`):
        the decisions that ended it; None for a sweep of fixed seeds
    """

    runs: list[Run]
    groups: dict[str, dict[str, list[Run]]]
    tables: dict[str, pd.DataFrame]
    table: pd.DataFrame
    spanning: pd.DataFrame
    left_out: dict[str, list[Any]] = field(default_factory=dict)
    at_timesteps: int | None = None
    files: list[Path] = field(default_factory=list)
    sequential: dict[str, Any] | None = None

    @property
    def compared(self) -> int:
        """How many runs are compared."""
        return sum(len(runs) for by_label in self.groups.values() for runs in by_label.values())

    def left_out_records(self) -> list[dict[str, str]]:
        """Each run not compared and why, as data (``comparison/left_out.json``, the service's API):
        ``{"run": <path>, "why": "failed" | "unfinished" | "unevaluated" | "duplicate", "detail": <one line>}``."""
        records = []
        for why in ("failed", "unfinished", "unevaluated"):
            for run in self.left_out.get(why, []):
                detail = run.summary.get("error") or self.why_left_out(run, why)
                records.append({"run": str(run.path), "why": why, "detail": str(detail)})
        for run, kept in self.left_out.get("duplicates", []):
            records.append({"run": str(run.path), "why": "duplicate", "detail": f"same as {kept.path}"})
        return records

    def why_left_out(self, run: Run, why: str) -> str:
        """A left-out run's detail: a run short of the budget asked for says how far it was evaluated."""
        if why == "unevaluated":
            return f"no evaluation at or before {run.timesteps:,} timesteps"
        if why == "unfinished" and self.at_timesteps is not None:
            return f"{run.status}, evaluated up to {run.reached:,} of the {self.at_timesteps:,} timesteps compared"
        return str(run.status)

    def saved(self, key: str) -> str | None:
        """What every compared run's saved config gives ``key`` (``baseline``, ``comparison_band``, ``x_axis``:
        their sweep's settings, :data:`lander.analysis.runset.SETTINGS`), or None where they differ or give none."""
        return saved(self.runs_compared, key)

    def curve_settings(self, band: str | None, x: str | None) -> tuple[str, str]:
        """The curves' band and x axis: ``band`` and ``x`` where given, else the runs' ``comparison_band`` and
        ``x_axis`` (:meth:`saved`), else over seeds and against timesteps."""
        return band or self.saved("comparison_band") or "seeds", x or self.saved("x_axis") or "timesteps"

    @property
    def runs_compared(self) -> list[Run]:
        """The compared runs, every env's."""
        return [r for by_label in self.groups.values() for runs in by_label.values() for r in runs]

    def budget_groups(self, env: str) -> list[tuple[int, dict[str, list[Run]]]]:
        """``env``'s compared configurations by the timestep they are compared at: one group (every one at
        :attr:`at_timesteps` where it is given), or one a budget where the configurations differ in their budget
        (:func:`lander.analysis.runset.by_budget`), the smallest first.

        :return: ``[(timestep, {label: runs})]``
        """
        return by_budget(self.groups[env], self.at_timesteps)

    def budgets(self, env: str) -> list[int]:
        """The timesteps ``env``'s runs are compared at (:meth:`budget_groups`)."""
        return [budget for budget, _ in self.budget_groups(env)]


def saved_baseline(runs: list[Run], groups: dict[str, dict[str, list[Run]]]) -> str | None:
    """The baseline the runs' sweep was configured with (``baseline=``), where every run gives the same and it names a
    configuration; a sweep's comparison written anew (``lander.report``, ``lander.compare`` without ``--baseline``)
    tests against it as the sweep's end did."""
    named = saved(runs, "baseline")
    if named is None or any(named in by_label for by_label in groups.values()):
        return named
    log.warning("the runs' baseline=%r is not a configuration compared here: the first is the baseline", named)
    return None


def saved(runs: list[Run], key: str) -> str | None:
    """The value of ``key`` every run of ``runs`` was configured with (:attr:`Run.settings`); None if they differ."""
    values = {r.settings.get(key) for r in runs}
    return values.pop() if len(values) == 1 else None


def ended(runs: list[Run]) -> str:
    """The runs that ended without completing, counted by status: ``"2 interrupted, 1 failed, "`` (interrupted runs,
    stopped by their user, were counted as failed)."""
    counts = collections.Counter(r.status for r in runs)
    return "".join(f"{n} {status}, " for status, n in sorted(counts.items())) or "0 failed, "


def analyse(paths: list[Path], baseline: str | None = None, at_timesteps: int | None = None) -> Comparison:
    """Find the runs under ``paths``, select those to compare and compute the statistics; write nothing.

    :raise RunSetError: runs that cannot be compared as asked (the message names the file or value)
    """
    if at_timesteps is not None and at_timesteps < 1:  # lander.compare's parser says it as --at-timesteps
        raise RunSetError(f"at_timesteps={at_timesteps}: must be a number of timesteps >= 1")
    runs = find_runs(paths)
    if not runs:
        raise RunSetError(f"no run directories (with .hydra/config.yaml) under {', '.join(map(str, paths))}")
    check_envs(runs)
    compared, failed, unfinished, unevaluated = select(runs, at_timesteps)
    if not compared:
        what = "completed" if at_timesteps is None else f"reached {at_timesteps:,} timesteps"
        if unevaluated:  # past it, but not evaluated by then
            what = "was evaluated by " + ("its env's budget" if at_timesteps is None else f"{at_timesteps:,} timesteps")
        short = "not finished" if at_timesteps is None else "short of it"
        counts = [f"{len(runs)} run(s)", ended(failed).rstrip(", ")]
        counts += [f"{len(unfinished)} {short}"] if unfinished or not unevaluated else []
        counts += [f"{len(unevaluated)} not evaluated by then"] if unevaluated else []
        raise RunSetError(f"no run under {', '.join(map(str, paths))} {what}, nothing to compare: {', '.join(counts)}")
    compared, duplicates = drop_duplicates(compared)
    groups = {env: configurations(runs, compared, env) for env in sorted({r.env for r in compared})}
    base = baseline or saved_baseline(compared, groups) or next((next(iter(g)) for g in groups.values()), None)
    for env, by_label in groups.items():
        if baseline is not None and baseline not in by_label:
            raise RunSetError(
                f"baseline={baseline!r} is not a configuration of {env}; configurations: {', '.join(by_label)}"
            )
    # each env's runs against the baseline; where none of the first configuration's runs of an env was compared
    # (they failed there), against that env's first compared configuration
    tables = {
        env: env_table(by_label, base if base in by_label else next(iter(by_label))) for env, by_label in groups.items()
    }
    left_out: dict[str, list[Any]] = {
        "failed": failed,
        "unfinished": unfinished,
        "unevaluated": unevaluated,
        "duplicates": duplicates,
    }
    return Comparison(
        runs=runs,
        groups=groups,
        tables=tables,
        table=pd.concat(tables.values(), ignore_index=True) if tables else pd.DataFrame(),
        spanning=across_envs(groups, base) if len(groups) > 1 else pd.DataFrame(),  # type: ignore[arg-type]
        left_out=left_out,
        at_timesteps=at_timesteps,
        sequential=read_record(SweepPaths(paths[0]).comparison / "adastop.json") if len(paths) == 1 else None,
    )
