"""lander's Hydra launchers, where Hydra looks for plugins (``hydra_plugins``): ``hydra/launcher=parallel``
(``lander/conf/hydra/launcher/parallel.yaml``) chooses :class:`lander.execution.parallel.ParallelLauncher`, and
``hydra/launcher=joblib`` (``lander/conf/hydra/launcher/joblib.yaml``) Hydra's joblib launcher with lander's signal
handling, :class:`lander.execution.joblib.JoblibLauncher`; ``hydra/launcher=submitit_local`` likewise
:class:`lander.execution.submitit.SubmititLocalLauncher`; ``hydra/launcher=ray`` each job a Ray task,
:class:`lander.execution.ray.RayLauncher`. ``hydra/sweeper=checked`` (the default) is Hydra's basic sweeper
trusting lander's precheck, :class:`lander.sweeps.sweeper.CheckedBasicSweeper`; ``hydra/sweeper=adastop`` a sweep
that decides how many seeds it needs, :class:`lander.sweeps.adastop.AdaStopSweeper`."""

from lander.execution.joblib import JoblibLauncher as _JoblibLauncher
from lander.execution.parallel import ParallelLauncher as _ParallelLauncher
from lander.execution.ray import RayLauncher as _RayLauncher
from lander.execution.submitit import SubmititLocalLauncher as _SubmititLocalLauncher
from lander.sweeps.adastop import AdaStopSweeper as _AdaStopSweeper
from lander.sweeps.sweeper import CheckedBasicSweeper as _CheckedBasicSweeper


class ParallelLauncher(_ParallelLauncher):
    """A sweep's jobs in parallel on this machine, each in a process of its own (:mod:`lander.execution.parallel`)."""


class JoblibLauncher(_JoblibLauncher):
    """Hydra's joblib launcher whose pool outlives Ctrl-C (:class:`lander.execution.joblib.JoblibLauncher`)."""


class SubmititLocalLauncher(_SubmititLocalLauncher):
    """Hydra's submitit launcher on this machine, quiet under Ctrl-C
    (:class:`lander.execution.submitit.SubmititLocalLauncher`)."""


class RayLauncher(_RayLauncher):
    """A sweep's jobs as Ray tasks, locally or on a cluster (:class:`lander.execution.ray.RayLauncher`)."""


class CheckedBasicSweeper(_CheckedBasicSweeper):
    """Hydra's basic sweeper, trusting lander's precheck of every job (:mod:`lander.sweeps.sweeper`)."""


class AdaStopSweeper(_AdaStopSweeper):
    """A sweep that decides how many seeds it needs: AdaStop's sequential test (:mod:`lander.sweeps.adastop`)."""
