"""``hydra/launcher=ray``: each job of a sweep a Ray task, on this machine or on a cluster."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, run_job, setup_globals
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from lander.execution.isolate import record_lost
from lander.execution.jobs import HydraSetup, compose, job_return
from lander.storage.rundir import RunPaths

log = logging.getLogger("lander")


class RayLauncher(HydraSetup):
    """``hydra/launcher=ray`` (``lander/conf/hydra/launcher/ray.yaml``): each job a Ray task, on this machine (Ray
    started for the sweep) or on an existing Ray cluster (``hydra.launcher.ray.init.address``), with the keys of
    Hydra's Ray launcher (``ray.init``: ``ray.init``'s arguments; ``ray.remote``: each task's options).

    Hydra's own plugin (``hydra-ray-launcher``) requires ``cloudpickle<3`` while joblib, which the default install
    has, requires ``>=3``: the two cannot be installed together, so lander drives Ray's API itself (as that plugin's
    local mode does). A job whose Ray worker dies is recorded ``failed`` and the others go on; a re-run of the
    sweep resumes its jobs as under any launcher. On a cluster, ``hydra.sweep.dir`` must be on a filesystem every
    node shares: each job writes its run directory where it runs, and the comparison reads them all.

    :param ray: ``{"init": {...}, "remote": {...}}``
    """

    forks_its_jobs = True  # each job is a Ray task: a worker process of Ray's

    def __init__(self, ray: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.ray = ray or {}

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray  # optional (lander[ray]); Hydra imports every launcher plugin in every run

        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        init, remote = dict(self.ray.get("init") or {}), dict(self.ray.get("remote") or {})
        if not ray.is_initialized():
            ray.init(**{key: value for key, value in init.items() if value is not None})
        log.info("launching %d job(s) on Ray (%s)", len(job_overrides), init.get("address") or "this machine")
        task = ray.remote(**remote)(run_ray_job) if remote else ray.remote(run_ray_job)
        state = Singleton.get_state()
        started = []
        for num, overrides in enumerate(job_overrides, initial_job_idx):
            job_id = f"{self.config.hydra.job.name}_{num}"
            config, directory = compose(self.hydra_context, self.config, num, list(overrides), job_id)
            future = task.remote(self.hydra_context, config, self.task_function, state)
            started.append((list(overrides), config, directory, future))
        returns = []
        for overrides, config, directory, future in started:
            try:
                returns.append(ray.get(future))
            except ray.exceptions.RayError as exc:  # its worker died, or the task could not run
                why = str(exc).splitlines()[0]
                record_lost(RunPaths(directory), f"killed by Ray: its task did not end ({why})", f"its Ray task: {why}")
                returns.append(job_return(overrides, config, directory))
        return returns


def run_ray_job(hydra_context: HydraContext, config: DictConfig, task: TaskFunction, state: Any) -> JobReturn:
    """One job in a Ray worker: Hydra's globals as the sweep's process had them, then the job as Hydra's basic
    launcher runs it."""
    setup_globals()
    Singleton.set_state(state)
    HydraConfig.instance().set_config(config)
    return run_job(
        hydra_context=hydra_context,
        task_function=task,
        config=config,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )
