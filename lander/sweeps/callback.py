"""Hydra callback that turns a ``--multirun`` sweep into a controlled experiment.

At the start it checks that a re-run into an existing sweep directory is the same sweep (:mod:`lander.sweeps.rerun`)
and creates the directory (the Optuna sweeper keeps its SQLite study there); at the
end it writes ``<sweep dir>/comparison/`` with :func:`lander.compare.compare`, logs it once to W&B in
the sweep's group, and names the jobs that failed (``python -m lander.run`` then exits 1). It reads the job
directories, so it works the same whichever launcher (lander's, basic, joblib, submitit) ran
the jobs.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from lander.config.schema import chosen_wandb_mode, wandb_node
from lander.errors import ConfigError, RunSetError
from lander.numbers import significant, timesteps_listed
from lander.storage.lock import SweepLock
from lander.storage.rundir import SweepPaths
from lander.sweeps.rerun import check_same_sweep, continue_study

if TYPE_CHECKING:
    from lander.analysis.comparison import Comparison

log = logging.getLogger(__name__)


def sweep_group(sweep_dir: str | Path) -> str:
    """The W&B group of a sweep, from its directory.

    ``multirun/2026-11-22/14-05-31`` -> ``sweep-2026-11-22_14-05-31``
    """
    parts = Path(sweep_dir).parts[-2:]
    return "sweep-" + "_".join(parts)


class ComparisonCallback(Callback):
    """Writes the sweep comparison when a multirun ends.

    The baseline the other configurations are tested against is the config's ``baseline``
    (a configuration label such as ``gamma=0.99``), or the first configuration when it is null.

    :param log_to_wandb: also log the comparison table and plots to W&B, in the sweep's group
    """

    def __init__(self, log_to_wandb: bool = True) -> None:
        self.log_to_wandb = log_to_wandb
        self.lock: SweepLock | None = None  # the sweep directory's, taken at the start

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            check_same_sweep(config)  # a re-run must be the same sweep: job N is then the same configuration
            continue_study(config)  # an Optuna search goes on to n_trials over its whole study
            Path(config.hydra.sweep.dir).mkdir(parents=True, exist_ok=True)
            self.lock = SweepLock(Path(config.hydra.sweep.dir))
            self.lock.acquire()  # until this process ends
        except ConfigError as exc:
            log.error("invalid configuration: %s", exc)
            sys.exit(2)  # Hydra turns a callback's exception into a warning; SystemExit stops the sweep

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write the comparison; if a job did not complete, end the process with exit code 1 naming it (Hydra turns
        a callback's exception into a warning, a ``SystemExit`` it lets through)."""
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            found = self._compare(config, sweep_dir)
        except (RunSetError, OSError) as exc:  # no job completed, a job's files unreadable, a full disk
            why = str(exc) if isinstance(exc, RunSetError) else f"{type(exc).__name__}: {exc}"
            log.error("the sweep's comparison could not be written: %s", why)
            raise SystemExit(f"lander: the sweep did not complete: no comparison: {why}") from None
        if self.log_to_wandb and (node := wandb_node(config)) is not None:
            self._log_to_wandb(node, sweep_dir, found)
        log.info("%s", sweep_closing(found, SweepPaths(sweep_dir).comparison))
        failed = [
            f"job {r.path.name} ({' '.join(r.overrides)}): {r.status}"
            for r in found.left_out["failed"] + found.left_out["unfinished"]
        ]
        if failed:
            log.error(
                "%d job(s) of the sweep did not complete: %s. The comparison in %s covers the others.",
                len(failed),
                "; ".join(failed),
                SweepPaths(sweep_dir).comparison,
            )
            raise SystemExit(f"lander: {len(failed)} job(s) of the sweep did not complete: {'; '.join(failed)}")

    @staticmethod
    def _compare(config: DictConfig, sweep_dir: Path) -> Comparison:
        """:func:`lander.reports.sweep_report.compare` into ``<sweep>/comparison``; a baseline that names no
        configuration is reported and the first configuration used instead."""
        # Hydra imports this module at the start of every run, a single run too: the analysis (pandas, SciPy,
        # matplotlib, Plotly; 3.3 s measured with `python -X importtime`) is imported when a sweep ends
        from lander.reports.sweep_report import compare

        band, x = config.get("comparison_band", "seeds"), config.get("x_axis", "timesteps")
        try:
            return compare([sweep_dir], SweepPaths(sweep_dir).comparison, config.get("baseline"), band=band, x=x)
        except RunSetError as exc:
            if config.get("baseline") is None or "baseline=" not in str(exc):
                raise
            log.error("%s; the comparison tests against the first configuration instead", exc)
            return compare([sweep_dir], SweepPaths(sweep_dir).comparison, None, band=band, x=x)

    @staticmethod
    def _log_to_wandb(node: DictConfig, sweep_dir: Path, found: Comparison) -> None:
        """The comparison as a W&B run of its own in the sweep's group, with the settings of the jobs' tracker."""
        # W&B (0.5 s), the tracker's SB3 and torch (~2 s), the analysis's pandas (~1 s): only a sweep's end needs them
        import wandb

        from lander.analysis.sequential import decision_matrix
        from lander.tracking.wandb_tracker import keep_offline

        mode = chosen_wandb_mode(node.mode)
        keep_offline(wandb, mode)
        run = wandb.init(
            project=node.project,
            entity=node.entity,
            group=sweep_group(sweep_dir),
            job_type="comparison",
            name=f"comparison_{sweep_group(sweep_dir)}",
            dir=str(sweep_dir),
            mode=mode,  # type: ignore[arg-type]  # one of WANDB_MODES: checked before the sweep
            settings=wandb.Settings(console="off"),
        )
        try:
            report = SweepPaths(sweep_dir).report
            run.log(
                {"comparison/table": wandb.Table(dataframe=found.table)}
                | {f"comparison/{p.stem}": wandb.Image(str(p)) for p in found.files if p.suffix == ".png"}
                | ({"comparison/report": wandb.Html(str(report), inject=False)} if report.is_file() else {})
                | (
                    {"comparison/adastop": wandb.Table(dataframe=decision_matrix(found.sequential).reset_index())}
                    if found.sequential
                    else {}
                )
            )
            if found.sequential:  # the decisions and seeds used, as the run's summary (W&B's table of runs shows it)
                run.summary.update({"adastop": {k: found.sequential.get(k) for k in ADASTOP_SUMMARY}})
        finally:
            run.finish()


