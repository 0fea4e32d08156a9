"""Stop rules: SB3 callbacks that end training before its budget and say why (``stop_reason``).

:class:`StopOnReward` and :class:`StopOnPlateau` are called after each evaluation by
:class:`lander.eval_callback.PeriodicEval` (their ``parent``), like SB3's ``StopTrainingOnRewardThreshold``
and ``StopTrainingOnNoModelImprovement`` under ``EvalCallback``; :class:`StopOnEpisodes` runs every step,
and :class:`SignalCheck` raises a SIGINT/SIGTERM held back by :func:`lander.interrupt.deferred`.
"""

from __future__ import annotations

from collections.abc import Callable

from stable_baselines3.common.callbacks import BaseCallback

from lander.interrupt import raise_pending


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
    """Stop after ``patience`` evaluations in a row without a new best mean (``early_stop.patience``)."""

    def __init__(self, patience: int) -> None:
        super().__init__()
        self.patience = patience
        self._best = float("-inf")
        self._since_best = 0

    def _init_callback(self) -> None:
        self._best, self._since_best = self.parent.best_mean, 0  # type: ignore[union-attr]  # a resumed run's too

    def _on_step(self) -> bool:
        best = self.parent.best_mean  # type: ignore[union-attr]
        if best > self._best:
            self._best, self._since_best = best, 0
            return True
        self._since_best += 1
        if self._since_best >= self.patience:
            return self._stop(f"no new best eval mean in {self.patience} evaluations (early_stop.patience)")
        return True


class StopOnEpisodes(StopRule):
    """Stop once ``max_episodes`` training episodes have finished (``max_episodes``, an episode budget).

    :param episodes: the number of episodes finished so far (:class:`lander.callbacks.EpisodeLogger` counts them)
    """

    def __init__(self, max_episodes: int, episodes: Callable[[], int]) -> None:
        super().__init__()
        self.max_episodes, self.episodes = max_episodes, episodes

    def _on_step(self) -> bool:
        if self.episodes() >= self.max_episodes:
            return self._stop(f"episode budget max_episodes={self.max_episodes} reached")
        return True


class SignalCheck(BaseCallback):
    """Raises a SIGINT/SIGTERM received during :func:`lander.interrupt.deferred` at the next env step (put it
    last, so every other callback has seen the step)."""

    def _on_step(self) -> bool:
        raise_pending()
        return True
