"""Entry point: ``python -m lander.run algo=ppo seed=0`` (any Hydra overrides, ``--multirun`` for sweeps)."""

from __future__ import annotations

from lander.process.signals import exit_on_signals

if __name__ == "__main__":
    exit_on_signals()  # from the first line on: a background process would ignore SIGINT until train() starts

import logging
import sys
from functools import partial
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from lander.config.checks import checked
from lander.config.schema import register_configs
from lander.config.trust import allowed_prefixes, check_trusted
from lander.errors import ConfigError, RunFileError
from lander.execution.jobs import run_sweep_job
from lander.process.signals import Interrupted
from lander.storage.lock import RunLock
from lander.storage.rundir import RunPaths, remove_unstarted
from lander.sweeps.rerun import continue_job, plan_job

log = logging.getLogger("lander")
register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    """Train one run in Hydra's output directory; return the final eval mean (for Hydra sweepers).

    In a sweep, each job runs in a process of its own, whatever the launcher
    (:func:`lander.execution.jobs.run_sweep_job`): one that dies takes no other job with it.
    """
    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return run_job(cfg, run_dir, list(hydra_cfg.overrides.task), None)
    from lander.sweeps.callback import sweep_group  # pandas, matplotlib, plotly: only a sweep needs them (~1 s)

    if hydra_cfg.launcher.get("n_jobs", 1) != 1 or cfg.get("seeds_per_process", 1) > 1:
        cfg.progress_bar = False  # parallel jobs' progress bars would overwrite each other on one console
    job = partial(run_job, cfg, run_dir, list(hydra_cfg.overrides.task), sweep_group(hydra_cfg.sweep.dir))
    return run_sweep_job(job, hydra_cfg.launcher, RunPaths(run_dir), Path(hydra_cfg.sweep.dir))


def run_job(cfg: DictConfig, run_dir: Path, overrides: list[str], group: str | None) -> float | None:
    """One run (or job of a sweep, ``group`` being the sweep's): checked, locked, trained or resumed.

    Errors end it with one line and exit 2 (configuration) or 1 (an unusable file, a failure); a sweep's
    job returns None instead, so the other jobs go on and the sweep's end reports it.
    """
    sweep, fresh = group is not None, cfg.resume is None
    try:
        if cfg.resume is not None:  # the run's own saved config, in its own directory
            from lander.training.resume import resume_config  # torch and SB3 (~2 s): after the cheap checks

            run_dir = Path(cfg.resume)
            budget = [int(o.split("=", 1)[1]) for o in overrides if o.startswith("total_timesteps=")]
            cfg = resume_config(run_dir, budget[-1] if budget else None)
            for limit in [o.split("=", 1)[1] for o in overrides if o.startswith("memory_limit_mb=")][-1:]:
                cfg.memory_limit_mb = None if limit == "null" else float(limit)  # the run's limit, this time
        paths = RunPaths(run_dir)
        if (prefixes := allowed_prefixes()) is not None:  # started by the service: lander's own targets only
            check_trusted(cfg, prefixes, where=str(paths.config) if cfg.resume else "")
        job = checked(cfg)  # before importing torch and SB3, so bad input fails in a second; train takes it as is
        if cfg.resume is None and plan_job(paths) == "skip":  # a completed job of a re-run sweep:
            return continue_job(cfg, paths).final_eval_mean  # type: ignore[union-attr]  # untouched
        lock = RunLock(run_dir).acquire()  # one writer per run directory, until this process ends
        try:
            done = continue_job(cfg, paths)
            if done is not None:
                return done.final_eval_mean
            from lander.training.finish import run_closing  # torch and SB3 (~2 s): after the cheap checks
            from lander.training.train import train

            summary = train(job, run_dir, group=group, overrides=overrides)
            log.info("%s", run_closing(summary, paths))
            return summary.final_eval_mean
        finally:
            lock.release()
    except (ConfigError, RunFileError) as exc:
        refused(exc, run_dir, sweep, fresh)
        return None
    except Interrupted as exc:  # what was saved and how to continue (lander.training.finish.record_stop), last
        if getattr(exc, "report", None):
            log.warning("%s", exc.report)  # type: ignore[attr-defined]
        sys.exit(exc.exit_code)
    except Exception:
        if sweep:  # the other jobs go on; the sweep's end reports this one as failed
            log.exception("job failed")  # in this job's run.log, also when it failed before training
            return None
        raise


def refused(exc: ConfigError | RunFileError, run_dir: Path, sweep: bool, fresh: bool) -> None:
    """A run that cannot go on, in one line: a sweep's job returns (the other jobs go on; the sweep's end lists it
    as failed), a run exits 2 (configuration) or 1 (a file). A new run refused before it trained leaves no
    directory (:func:`lander.storage.rundir.remove_unstarted`)."""
    log.error("%s: %s", "invalid configuration" if isinstance(exc, ConfigError) else "cannot continue", exc)
    if sweep:
        return None
    if isinstance(exc, ConfigError) and fresh and remove_unstarted(run_dir):
        log.error("nothing was trained: %s removed", run_dir)
    sys.exit(2 if isinstance(exc, ConfigError) else 1)


if __name__ == "__main__":
    from lander.config.precheck import check_main_command  # Hydra's own imports of this module need none of it

    try:
        sys.argv[1:] = check_main_command(sys.argv[1:])  # before Hydra creates the run directory
    except ConfigError as error:
        print(f"lander: invalid configuration: {error}", file=sys.stderr)
        sys.exit(2)
    main()  # a sweep with a job that did not complete exits 1 from its end (lander.sweeps.callback)