def sweep_closing(found: Comparison, out_dir: Path) -> str:
    """What a sweep prints last: per env and configuration the mean with its interval over seeds, the test
    against the baseline, and where the report is."""
    lines = [
        f"sweep done: {len(found.runs)} job(s), {found.compared} compared"
        + "".join(f", {len(v)} {k}" for k, v in found.left_out.items() if v)
    ]
    for env, table in found.tables.items():
        groups = found.budget_groups(env)
        early = sum(r.stopped_before(budget) for budget, group in groups for runs in group.values() for r in runs)
        stopped = f", {early} run(s) stopped early before it at their last evaluation" if early else ""
        at = timesteps_listed([budget for budget, _ in groups])
        each = ", each budget at its own" if len(groups) > 1 else ""
        lines.append(f"  {env} at {at} timesteps{each}{stopped} (mean [95% CI] over seeds):")
        width = max(len(str(c)) for c in table["config"])
        for _, row in table.iterrows():
            low, high = significant(row["ci95_low"]), significant(row["ci95_high"])
            interval = f" [{low}, {high}]" if row["seeds"] > 1 else ""
            tested = isinstance(row["test"], str) and row["test"]  # the baseline's row has no test
            test = (
                f"  {significant(row['diff'], plus=True)} vs baseline, {row['test']} p={row['p_value']:.3g}"
                if tested
                else ""
            )
            lines.append(
                f"    {row['config']:<{width}}  {significant(row['final_mean'])}{interval}  n={row['seeds']}{test}"
            )
    if found.sequential:
        lines += sequential_closing(found.sequential)
    lines.append(f"  report: {out_dir / 'report.html'} (also report.md, table.csv)")
    return "\n".join(lines)


ADASTOP_SUMMARY = ("status", "n", "K", "alpha", "interims", "runs_used", "fixed_design", "decisions")


def sequential_closing(record: dict[str, Any]) -> list[str]:
    """The closing block's lines of a sweep that chose its seeds (AdaStop's ``comparison/adastop.json``)."""
    lines = [
        f"  AdaStop ({record.get('status')}): {record.get('interims')} interim(s), {record.get('runs_used')} runs "
        f"(the fixed design: {record.get('fixed_design')}); family-wise error alpha={record.get('alpha')}:"
    ]
    for entry in record.get("decisions") or []:
        when = f" at interim {int(entry['interim']) + 1}" if isinstance(entry.get("interim"), int) else ""
        lines.append(f"    {entry.get('a')} vs {entry.get('b')}: {entry.get('decision')}{when}")
    for label, lacks in (record.get("missing") or {}).items():
        lines.append(f"    {label} lacks data: {len(lacks)} run(s) without a score")
    return lines
