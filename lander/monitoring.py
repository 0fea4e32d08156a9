"""Training-loop instrumentation: throughput and resources, and a guard against NaN/inf parameters."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback

from lander.callbacks import Every, Sink
from lander.csvlog import CsvLog

log = logging.getLogger(__name__)


class ResourceMonitor(BaseCallback):
    """Every ``freq`` env steps: steps/s, episodes/min, resident memory and CPU use of this process.

    Written to ``metrics/resources.csv`` and the sinks as ``time/steps_per_second``,
    ``time/episodes_per_minute``, ``system/rss_mb``, ``system/peak_rss_mb`` and ``system/cpu_percent``
    (100 = one core busy).

    :param freq: env steps between samples
    :param path: the CSV file
    :param episodes: the number of training episodes finished so far (:class:`EpisodeLogger` counts them)
    :param sinks: more receivers (W&B)
    """

    COLUMNS = (
        "timesteps",
        "steps_per_second",
        "episodes_per_minute",
        "rss_mb",
        "peak_rss_mb",
        "cpu_percent",
        "wall_time",
    )

    def __init__(self, freq: int, path: Path, episodes: Callable[[], int], sinks: list[Sink] | None = None) -> None:
        super().__init__()
        self.freq, self.path, self.episodes, self.sinks = freq, path, episodes, sinks or []
        self.peak_rss_mb = 0.0
        self._process = psutil.Process()
        self._csv: CsvLog | None = None
        self._last = (0.0, 0, 0, 0.0)  # wall time, timesteps, episodes, CPU seconds
        self._start = 0.0
        self.every = Every(freq)

    def _cpu_seconds(self) -> float:
        times = self._process.cpu_times()
        return times.user + times.system

    def _on_training_start(self) -> None:
        self._csv = CsvLog(self.path, self.COLUMNS)
        self._start = time.perf_counter()
        self._last = (self._start, self.model.num_timesteps, self.episodes(), self._cpu_seconds())
        self.every.start(self.model.num_timesteps)

    def _on_step(self) -> bool:
        if self.every(self.num_timesteps):
            self.sample()
        return True

    def sample(self) -> dict[str, float]:
        """Record one sample now; return it."""
        now, cpu, episodes_now = time.perf_counter(), self._cpu_seconds(), self.episodes()
        then, steps, episodes, cpu_then = self._last
        elapsed = max(now - then, 1e-9)
        rss_mb = self._process.memory_info().rss / 2**20
        self.peak_rss_mb = max(self.peak_rss_mb, rss_mb)
        row = {
            "timesteps": self.num_timesteps,
            "steps_per_second": round((self.num_timesteps - steps) / elapsed, 1),
            "episodes_per_minute": round((episodes_now - episodes) * 60 / elapsed, 2),
            "rss_mb": round(rss_mb, 1),
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "cpu_percent": round(100 * (cpu - cpu_then) / elapsed, 1),
            "wall_time": round(now - self._start, 3),
        }
        self._last = (now, self.num_timesteps, episodes_now, cpu)
        assert self._csv is not None
        self._csv.write(row)
        metrics = {
            "time/steps_per_second": row["steps_per_second"],
            "time/episodes_per_minute": row["episodes_per_minute"],
            "system/rss_mb": row["rss_mb"],
            "system/peak_rss_mb": row["peak_rss_mb"],
            "system/cpu_percent": row["cpu_percent"],
        }
        for sink in self.sinks:
            sink(metrics, self.num_timesteps)
        return row

    def _on_training_end(self) -> None:
        if self._csv:
            self._csv.close()


def nonfinite_parameters(model: BaseAlgorithm) -> list[str]:
    """Names of the policy parameters that hold a NaN or inf."""
    return [name for name, param in model.policy.named_parameters() if not torch.isfinite(param).all()]


def check_finite(model: BaseAlgorithm, cause: str = "") -> None:
    """Raise :class:`FloatingPointError` naming the policy parameters that hold a NaN or inf, if any."""
    broken = nonfinite_parameters(model)
    if broken:
        raise FloatingPointError(
            f"NaN or inf in policy parameters {', '.join(broken[:3])} at {model.num_timesteps} "
            f"timesteps{cause}; the checkpoints written before are the last good ones"
        )


class NonFiniteGuard(BaseCallback):
    """Stops the run with :class:`FloatingPointError` once a policy parameter is NaN or inf.

    SB3 updates the parameters only between rollouts (off-policy "rollouts" are ``train_freq`` steps),
    so they are checked at the start of every rollout, before any checkpoint of that rollout start.
    """

    def _on_rollout_start(self) -> None:
        check_finite(self.model)

    def _on_step(self) -> bool:
        return True
