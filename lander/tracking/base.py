"""Where a run's metrics go besides its CSV files: the :class:`Tracker` interface and the trackers a config names.

``conf/logger/<name>.yaml`` puts one node per tracker under ``logger``, each built by its ``_target_`` with the
node's other keys as arguments (as the lightning-hydra-template builds its loggers)::

    logger:
      wandb:
        _target_: lander.tracking.wandb_tracker.WandbTracker
        mode: offline

``logger=none`` names none. A node without ``_target_`` (a preset's ``logger.wandb.project`` under ``logger=none``)
builds nothing. A tracker of your own is a class implementing :class:`Tracker`, named in your
``./conf/logger/<name>.yaml`` (docs/reports-and-tracking.md).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from lander.config.keys import check_keys, model_parameters
from lander.config.schema import tracker_nodes
from lander.errors import ConfigError
from lander.storage.rundir import RunPaths, RunSummary


@dataclass
class TrackedRun:
    """What a tracker is told of the run it starts for.

    :param cfg: the run's composed config (W&B records it)
    :param paths: the run directory's files
    :param summary: the run's summary; a tracker may keep its own id there (``wandb_run_id``) and ``save`` it
    :param name: the run's name (``run_name``, or ``{algo}_{env}_gamma-{gamma}_seed-{seed}``)
    :param group: the sweep's group, None for a single run
    :param start_step: the env step training starts from: 0, or a resumed run's checkpoint step
    """

    cfg: DictConfig
    paths: RunPaths
    summary: RunSummary
    name: str
    group: str | None
    start_step: int


class Tracker(ABC):
    """A place a run's metrics go besides its CSV files.

    lander calls :meth:`start` once the run's first files exist (before training; a resumed run from its
    checkpoint's step), :meth:`log` with every metric row it writes (``train/``, ``eval/``, ``time/`` keys) and every
    SB3 record, :meth:`log_files` once the run has completed, and :meth:`finish` always, last.
    """

    #: False for a tracker that holds what it is given in memory for a while (W&B's writer): a ``kill -9`` loses
    #: that, so a run resumed after one logs again what its CSV files hold since its trackers were last finished
    #: (:func:`lander.training.resume.log_again`). True for one that writes each row as it comes (TensorBoard).
    durable: bool = True

    @abstractmethod
    def start(self, run: TrackedRun) -> None:
        """Open the tracker's record of ``run`` (a resumed run's: continue it)."""

    @abstractmethod
    def log(self, metrics: dict[str, Any], step: int) -> None:
        """Record flat ``{"prefix/key": value}`` metrics at env step ``step``."""

    def log_files(self, paths: RunPaths, summary: RunSummary) -> None:  # noqa: B027  # optional: most keep none
        """Record the completed run's files (plot, video, report, model) and its summary; nothing by default."""

    @abstractmethod
    def finish(self, exit_code: int) -> None:
        """Close the record: 0 for a completed run, else the process's exit code."""


def make_trackers(cfg: DictConfig) -> dict[str, Tracker]:
    """The config's trackers, built (not started), by their key under ``logger``.

    :raises ConfigError: a key the tracker's class does not take, or a class that is not a :class:`Tracker`
    """
    trackers = {}
    for key, node in tracker_nodes(cfg).items():
        check_keys(f"logger.{key}", node, model_parameters(str(node._target_)))
        tracker = instantiate(OmegaConf.to_container(node, resolve=True), _convert_="all")
        if not isinstance(tracker, Tracker):
            raise ConfigError(f"logger.{key}._target_={node._target_} is not a {Tracker.__module__}.Tracker")
        trackers[key] = tracker
    return trackers


def run_name(cfg: DictConfig, gamma: float) -> str:
    """The run's name: ``run_name`` if set, else ``{algo}_{env}_gamma-{gamma}_seed-{seed}``."""
    name = OmegaConf.select(cfg, "run_name", default=None)  # (absent from a config saved by an older lander)
    if name:
        return str(name)
    return f"{cfg.algo.name}_{cfg.env.name}_gamma-{gamma:g}_seed-{cfg.seed}"


def real_numbers(values: dict[str, Any]) -> dict[str, int | float]:
    """The values that are real numbers, numpy scalars included (booleans left out), as Python ints and floats."""
    return {
        k: int(v) if isinstance(v, numbers.Integral) else float(v)
        for k, v in values.items()
        if isinstance(v, numbers.Real) and not isinstance(v, bool)
    }
