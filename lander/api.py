"""lander's Python API: a run or a sweep as tables and interactive figures, for notebooks and scripts.

.. code-block:: python

    from lander.api import load_run, load_sweep

    run = load_run("outputs/2026-11-23/10-00-00_ppo_lunar_lander_seed-0")
    run.summary["final_eval_mean"], run.eval.tail()  # summary.json, metrics/eval.csv as a DataFrame
    run.figures()["returns"]  # the figures of report.html (Plotly): returns, eval_episodes, training, speed

    sweep = load_sweep("multirun/2026-11-23/10-05-00")
    sweep.table  # the comparison table (table.csv): mean, CI, IQM, tests, P(improvement), per configuration
    sweep.scores  # one row per compared run: env, configuration, seed, score, timesteps, path
    sweep.figures()["lunar_lander"]["learning_curves"]  # per env: learning_curves, final_scores, ...

Both read the directories as they are (a failed or running run too) and write nothing unless asked
(:meth:`RunRecord.report`, :meth:`SweepRecord.report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from lander.analysis.comparison import Comparison, analyse
from lander.analysis.runset import settings_of
from lander.analysis.sequential import decision_matrix
from lander.errors import RunSetError
from lander.reports.figures import read_metrics, run_figures, sweep_figures
from lander.reports.run_report import write_run_report
from lander.reports.sweep_report import write_comparison
from lander.storage.rundir import RunPaths, SweepPaths, find_run_dirs, not_a_comparisons, not_a_run, read_json
from lander.storage.yamlfile import read_yaml


@dataclass
class RunRecord:
    """One run directory: its summary, config, metrics (DataFrames) and figures."""

    path: Path

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.path)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """``summary.json``: status, budget, final evaluation, timings (empty if the run never started)."""
        return read_json(self.paths.summary)

    @cached_property
    def config(self) -> DictConfig:
        """The run's composed config (``.hydra/config.yaml``)."""
        config = OmegaConf.create(read_yaml(self.paths.config))  # read with a bound: an alias bomb is refused
        if not isinstance(config, DictConfig):
            raise RunSetError(f"{self.paths.config} holds no YAML mapping")
        return config

    def metrics(self, name: str) -> pd.DataFrame:
        """A metrics file by attribute name (``train_episodes``, ``eval``, ``eval_episodes``, ``sb3_progress``,
        ``resources``) as numbers; empty if the run did not write it."""
        files = self.paths.metric_files
        if name not in files:
            raise KeyError(f"{name!r}: one of {', '.join(files)}")
        return read_metrics(files[name])

    @property
    def train_episodes(self) -> pd.DataFrame:
        """Every training episode: ``timesteps``, ``episode``, ``return``, ``length``, ``wall_time``."""
        return self.metrics("train_episodes")

    @property
    def eval(self) -> pd.DataFrame:
        """Every periodic evaluation: ``timesteps``, ``mean``, ``std``, ``sem``, ``n``, ``success_rate``, ..."""
        return self.metrics("eval")

    @property
    def eval_episodes(self) -> pd.DataFrame:
        """Every evaluation episode: ``timesteps``, ``seed``, ``return``, ``length``."""
        return self.metrics("eval_episodes")

    @property
    def sb3_progress(self) -> pd.DataFrame:
        """SB3's own logger records (``train/loss``, ``train/entropy_loss``, ``time/fps``, ...)."""
        return self.metrics("sb3_progress")

    def figures(self, x: str | None = None) -> dict[str, Any]:
        """The run's Plotly figures by name: ``returns``, ``eval_episodes``, ``training``, ``speed``; its curves
        against ``x`` (``timesteps`` or ``episodes``), by default the run's ``x_axis``, as its report draws them."""
        x = x or settings_of(self.config).get("x_axis", "timesteps")
        return run_figures(self.paths, self.config.env.get("reward_threshold"), x)

    def report(self) -> Path:
        """Write the run's ``report.html`` anew; return its path."""

        return write_run_report(self.path)


