"""Entry point: ``python -m lander.run algo=ppo seed=0`` (any Hydra overrides, ``--multirun`` for sweeps)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from lander.config import ConfigError, check_logger, check_override_keys, validate
from lander.interrupt import Interrupted
from lander.rerun import continue_job
from lander.rundir import RunPaths
from lander.schema import register_configs

log = logging.getLogger("lander")
register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    """Train one run in Hydra's output directory; return the final eval mean (for Hydra sweepers)."""
    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    run_dir = Path(hydra_cfg.runtime.output_dir)
    if multirun and hydra_cfg.launcher.get("n_jobs", 1) != 1:
        cfg.progress_bar = False  # parallel jobs' progress bars would overwrite each other on one console
    try:
        if cfg.resume is not None:  # the run's own saved config, in its own directory
            from lander.resume import resume_config

            run_dir = Path(cfg.resume)
            cfg = resume_config(run_dir)
        validate(cfg)  # before importing torch and SB3, so bad input fails in a second
        check_logger(cfg)
        done = continue_job(cfg, RunPaths(run_dir))
        if done is not None:
            return done.final_eval_mean
        from lander.sweep import sweep_group
        from lander.train import train

        group = sweep_group(hydra_cfg.sweep.dir) if multirun else None
        summary = train(cfg, run_dir, group=group, overrides=list(hydra_cfg.overrides.task))
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        if multirun:  # the other jobs go on; the sweep's end lists this one as failed
            return None
        sys.exit(2)
    except Interrupted as exc:
        log.error("interrupted by %s; the run directory keeps what was recorded", exc)
        sys.exit(exc.exit_code)
    except Exception:
        if multirun:  # the other jobs go on; the sweep's end reports this one as failed
            log.exception("job failed")  # in this job's run.log, also when it failed before training
            return None
        raise
    return summary.final_eval_mean


def resume_arguments(argv: list[str]) -> list[str]:
    """For ``resume=<run dir>``: Hydra's output goes to that directory, and nothing else may be overridden."""
    resume = [a for a in argv if a.startswith("resume=")]
    if not resume:
        return argv
    run_dir = Path(resume[-1].split("=", 1)[1])
    if not RunPaths(run_dir).is_run():
        raise ConfigError(f"resume={str(run_dir)!r} is not a lander run directory (no .hydra/config.yaml)")
    others = [a for a in argv if not a.startswith(("resume=", "hydra."))]
    if others:
        raise ConfigError(f"resume= continues a run with its own saved config; remove {' '.join(others)}")
    return [*argv, f"hydra.run.dir={run_dir.resolve()}", "hydra.output_subdir=null"]


if __name__ == "__main__":
    try:
        sys.argv[1:] = [a[1:] if a.startswith(("+experiment=", "+hparams_search=")) else a for a in sys.argv[1:]]
        check_override_keys(sys.argv[1:])
        sys.argv[1:] = resume_arguments(sys.argv[1:])
    except ConfigError as error:
        print(f"lander: invalid configuration: {error}", file=sys.stderr)
        sys.exit(2)
    main()
    from lander.sweep import FAILED_JOBS

    if FAILED_JOBS:
        print(
            f"lander: {len(FAILED_JOBS)} job(s) of the sweep did not complete: {'; '.join(FAILED_JOBS)}",
            file=sys.stderr,
        )
        sys.exit(1)
