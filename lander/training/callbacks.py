"""lander's SB3 callbacks, in one place as SB3 keeps its own: a periodic trigger, the per-episode training log,
throughput and resource monitoring with a guard against NaN/inf parameters, stop rules, periodic evaluation
(the learning curve, the best model), checkpoints that survive a kill, and the list a training run uses (lander's in
the order they must run, then the user's ``callbacks``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import psutil
import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3 import A2C
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from lander.envs import make_env
from lander.errors import ConfigError, root_cause
from lander.evaluation.policy import EvalResult, evaluate
from lander.numbers import significant
from lander.process.signals import LimitReached, hold_while_paused, raise_pending, stop_at_next_step, training_clock
from lander.storage.csvlog import CsvLog, csv_rows
from lander.storage.normalization import save_stats, stats_path, transform
from lander.storage.replay import save_buffer
from lander.storage.rundir import RunPaths, atomic_write, find_checkpoints
from lander.training.budget import rollout_steps

log = logging.getLogger(__name__)

Sink = Callable[[dict[str, Any], int], None]  # (metrics, env step): a tracker's log (lander.tracking.base.Tracker)


class Every:
    """A periodic trigger: true once each time the step count reaches the next multiple of ``freq``.

    Multiples, not intervals, so a resumed run evaluates and checkpoints at the steps an uninterrupted one would.

    :param freq: env steps between triggers; 0: never
    """

    def __init__(self, freq: int) -> None:
        self.freq = freq
        self.next = freq

    def start(self, steps: int) -> None:
        """Count from ``steps`` (0, or a resumed run's step count)."""
        self.next = (steps // self.freq + 1) * self.freq if self.freq else 0

    def __call__(self, steps: int) -> bool:
        if not self.freq or steps < self.next:
            return False
        self.start(steps)
        return True


class EpisodeLogger(BaseCallback):
    """Writes every finished training episode (from SB3's ``Monitor`` info) to ``train_episodes.csv``.

    :param path: the CSV file
    :param sinks: more receivers of ``train/episode_return``, ``train/episode_length`` and ``train/episodes``
    """

    COLUMNS = ("timesteps", "episode", "return", "length", "wall_time")

    @staticmethod
    def tracked(row: Mapping[str, Any]) -> dict[str, float]:
        """What the trackers get of a ``train_episodes.csv`` row (as written, or read back as text)."""
        return {
            "train/episode_return": float(row["return"]),
            "train/episode_length": int(row["length"]),
            "train/episodes": int(row["episode"]),
        }

    def __init__(self, path: Path, sinks: list[Sink] | None = None) -> None:
        super().__init__()
        self.path, self.sinks = path, sinks or []
        self.episodes = 0
        self._csv: CsvLog | None = None
        self._start = 0.0

    def _on_training_start(self) -> None:
        self.episodes = len(csv_rows(self.path))  # a resumed run numbers its episodes on
        self._csv = CsvLog(self.path, self.COLUMNS)
        self._start = training_clock()

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            episode = info.get("episode")
            if episode is None:
                continue
            self.episodes += 1
            row = {
                "timesteps": self.num_timesteps,
                "episode": self.episodes,
                "return": float(episode["r"]),
                "length": int(episode["l"]),
                "wall_time": round(training_clock() - self._start, 3),
            }
            assert self._csv is not None
            self._csv.write(row)
            for sink in self.sinks:
                sink(
                    self.tracked(row),
                    self.num_timesteps,
                )
        return True

    def _on_training_end(self) -> None:
        if self._csv:
            self._csv.close()


def run_rss_mb(process: psutil.Process | None = None) -> float:
    """Resident memory of the run's processes (this one and its children: subprocess envs, the video's encoder),
    in MB."""
    process = process or psutil.Process()
    total = process.memory_info().rss
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # it ended meanwhile
            total += child.memory_info().rss
    return float(total / 2**20)


class GpuProbe:
    """The CUDA device the model is on: its name, its memory as torch counts it, its utilisation where NVML (the
    optional ``nvidia-ml-py``) answers.

    :param device: a CUDA device
    :param utilisation: ask NVML for the device's utilisation too
    """

    def __init__(self, device: Any, utilisation: bool = True) -> None:
        self.index = device.index if device.index is not None else torch.cuda.current_device()
        properties = torch.cuda.get_device_properties(self.index)
        self.name = str(properties.name)
        self.nvml = nvml_handle(properties) if utilisation else None
        self.columns: tuple[str, ...] = ("gpu_memory_allocated_mb", "gpu_memory_reserved_mb", "gpu_peak_memory_mb")
        self.columns += ("gpu_utilization_percent",) if self.nvml is not None else ()

    def sample(self) -> dict[str, float]:
        """This sample's columns (:attr:`columns`)."""
        row = {
            "gpu_memory_allocated_mb": round(torch.cuda.memory_allocated(self.index) / 2**20, 1),
            "gpu_memory_reserved_mb": round(torch.cuda.memory_reserved(self.index) / 2**20, 1),
            "gpu_peak_memory_mb": round(torch.cuda.max_memory_allocated(self.index) / 2**20, 1),
        }
        if self.nvml is not None:
            import pynvml  # optional (nvidia-ml-py): only where a GPU is monitored

            row["gpu_utilization_percent"] = float(pynvml.nvmlDeviceGetUtilizationRates(self.nvml).gpu)
        return row


def nvml_handle(properties: Any) -> Any:
    """NVML's handle of the device torch describes (found by its PCI address, whatever ``CUDA_VISIBLE_DEVICES``
    renumbered), or None without ``nvidia-ml-py`` or a driver that answers."""
    try:
        import pynvml  # optional (nvidia-ml-py), as above

        pynvml.nvmlInit()
        address = f"{properties.pci_domain_id:08X}:{properties.pci_bus_id:02X}:{properties.pci_device_id:02X}.0"
        return pynvml.nvmlDeviceGetHandleByPciBusId(address)
    except Exception as exc:  # not installed, no driver, an older torch without the PCI address: no utilisation
        log.info("GPU utilisation not monitored (NVML: %s)", exc)
        return None


class ResourceMonitor(BaseCallback):
    """Every ``freq`` env steps: steps/s, episodes/min, resident memory of the run's processes (this one and its
    children) and CPU use of this process; past ``memory_limit_mb``, the run stops as a Ctrl-C would stop it.

    Written to ``metrics/resources.csv`` and the sinks as ``time/steps_per_second``,
    ``time/episodes_per_minute``, ``system/rss_mb``, ``system/peak_rss_mb`` and ``system/cpu_percent``
    (100 = one core busy). With the model on a CUDA device, also its memory as torch counts it (allocated,
    reserved, peak allocated: ``system/gpu_*_mb``) and, where NVML answers (the optional ``nvidia-ml-py``), the
    device's utilisation (``system/gpu_utilization_percent``); on the CPU these columns are absent.

    :param freq: env steps between samples
    :param path: the CSV file
    :param episodes: the number of training episodes finished so far (:class:`EpisodeLogger` counts them)
    :param sinks: more receivers (W&B)
    :param memory_limit_mb: stop the run (checkpoint, ``interrupted``, resumable) once ``rss_mb`` exceeds it
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
    TRACKED: ClassVar[dict[str, str]] = {  # resources.csv column: its key in the trackers
        "steps_per_second": "time/steps_per_second",
        "episodes_per_minute": "time/episodes_per_minute",
        "rss_mb": "system/rss_mb",
        "peak_rss_mb": "system/peak_rss_mb",
        "cpu_percent": "system/cpu_percent",
        "gpu_memory_allocated_mb": "system/gpu_memory_allocated_mb",
        "gpu_memory_reserved_mb": "system/gpu_memory_reserved_mb",
        "gpu_peak_memory_mb": "system/gpu_peak_memory_mb",
        "gpu_utilization_percent": "system/gpu_utilization_percent",
    }

    @classmethod
    def tracked(cls, row: Mapping[str, Any]) -> dict[str, float]:
        """What the trackers get of a ``resources.csv`` row (as written, or read back as text)."""
        return {key: float(row[c]) for c, key in cls.TRACKED.items() if row.get(c) not in (None, "")}

    def __init__(
        self,
        freq: int,
        path: Path,
        episodes: Callable[[], int],
        sinks: list[Sink] | None = None,
        memory_limit_mb: float | None = None,
    ) -> None:
        super().__init__()
        self.freq, self.path, self.episodes, self.sinks = freq, path, episodes, sinks or []
        self.memory_limit_mb = memory_limit_mb
        self.peak_rss_mb = 0.0
        self._process = psutil.Process()
        self._csv: CsvLog | None = None
        self._last = (0.0, 0, 0, 0.0)  # wall time, timesteps, episodes, CPU seconds
        self._start = 0.0
        self.every = Every(freq)
        self.gpu: GpuProbe | None = None

    def _cpu_seconds(self) -> float:
        times = self._process.cpu_times()
        return float(times.user + times.system)

    def _on_training_start(self) -> None:
        self.gpu = GpuProbe(self.model.device) if self.model.device.type == "cuda" else None
        self._csv = CsvLog(self.path, self.COLUMNS[:-1] + (self.gpu.columns if self.gpu else ()) + self.COLUMNS[-1:])
        self._start = training_clock()
        self._last = (self._start, self.model.num_timesteps, self.episodes(), self._cpu_seconds())
        self.every.start(self.model.num_timesteps)

    def _on_step(self) -> bool:
        if self.every(self.num_timesteps):
            rss_mb = self.sample()["rss_mb"]
            if self.memory_limit_mb is not None and rss_mb > self.memory_limit_mb:
                reason = f"memory limit {self.memory_limit_mb:g} MB reached at {rss_mb:.0f} MB"
                stop_at_next_step(LimitReached(reason))  # by SignalCheck, after the other callbacks saw the step
        return True

    def sample(self) -> dict[str, float]:
        """Record one sample now; return it."""
        now, cpu, episodes_now = training_clock(), self._cpu_seconds(), self.episodes()
        then, steps, episodes, cpu_then = self._last
        elapsed = max(now - then, 1e-9)
        rss_mb = run_rss_mb(self._process)
        self.peak_rss_mb = max(self.peak_rss_mb, rss_mb)
        row = {
            "timesteps": self.num_timesteps,
            "steps_per_second": round((self.num_timesteps - steps) / elapsed, 1),
            "episodes_per_minute": round((episodes_now - episodes) * 60 / elapsed, 2),
            "rss_mb": round(rss_mb, 1),
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "cpu_percent": round(100 * (cpu - cpu_then) / elapsed, 1),
            **(self.gpu.sample() if self.gpu else {}),
            "wall_time": round(now - self._start, 3),
        }
        self._last = (now, self.num_timesteps, episodes_now, cpu)
        assert self._csv is not None
        self._csv.write(row)
        for sink in self.sinks:
            sink(self.tracked(row), self.num_timesteps)
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

    def __init__(self) -> None:
        super().__init__()
        self.params: list[torch.Tensor] = []

    def _on_training_start(self) -> None:
        # the same tensors all training: walked once. The batched engine checks every seed's parameters after each
        # of its updates itself (SeedStack.finish), so that its models have nothing to check here
        checked = bool(getattr(self.model, "checks_finite_updates", False))
        self.params = [] if checked else list(self.model.policy.parameters())

    def _on_rollout_start(self) -> None:
        # one fused norm over every parameter is finite if they all are (A2C checks every 5 steps); a norm that is
        # not (a NaN, an inf, or a sum of squares that overflows) is looked into parameter by parameter. A policy
        # without torch parameters (Q-learning's table) has nothing to check
        if self.params and not bool(torch.isfinite(torch.stack(torch._foreach_norm(self.params))).all()):
            check_finite(self.model)

    def _on_step(self) -> bool:
        return True


class A2CLoss(BaseCallback):
    """``train/loss`` for SB3's A2C, which records the terms of the loss it minimises but not the loss: ``policy_loss
    + ent_coef * entropy_loss + vf_coef * value_loss`` of the last update (``A2C.train``'s formula, from its float32
    terms), recorded when the next rollout starts, before SB3 writes that update's records. PPO, DQN and lander's
    own algorithms (and A2C on the batched engine) record their ``train/loss`` themselves; SAC's and TD3's actor and
    critic minimise two losses (``train/actor_loss``, ``train/critic_loss``), which SB3 records."""

    TERMS = ("train/policy_loss", "train/entropy_loss", "train/value_loss")

    def _on_rollout_start(self) -> None:
        if not isinstance(self.model, A2C) or type(self.model).train is not A2C.train:
            return  # another algorithm, or a subclass that trains (and records) its own way, as MAC
        values = self.model.logger.name_to_value
        if not all(t in values for t in self.TERMS):
            return
        policy, entropy, value = (float(values[t]) for t in self.TERMS)
        self.model.logger.record("train/loss", policy + self.model.ent_coef * entropy + self.model.vf_coef * value)

    def _on_step(self) -> bool:
        return True


class GradientNorms(BaseCallback):
    """``train/grad_norm``: the norm of each gradient step's gradient, before any clipping, as the mean over an
    update's steps (as SB3 records its losses). For each torch optimizer of the model: the policy's
    (``grad_norm``), or SAC's and TD3's actor's and critic's (``actor_grad_norm``, ``critic_grad_norm``).

    Each optimizer's parameters get one hook on their gradients (``torch.autograd.graph.register_multi_grad_hook``:
    called once the backward pass has computed them, before SB3 clips them) and one on the optimizer's step
    (``register_step_pre_hook``), which records the norm of the last backward: a backward that reaches the critic
    through the actor's loss is overwritten by the critic's own before its step. The hooks only read gradients.
    Seeds trained side by side record the same statistic from their batched update.
    """

    OPTIMIZERS: ClassVar[dict[str, str]] = {
        "optimizer": "grad_norm",
        "actor.optimizer": "actor_grad_norm",
        "critic.optimizer": "critic_grad_norm",
    }

    def __init__(self) -> None:
        super().__init__()
        self.handles: list[Any] = []

    def _on_training_start(self) -> None:
        self.remove()
        for path, name in self.OPTIMIZERS.items():
            optimizer: Any = self.model.policy
            for attribute in path.split("."):
                optimizer = getattr(optimizer, attribute, None)
            if not isinstance(optimizer, torch.optim.Optimizer):
                continue
            params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
            if params:
                self.watch(optimizer, params, f"train/{name}")

    def watch(self, optimizer: torch.optim.Optimizer, params: list[torch.Tensor], key: str) -> None:
        """Record ``key`` at each step of ``optimizer``: the norm of its ``params``' gradient from the last
        backward."""
        last: dict[str, torch.Tensor] = {}

        def computed(grads: Sequence[torch.Tensor | None]) -> None:  # one fused call for every tensor's norm
            given = [g for g in grads if g is not None]
            if given:
                last["norm"] = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(given)))

        def stepping(*_: Any) -> None:
            if "norm" in last:
                self.model.logger.record_mean(key, float(last.pop("norm")))

        self.handles.append(torch.autograd.graph.register_multi_grad_hook(params, computed, mode="all"))
        self.handles.append(optimizer.register_step_pre_hook(stepping))

    def remove(self) -> None:
        """Take the hooks off (at the end of training; before a new ``learn`` adds them again)."""
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def _on_training_end(self) -> None:
        self.remove()

    def _on_step(self) -> bool:
        return True


class StopRule(BaseCallback):
    """A callback that stops training by returning False and records why in ``stop_reason``."""

    def __init__(self) -> None:
        super().__init__()
        self.stop_reason: str | None = None

    def _stop(self, reason: str) -> bool:
        self.stop_reason = reason
        return False


class StopOnReward(StopRule):
    """Stop once an evaluation mean reaches ``threshold`` (``early_stop.reward_threshold``)."""

    def __init__(self, threshold: float) -> None:
        super().__init__()
        self.threshold = threshold

    def _on_step(self) -> bool:
        mean = self.parent.last_mean  # type: ignore[union-attr]
        if mean >= self.threshold:
            return self._stop(f"eval mean {mean:.1f} reached early_stop.reward_threshold={self.threshold:g}")
        return True


class StopOnPlateau(StopRule):
    """Stop after ``patience`` evaluations in a row without a new best mean (``early_stop.patience``); a new best
    counts only if it beats the best so far by more than ``min_improvement`` (``early_stop.min_improvement``).

    :param patience: evaluations in a row without improvement
    :param min_improvement: how much a mean must exceed the best to count (in the env's return units; 0: any)
    """

    def __init__(self, patience: int, min_improvement: float = 0.0) -> None:
        super().__init__()
        self.patience, self.min_improvement = patience, min_improvement
        self._best = float("-inf")
        self._since_best = 0

    def _init_callback(self) -> None:
        self._best, self._since_best = self.parent.best_mean, 0  # type: ignore[union-attr]  # a resumed run's too

    def _on_step(self) -> bool:
        mean = self.parent.last_mean  # type: ignore[union-attr]
        if mean > self._best + self.min_improvement or self._best == float("-inf"):
            self._best, self._since_best = mean, 0
            return True
        self._since_best += 1
        if self._since_best >= self.patience:
            by = f" (by more than {self.min_improvement:g})" if self.min_improvement else ""
            return self._stop(f"no new best eval mean{by} in {self.patience} evaluations (early_stop.patience)")
        return True


class StopOnEpisodes(StopRule):
    """Stop once ``max_episodes`` training episodes have finished (``max_episodes``, an episode budget).

    :param episodes: the number of episodes finished so far (:class:`EpisodeLogger` counts them)
    """

    def __init__(self, max_episodes: int, episodes: Callable[[], int]) -> None:
        super().__init__()
        self.max_episodes, self.episodes = max_episodes, episodes

    def _on_step(self) -> bool:
        if self.episodes() >= self.max_episodes:
            return self._stop(f"episode budget max_episodes={self.max_episodes} reached")
        return True


class StopAtTimesteps(StopRule):
    """Stop training one env step past ``timesteps`` rounded up to what the algorithm collects between updates
    (:func:`lander.training.budget.rollout_steps`: PPO's whole rollouts, ...), so the update there is done: the run
    as it stood at that step of its whole budget, whose schedules (learning rate, exploration) it keeps. ``python
    -m lander.reproduce --steps`` (and of a stopped run) adds it as a callback of the config.

    :param timesteps: the env steps to train at least (from a fresh start)
    """

    def __init__(self, timesteps: int) -> None:
        super().__init__()
        self.timesteps = self.end = int(timesteps)

    def _on_training_start(self) -> None:
        unit = rollout_steps(self.model)
        if unit is not None:
            self.end = unit[0] * math.ceil(self.timesteps / unit[0])

    def _on_step(self) -> bool:
        if self.num_timesteps > self.end:
            return self._stop(f"stopped past the update of step {self.end:,} (lander.reproduce --steps)")
        return True


class Interruption(LimitReached):
    """The stop :class:`InterruptAtTimesteps` makes: a run interrupted on purpose (``python -m lander.reproduce``)."""


class InterruptAtTimesteps(BaseCallback):
    """Interrupt the run as a signal would (a checkpoint, ``interrupted``, resumable) at the start of its rollout at
    ``timesteps`` (0: its first): ``python -m lander.reproduce`` stops a reproduction where its original was stopped,
    then resumes it, without this callback, as the original was resumed.

    :param timesteps: the step of the checkpoint to take (the original's checkpoint its resume started from: a
        rollout's start)
    """

    def __init__(self, timesteps: int) -> None:
        super().__init__()
        self.timesteps, self.armed = int(timesteps), True

    def _on_rollout_start(self) -> None:
        if self.armed and self.model.num_timesteps >= self.timesteps:
            self.armed = False
            stop_at_next_step(Interruption(f"a stop at {self.timesteps:,} timesteps, as the run reproduced"))

    def _on_step(self) -> bool:
        return True


class SignalCheck(BaseCallback):
    """Raises a SIGINT/SIGTERM received during :func:`lander.process.signals.deferred`, and waits at each step while
    the run is paused (SIGUSR1 until SIGUSR2; the run's :func:`lander.process.signals.pausing` listener says so).
    Put it last, so every other callback has seen the step.

    Most algorithms are stopped at the next env step: PPO's and A2C's rollout in progress is dropped and collected
    again after a resume. SB3's off-policy ones (DQN, SAC, TD3) and lander's Q-learning (``stops_at_rollouts``) are
    stopped at the start of their next rollout (DQN's ``train_freq`` steps later at most): mid-rollout their replay
    buffer, DQN's target-network schedule and their episode count have moved on from the rollout's start that their
    checkpoint records, and their resume would not be the run that checkpoint says."""

    def __init__(self) -> None:
        super().__init__()
        self.each_step = True

    def _on_training_start(self) -> None:
        at_rollouts = isinstance(self.model, OffPolicyAlgorithm) or getattr(self.model, "stops_at_rollouts", False)
        self.each_step = not at_rollouts

    def _on_rollout_start(self) -> None:
        if not self.each_step:  # (a step's stop comes at the step: a seed side by side has had its update handed
            raise_pending()  # back by then, before its next rollout's first action, lander.execution.lockstep)

    def _on_step(self) -> bool:
        hold_while_paused()
        if self.each_step:
            raise_pending()
        return True


class PeriodicEval(BaseCallback):
    """Evaluates the policy every ``freq`` env steps on fixed seeds; keeps the best model.

    :param freq: env steps (all training envs together) between evaluations; 0: none during training
    :param env_fn: makes one evaluation env
    :param n_episodes: episodes per evaluation; episode i uses seed ``base_seed + i``
    :param base_seed: seed of episode 0
    :param n_envs: episodes run side by side
    :param paths: the run directory (``metrics/eval.csv``, ``metrics/eval_episodes.csv``, ``best_model.zip``)
    :param threshold: "solved" return; the first timestep whose mean reaches it is kept
    :param deterministic: greedy/mean actions
    :param sinks: more receivers of the ``eval/...`` metrics
    :param final_at: the budget: from this timestep on, periodic evaluation is left to the final one, which the
        caller runs with :meth:`evaluate_now` after training (so the curve's last point is the final model's).
        When training goes on past it (whole rollouts: PPO's 16 x 1024 steps), the policy in effect at the
        budget is evaluated once too, recorded at the step that reached it, so runs of other algorithms can be
        compared at the same budget
    :param after_eval: callbacks called after every periodic evaluation (``parent`` is this one); training
        stops when one returns False

    The CSV files and eval envs stay open after training for that final evaluation; :meth:`close` them.
    """

    COLUMNS = (
        "timesteps",
        "mean",
        "std",
        "sem",
        "n",
        "median",
        "min",
        "max",
        "success_rate",
        "mean_length",
        "wall_time",
        "eval_seconds",
    )
    EPISODE_COLUMNS = ("timesteps", "seed", "return", "length")

    @classmethod
    def tracked(cls, row: Mapping[str, Any]) -> dict[str, float]:
        """What the trackers get of an ``eval.csv`` row (as written, or read back as text): ``eval/<statistic>``
        and ``time/eval_seconds``."""
        stats = [c for c in cls.COLUMNS if c not in ("timesteps", "wall_time", "eval_seconds")]
        return {f"eval/{k}": float(row[k]) for k in stats if row[k] not in (None, "")} | {
            "time/eval_seconds": float(row["eval_seconds"])
        }

    def __init__(
        self,
        freq: int,
        env_fn: Callable[[], gym.Env],
        n_episodes: int,
        base_seed: int,
        n_envs: int,
        paths: RunPaths,
        threshold: float | None,
        deterministic: bool = True,
        sinks: list[Sink] | None = None,
        final_at: int | None = None,
        after_eval: list[BaseCallback] | None = None,
    ) -> None:
        super().__init__()
        self.every, self.env_fn, self.n_episodes, self.base_seed = Every(freq), env_fn, n_episodes, base_seed
        self.n_envs, self.paths, self.threshold, self.deterministic = n_envs, paths, threshold, deterministic
        self.sinks, self.final_at, self.after_eval = sinks or [], final_at, after_eval or []
        for callback in self.after_eval:
            callback.parent = self
        self.best_mean = self.last_mean = float("-inf")
        self.first_solved: int | None = None
        self.last: tuple[int, EvalResult] | None = None
        self.eval_seconds = 0.0
        self._envs: list[gym.Env] = []
        self._csv: CsvLog | None = None
        self._episodes_csv: CsvLog | None = None
        self._start = 0.0
        self._budget_step: int | None = None  # the step that reached final_at; -1 once evaluated (or not to be)

    def _init_callback(self) -> None:
        self.restore()
        for callback in self.after_eval:
            callback.init_callback(self.model)

    def restore(self) -> None:
        """Best mean, first "solved" step and the last evaluation from the evaluations already recorded
        (a resumed run): a model resumed at the step of its last evaluation is not evaluated again."""
        history = [(int(float(r["timesteps"])), float(r["mean"])) for r in csv_rows(self.paths.eval_csv)]
        self.best_mean = max((m for _, m in history), default=float("-inf"))
        self.first_solved = next((t for t, m in history if self.threshold is not None and m >= self.threshold), None)
        if history:
            step = history[-1][0]
            rows = [r for r in csv_rows(self.paths.eval_episodes) if int(float(r["timesteps"])) == step]
            returns, lengths = [float(r["return"]) for r in rows], [int(float(r["length"])) for r in rows]
            result = EvalResult(returns, lengths, [int(float(r["seed"])) for r in rows], self.threshold)
            self.last, self.last_mean = (step, result), history[-1][1]

    def _on_training_start(self) -> None:
        self._csv = self._csv or CsvLog(self.paths.eval_csv, self.COLUMNS)
        self._episodes_csv = self._episodes_csv or CsvLog(self.paths.eval_episodes, self.EPISODE_COLUMNS)
        self._envs = self._envs or [self.env_fn() for _ in range(min(self.n_envs, self.n_episodes))]
        self._start = training_clock()
        self.every.start(self.num_timesteps)
        if self.final_at is not None and self.num_timesteps >= self.final_at:  # resumed past the budget
            self._budget_step = -1

    def _on_step(self) -> bool:
        if self.final_at is not None and self.num_timesteps >= self.final_at:
            self._at_budget()
            return True
        if not self.every(self.num_timesteps):
            return True
        self.evaluate_now()
        verdicts = [callback.on_step() for callback in self.after_eval]  # every rule sees every evaluation
        return all(verdicts)

    def _at_budget(self) -> None:
        """Past the budget within one rollout: the policy has not changed since the step that reached the budget
        (SB3 updates it only between rollouts, and training stops after this one), so evaluate it once,
        recorded at that step. A run that ends exactly at that step gets only its final evaluation."""
        if self._budget_step is None:
            self._budget_step = self.num_timesteps
        elif 0 <= self._budget_step < self.num_timesteps:
            self.evaluate_now(at=self._budget_step)
            self._budget_step = -1

    def evaluate_now(self, at: int | None = None) -> EvalResult:
        """Evaluate the model now: a row in ``eval.csv``, the sinks, ``best_model.zip`` if it is the best.

        :param at: the step to record it at (default: the model's step count)
        """
        self.num_timesteps = self.model.num_timesteps if at is None else at
        t0 = time.perf_counter()
        result = evaluate(
            self.model,
            self.env_fn,
            self.n_episodes,
            self.base_seed,
            self.n_envs,
            self.deterministic,
            self.threshold,
            obs_transform=transform(self.model.get_vec_normalize_env()),
            envs=self._envs,
        )
        seconds = time.perf_counter() - t0
        self.eval_seconds += seconds
        stats = result.stats()
        self._record(stats, result, seconds)
        self.last, self.last_mean = (self.num_timesteps, result), float(stats["mean"])  # type: ignore[arg-type]
        if self.last_mean > self.best_mean:
            self.best_mean = self.last_mean
            save_model(self.model, self.paths.best_model)
        if self.first_solved is None and self.threshold is not None and self.last_mean >= self.threshold:
            self.first_solved = self.num_timesteps
        log.info(
            "eval at %d steps: mean %s +- %s (sem) over %d episodes, %.1fs",
            self.num_timesteps,
            significant(self.last_mean),
            significant(float(stats["sem"] or 0), 2),
            stats["n"],
            seconds,
        )
        return result

    def _record(self, stats: dict[str, Any], result: EvalResult, seconds: float) -> None:
        """Write the evaluation to the CSV files and the sinks."""
        assert self._csv is not None and self._episodes_csv is not None
        for seed, ret, length in zip(result.seeds, result.returns, result.lengths, strict=True):
            self._episodes_csv.write({"timesteps": self.num_timesteps, "seed": seed, "return": ret, "length": length})
        row = {
            "timesteps": self.num_timesteps,
            **stats,
            "wall_time": round(training_clock() - self._start, 3),
            "eval_seconds": round(seconds, 3),
        }
        self._csv.write(row)  # after its episodes: an evaluation is recorded when its row is (resume relies on it)
        for sink in self.sinks:
            sink(self.tracked(row), self.num_timesteps)

    def close(self) -> None:
        for env in self._envs:
            env.close()
        for csv_log in (self._csv, self._episodes_csv):
            if csv_log:
                csv_log.close()


def save_model(model: BaseAlgorithm, path: Path) -> Path:
    """``model`` to ``path`` (atomically) and, where its envs are normalized, their statistics beside it
    (:func:`lander.storage.normalization.stats_path`, arrays, no pickle)."""
    normalizer = model.get_vec_normalize_env()
    if normalizer is not None:
        atomic_write(stats_path(path), partial(save_stats, normalizer, timesteps=model.num_timesteps))
    return atomic_write(path, model.save)


def save_checkpoint(
    model: BaseAlgorithm, directory: Path, keep: int = 0, replay_buffer: bool = False, timesteps: int | None = None
) -> Path:
    """Save ``model`` as ``model_<timesteps>_steps.zip`` in ``directory`` and keep the newest ``keep`` (0: all).

    :param timesteps: the step count to record (default: ``model.num_timesteps``)
    :param replay_buffer: also save an off-policy algorithm's replay buffer
    """
    directory.mkdir(parents=True, exist_ok=True)
    steps = model.num_timesteps if timesteps is None else timesteps
    if replay_buffer and isinstance(model, OffPolicyAlgorithm) and model.replay_buffer is not None:
        atomic_write(replay_buffer_path(directory, steps), partial(save_buffer, model.replay_buffer))
    current, model.num_timesteps = model.num_timesteps, steps
    try:
        path = save_model(model, directory / f"model_{steps}_steps.zip")
    finally:
        model.num_timesteps = current
    if keep > 0:
        for old_steps, old in find_checkpoints(directory)[keep:]:
            old.unlink()
            replay_buffer_path(directory, old_steps).unlink(missing_ok=True)
            stats_path(old).unlink(missing_ok=True)
    return path


def replay_buffer_path(directory: Path, steps: int) -> Path:
    """The replay buffer saved with the checkpoint of ``steps``."""
    return directory / f"replay_buffer_{steps}_steps.npz"


class Checkpointer(BaseCallback):
    """Saves a checkpoint at the first rollout start after every ``freq`` env steps.

    At a rollout's start the last update is done and (off-policy) every transition is in the replay
    buffer: the model is exactly the one that collects the next rollout. Off-policy "rollouts" are
    ``train_freq`` steps long, so their checkpoints land within a few steps of every ``freq``.

    It remembers where the current rollout began, so an interrupted run is saved as it stood then
    (:meth:`save_now`).

    :param freq: env steps between checkpoints; 0: only :meth:`save_now`
    :param directory: the ``checkpoints/`` folder
    :param keep: how many checkpoints to keep (0: all)
    :param replay_buffer: save the replay buffer with each checkpoint (off-policy algorithms)
    """

    def __init__(self, freq: int, directory: Path, keep: int, replay_buffer: bool) -> None:
        super().__init__()
        self.every, self.directory, self.keep, self.replay_buffer = Every(freq), directory, keep, replay_buffer
        self.rollout_start: int | None = None
        self.learning = False

    def _on_training_start(self) -> None:
        self.learning = True
        self.every.start(self.model.num_timesteps)

    def _on_rollout_start(self) -> None:
        self.rollout_start = self.model.num_timesteps
        if self.every(self.model.num_timesteps):
            check_finite(self.model)  # never checkpoint a diverged model
            path = save_checkpoint(self.model, self.directory, self.keep, self.replay_buffer, self.rollout_start)
            log.info("checkpoint %s", path.name)

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        self.learning = False

    def save_now(self, model: BaseAlgorithm) -> tuple[int, Path]:
        """Checkpoint ``model`` now; during ``learn`` as of the start of the current rollout.

        The model's parameters have not changed since then (SB3 trains between rollouts), so the
        rollout in progress is simply collected again after a resume.

        :return: the timesteps recorded and the checkpoint's path
        """
        steps = self.rollout_start if self.learning and self.rollout_start is not None else model.num_timesteps
        assert steps is not None
        return steps, save_checkpoint(model, self.directory, self.keep, self.replay_buffer, steps)


class SharedLocals(CallbackList):
    """SB3's ``CallbackList`` (what ``learn`` makes of a list of callbacks) whose step updates each dict of the
    rollout's locals once. SB3 hands every callback of the tree the same ``locals`` dict when training starts
    (``on_training_start``) and, at every step, updates that one dict again for each callback
    (``update_locals``): nine times over (10.3 us a step in a run; 6.3 here, BENCHMARKS.md). Here a child whose
    ``locals`` is this list's own dict, and whose ``update_locals`` is SB3's, only passes the update on to its own
    children; any other child (a user's callback that keeps a dict of its own, or updates it its own way) is
    updated as SB3 updates it. Every callback sees the same locals as under SB3's list
    (``tests/unit/test_callbacks.py``).
    """

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        for callback in self.callbacks:
            if callback.locals is self.locals and type(callback).update_locals is BaseCallback.update_locals:
                callback.update_child_locals(locals_)  # its dict is this one, updated already
            else:
                callback.update_locals(locals_)


def user_callbacks(cfg: DictConfig) -> list[BaseCallback]:
    """The ``callbacks`` config's SB3 callbacks, built with ``hydra.utils.instantiate`` in the order given."""
    built = []
    for name, node in (cfg.get("callbacks") or {}).items():
        try:
            callback = instantiate(node)
        except InstantiationException as exc:
            raise ConfigError(f"callbacks.{name} cannot be built: {root_cause(exc)}") from exc
        if not isinstance(callback, BaseCallback):
            raise ConfigError(
                f"callbacks.{name}: {node.get('_target_')} is a {type(callback).__name__}, "
                "not a stable_baselines3 BaseCallback"
            )
        built.append(callback)
    return built


def callbacks_for(
    cfg: DictConfig, paths: RunPaths, sinks: list[Any], total_timesteps: int
) -> tuple[PeriodicEval, list[StopRule], list[BaseCallback]]:
    """Lander's callbacks in order: guard, episodes, episode budget, evaluation with its stop rules, monitor."""
    rules: list[StopRule] = []
    if cfg.early_stop.reward_threshold is not None:
        rules.append(StopOnReward(cfg.early_stop.reward_threshold))
    if cfg.early_stop.patience is not None:
        rules.append(StopOnPlateau(cfg.early_stop.patience, float(cfg.early_stop.get("min_improvement", 0.0))))
    evaluator = PeriodicEval(
        cfg.eval.freq,
        partial(make_env, cfg.env),
        cfg.eval.episodes,
        cfg.eval.seed,
        cfg.eval.n_envs,
        paths,
        cfg.env.reward_threshold,
        cfg.eval.deterministic,
        sinks,
        final_at=total_timesteps if cfg.final_eval else None,
        after_eval=list(rules),
    )
    episodes = EpisodeLogger(paths.train_episodes, sinks)
    callbacks: list[BaseCallback] = [NonFiniteGuard(), episodes, A2CLoss()]  # the guard first: nothing NaN is saved
    if cfg.get("log_grad_norm"):  # absent from the config of a run made before it existed
        callbacks.append(GradientNorms())
    if cfg.max_episodes is not None:
        rules.append(StopOnEpisodes(cfg.max_episodes, lambda: episodes.episodes))
        callbacks.append(rules[-1])
    callbacks.append(evaluator)
    if cfg.monitor_freq > 0:
        limit = OmegaConf.select(cfg, "memory_limit_mb")  # absent from the config of a run made before it existed
        callbacks.append(ResourceMonitor(cfg.monitor_freq, paths.resources, lambda: episodes.episodes, sinks, limit))
    return evaluator, rules, callbacks
