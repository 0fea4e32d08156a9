"""``hydra/launcher=submitit_local`` (and SLURM's, by the same interface): Hydra's submitit launcher, quiet under
Ctrl-C, each job stopping with a checkpoint and the sweep saying how to continue."""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from hydra.core.utils import JobReturn
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher as HydraSubmititLocalLauncher

from lander.execution.jobs import hold_signals, interrupted_since, stopped
from lander.process.signals import handling


class SubmititLocalLauncher(HydraSubmititLocalLauncher):  # type: ignore[misc]  # an untyped Hydra plugin
    """Hydra's submitit launcher on this machine (``hydra/launcher=submitit_local``:
    ``lander/conf/hydra/launcher/submitit_local.yaml``, the same keys), whose processes other than the jobs' own
    ignore SIGINT/SIGTERM to the process group (Ctrl-C): each job stops with a checkpoint, then the sweep says how
    to continue. By default submitit's controller of each job ends with a traceback and stops its job again."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None
        sweep_dir, started = Path(str(self.config.hydra.sweep.dir)), time.time()
        # inherited by submitit's controllers and their tasks; the tasks handle signals themselves (run.py)
        with handling(signal.SIG_IGN):
            try:
                returns = super().launch(job_overrides, initial_job_idx)
            except Exception:  # submitit: a job without a result (stopped, or killed)
                if (signum := interrupted_since(sweep_dir, started)) is None:
                    raise
                stopped(signum, sweep_dir)
        if (signum := interrupted_since(sweep_dir, started)) is not None:
            stopped(signum, sweep_dir)
        return cast(Sequence[JobReturn], returns)

    def __call__(self, *args: Any, **kwargs: Any) -> JobReturn:  # in the job's task process
        hold_signals()  # a stopped job returns; the sweep says how to continue
        return cast(JobReturn, super().__call__(*args, **kwargs))
