"""lander's Hydra launcher, where Hydra looks for plugins (``hydra_plugins``); ``hydra/launcher=parallel`` chooses
it (``lander/conf/hydra/launcher/parallel.yaml``). It is :class:`lander.sweeps.launcher.ParallelLauncher`."""

from lander.sweeps.launcher import ParallelLauncher as _ParallelLauncher


class ParallelLauncher(_ParallelLauncher):
    """A sweep's jobs in parallel on this machine, each in a process of its own (:mod:`lander.sweeps.launcher`)."""
