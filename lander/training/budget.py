"""The steps a run will really train: SB3 collects whole rollouts, so a budget that is not a multiple of one
is overshot (PPO's 16 envs x 1024 steps turn ``total_timesteps=20000`` into 32,768).

``budget_rounding=up`` (default, SB3's behaviour) trains to the first whole rollout at or past the budget;
``budget_rounding=down`` stops at the last whole rollout within it (at least one). The start of a run says
which and why, and the progress bar counts to that number.
"""

from __future__ import annotations

import logging
import math
import sys
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback, ProgressBarCallback
from tqdm.rich import tqdm

from lander.process.signals import training_clock

log = logging.getLogger(__name__)


def rollout_steps(model: Any) -> tuple[int, str] | None:
    """Env steps of all envs together that SB3 collects between two checks of the budget, and what they are;
    None where that is not a fixed number (train_freq in episodes, algorithms of their own)."""
    n_steps = getattr(model, "n_steps", None)
    if n_steps is not None and hasattr(model, "rollout_buffer"):  # on-policy: PPO, A2C and subclasses
        envs = f"{model.n_envs} env{'s' * (model.n_envs > 1)}"
        return int(n_steps) * model.n_envs, f"whole rollouts of {envs} x {n_steps} steps"
    train_freq = getattr(model, "train_freq", None)
    if train_freq is not None and getattr(train_freq.unit, "value", "") == "step":  # off-policy: DQN, SAC, TD3
        return int(train_freq.frequency) * model.n_envs, f"{train_freq.frequency} steps of {model.n_envs} env(s)"
    return None


def plan(model: Any, budget: int, rounding: str) -> int:
    """The step count training will end at, for a budget of ``budget`` steps from ``model.num_timesteps``;
    logged when it differs from ``budget``.

    :param rounding: ``up`` (SB3: the first whole rollout at or past the budget) or ``down`` (the last whole
        rollout within it, at least one)
    """
    done = int(model.num_timesteps)
    unit = rollout_steps(model)
    if unit is None or budget <= done:
        return budget
    size, what = unit
    rollouts = (budget - done) / size
    end = done + size * max(1, math.ceil(rollouts) if rounding == "up" else math.floor(rollouts))
    if end != budget:
        log.info(
            "budget: total_timesteps=%d becomes %d steps: %s collects %s (budget_rounding=%s; %s)",
            budget,
            end,
            type(model).__name__,
            what,
            rounding,
            "budget_rounding=down stops at the last whole one within it"
            if rounding == "up"
            else "at least one: none fits within it"
            if rollouts < 1
            else "the default, up, goes on to the first whole one past it",
        )
    return end


class BudgetProgressBar(ProgressBarCallback):
    """SB3's progress bar, counting to the steps training will really reach (:func:`plan`); :meth:`close`
    ends it when training stops for any reason, so nothing redraws after the run's last words."""

    def __init__(self, end: int) -> None:
        super().__init__()
        self.end = end
        self.pbar = None

    def _on_training_start(self) -> None:
        originals = (sys.stdout, sys.stderr)
        self.pbar = tqdm(total=self.end - self.model.num_timesteps)
        # on a terminal, rich now draws the bar and takes sys.stdout/stderr over so that what is printed goes
        # above it; the log's handlers still hold the original streams, so they are pointed at rich's too
        self._moved = [
            (h, h.stream)
            for h in logging.getLogger().handlers
            if isinstance(h, logging.StreamHandler) and h.stream in originals
        ]
        for handler, stream in self._moved:
            handler.setStream(sys.stdout if stream is originals[0] else sys.stderr)

    def paused(self, paused: bool) -> None:
        """Say on the bar that the run is paused (and no longer when it goes on)."""
        if self.pbar is not None:
            self.pbar.set_description("paused" if paused else "")

    def close(self) -> None:
        """Close the bar if it is open (after training, or when a signal or an error stopped it), and give the
        log its own streams back."""
        if self.pbar is not None:
            self.pbar.close()
            self.pbar = None
        for handler, stream in getattr(self, "_moved", []):
            handler.setStream(stream)
        self._moved = []

    def _on_training_end(self) -> None:
        if self.pbar is not None:
            self.pbar.refresh()
        self.close()


class DurationForecast(BaseCallback):
    """Once ``after`` seconds into training, says how long the whole budget will take at the speed so far,
    when that is more than ``threshold`` seconds (SAC's default budget on 2 cores: hours)."""

    def __init__(self, end: int, after: float = 20.0, threshold: float = 1800.0) -> None:
        super().__init__()
        self.end, self.after, self.threshold = end, after, threshold
        self._start, self._first, self._said = 0.0, 0, False

    def _on_training_start(self) -> None:
        self._start, self._first = training_clock(), int(self.model.num_timesteps)

    def _on_step(self) -> bool:
        elapsed = training_clock() - self._start
        if self._said or elapsed < self.after or self.num_timesteps <= self._first:
            return True
        self._said = True
        rate = (self.num_timesteps - self._first) / elapsed
        total = (self.end - self._first) / rate
        if total > self.threshold:
            left = clock(total - elapsed)
            log.warning(
                "at %.0f steps/s so far, training to %d steps takes about %s (%s left); a smaller "
                "total_timesteps=N is quicker",
                rate,
                self.end,
                clock(total),
                left,
            )
        return True


def clock(seconds: float) -> str:
    """``1 h 05 min`` or ``12 min``."""
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
