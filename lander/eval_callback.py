"""Periodic evaluation during training: the learning curve's points, the best model, and the events stop rules
(:mod:`lander.stopping`) listen to, as SB3's ``EvalCallback`` does with ``callback_after_eval``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3.common.callbacks import BaseCallback

from lander.callbacks import Every, Sink
from lander.csvlog import CsvLog, csv_rows
from lander.evaluation import EvalResult, evaluate
from lander.rundir import RunPaths, atomic_write

log = logging.getLogger(__name__)


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
        self._start = time.perf_counter()
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
            envs=self._envs,
        )
        seconds = time.perf_counter() - t0
        self.eval_seconds += seconds
        stats = result.stats()
        self._record(stats, result, seconds)
        self.last, self.last_mean = (self.num_timesteps, result), float(stats["mean"])  # type: ignore[arg-type]
        if self.last_mean > self.best_mean:
            self.best_mean = self.last_mean
            atomic_write(self.paths.best_model, self.model.save)
        if self.first_solved is None and self.threshold is not None and self.last_mean >= self.threshold:
            self.first_solved = self.num_timesteps
        log.info(
            "eval at %d steps: mean %.4g +- %.2g (sem) over %d episodes, %.1fs",
            self.num_timesteps,
            stats["mean"],
            stats["sem"],
            stats["n"],
            seconds,
        )
        return result

    def _record(self, stats: dict[str, Any], result: EvalResult, seconds: float) -> None:
        """Write the evaluation to the CSV files and the sinks."""
        assert self._csv is not None and self._episodes_csv is not None
        for seed, ret, length in zip(result.seeds, result.returns, result.lengths, strict=True):
            self._episodes_csv.write({"timesteps": self.num_timesteps, "seed": seed, "return": ret, "length": length})
        self._csv.write(  # after its episodes: an evaluation is recorded when its row is (resume relies on it)
            {
                "timesteps": self.num_timesteps,
                **stats,
                "wall_time": round(time.perf_counter() - self._start, 3),
                "eval_seconds": round(seconds, 3),
            }
        )
        for sink in self.sinks:
            sink(
                {f"eval/{k}": v for k, v in stats.items() if v is not None} | {"time/eval_seconds": seconds},
                self.num_timesteps,
            )

    def close(self) -> None:
        for env in self._envs:
            env.close()
        for csv_log in (self._csv, self._episodes_csv):
            if csv_log:
                csv_log.close()