@dataclass
class SweepRecord:
    """Runs compared as :mod:`lander.compare` compares them (equal budgets, statistics over seeds).

    :param comparison: what :func:`lander.analysis.comparison.analyse` found (groups of runs, tables, runs left out)
    """

    path: Path
    comparison: Comparison

    @property
    def runs(self) -> list[RunRecord]:
        """Every run found, compared or not."""
        return [RunRecord(r.path) for r in self.comparison.runs]

    @property
    def table(self) -> pd.DataFrame:
        """The comparison table, every env's rows (the columns of ``table.csv``)."""
        return self.comparison.table

    @property
    def adastop(self) -> dict[str, Any] | None:
        """A sweep that chose its seeds (``hydra/sweeper=adastop``): its record, ``comparison/adastop.json``
        (``scores``, ``decisions``, ``interims``, ``seeds``, ``runs_used`` against ``fixed_design``); else None."""
        return self.comparison.sequential

    @property
    def decisions(self) -> pd.DataFrame:
        """The sequential test's decisions as a matrix (row a vs column b: ``larger``, ``smaller``, ``undecided``,
        with the interim that decided it); empty for a sweep of fixed seeds."""
        return decision_matrix(self.comparison.sequential) if self.comparison.sequential else pd.DataFrame()

    @property
    def scores(self) -> pd.DataFrame:
        """One row per compared run: ``env``, ``config``, ``seed``, ``score`` (its evaluation mean at the compared
        timestep), ``timesteps``, ``path``."""
        rows = []
        for env, by_label in self.comparison.groups.items():
            for label, runs in by_label.items():
                rows += [
                    {
                        "env": env,
                        "config": label,
                        "seed": r.seed,
                        "score": r.final_mean,
                        "timesteps": r.timesteps,
                        "path": str(r.path),
                    }
                    for r in runs
                ]
        return pd.DataFrame(rows)

    def figures(self, band: str | None = None, x: str | None = None) -> dict[str, dict[str, Any]]:
        """Per env, the Plotly figures by name: ``learning_curves`` (against ``x``: timesteps or episodes),
        ``final_scores``, ``performance_profile``; ``band`` and ``x`` default to the sweep's ``comparison_band``
        and ``x_axis`` (else seeds, timesteps)."""
        found = self.comparison
        band, x = found.curve_settings(band, x)
        return {
            env: sweep_figures(by_label, env, band, found.budgets(env), x) for env, by_label in found.groups.items()
        }

    def report(self, band: str | None = None, x: str | None = None) -> Path:
        """Write ``comparison/`` (tables, plots, ``report.html``) anew, as :attr:`table` compares the runs (the
        ``baseline`` and ``at_timesteps`` :func:`load_sweep` was given); return the HTML report's path.

        :raises RunSetError: ``comparison/`` holds files of one's own (a user's ``report.md``), left as they are
        """
        paths = SweepPaths(self.path)
        if (foreign := not_a_comparisons(paths.comparison)) is not None:
            raise RunSetError(
                f"{paths.comparison} {foreign}, which report.md and the rest would replace: write it elsewhere, "
                "lander.api.write_comparison(sweep.comparison, <a new or empty directory>)"
            )
        write_comparison(self.comparison, paths.comparison, band=band, x=x)
        return paths.report


def load_run(path: str | Path) -> RunRecord:
    """A run directory (one with ``.hydra/config.yaml``)."""
    record = RunRecord(Path(path))
    if not record.paths.is_run():
        raise RunSetError(not_a_run(Path(path), "load_sweep reads them all, load_run one of them"))
    return record


def load_sweep(path: str | Path, baseline: str | None = None, at_timesteps: int | None = None) -> SweepRecord:
    """A sweep directory (or any directory of runs), compared as ``python -m lander.compare`` compares it."""
    return SweepRecord(Path(path), analyse([Path(path)], baseline, at_timesteps))


def latest(root: str | Path, sweep: bool = False) -> Path:
    """The run directory under ``root`` (e.g. ``outputs``) started last, or with ``sweep`` the sweep directory started
    last (one with Hydra's ``multirun.yaml`` or an Optuna study, e.g. under ``multirun``).

    A run starts when its ``.hydra/config.yaml`` is written (once: a resume leaves it), a sweep with its first job;
    what is written into a directory later (an evaluation, a reproduction, a comparison) does not make it newer."""
    runs = find_run_dirs([Path(root)])
    if not runs:
        raise RunSetError(f"no run directories under {root}")
    started = {run: RunPaths(run).config.stat().st_mtime for run in runs}
    if not sweep:
        return max(runs, key=started.__getitem__)
    sweeps: dict[Path, float] = {}
    for run in runs:
        home = next((d for d in run.parents if SweepPaths(d).is_sweep()), None)  # its sweep, however deep its subdir
        if home is not None and home.is_relative_to(root):
            sweeps[home] = min(sweeps.get(home, started[run]), started[run])
    if not sweeps:
        raise RunSetError(f"no sweep directories (with multirun.yaml or optuna.db) under {root}")
    return max(sweeps, key=sweeps.__getitem__)
