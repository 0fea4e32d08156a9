"""SB3 callbacks that write a run's metrics: per-episode training returns and periodic evaluations."""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import CSVOutputFormat

from lander.evaluation import EvalResult, evaluate

log = logging.getLogger(__name__)

Sink = Callable[[dict[str, Any], int], None]  # (metrics, env step); W&B's WandbRun.log fits


class CsvLog:
    """Appends rows to a CSV file, flushing each one, so a crash loses nothing already recorded."""

    def __init__(self, path: Path, columns: list[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists()
        self._file = path.open("a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=columns)
        if new:
            self._writer.writeheader()

    def write(self, row: dict[str, Any]) -> None:
        self._writer.writerow(row)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows already in a CSV file (none if there is no file): what a resumed run recorded before."""
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


class EpisodeLogger(BaseCallback):
    """Writes every finished training episode (from SB3's ``Monitor`` info) to ``train_episodes.csv``.

    :param path: the CSV file
    :param sinks: more receivers of ``train/episode_return`` and ``train/episode_length``
    :param max_episodes: stop training once this many episodes have finished (None: no episode budget)
    """

    COLUMNS = ["timesteps", "episode", "return", "length", "wall_time"]

    def __init__(self, path: Path, sinks: list[Sink] | None = None, max_episodes: int | None = None) -> None:
        super().__init__()
        self.path, self.sinks, self.max_episodes = path, sinks or [], max_episodes
        self.stop_reason: str | None = None
        self.episodes = 0
        self._csv: CsvLog | None = None
        self._start = 0.0

    def _on_training_start(self) -> None:
        self.episodes = len(csv_rows(self.path))  # a resumed run numbers its episodes on
        self._csv = CsvLog(self.path, self.COLUMNS)
        self._start = time.perf_counter()

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            episode = info.get("episode")
            if episode is None:
                continue
            self.episodes += 1
            row = {"timesteps": self.num_timesteps, "episode": self.episodes, "return": float(episode["r"]),
                   "length": int(episode["l"]), "wall_time": round(time.perf_counter() - self._start, 3)}
            assert self._csv is not None
            self._csv.write(row)
            for sink in self.sinks:
                sink({"train/episode_return": row["return"], "train/episode_length": row["length"],
                      "train/episodes": self.episodes}, self.num_timesteps)
        if self.max_episodes is not None and self.episodes >= self.max_episodes:
            self.stop_reason = f"episode budget max_episodes={self.max_episodes} reached"
            return False
        return True

    def _on_training_end(self) -> None:
        if self._csv:
            self._csv.close()


class PeriodicEval(BaseCallback):
    """Evaluates the policy every ``freq`` env steps on fixed seeds; keeps the best model.

    :param freq: env steps (all training envs together) between evaluations
    :param env_fn: makes one evaluation env
    :param n_episodes: episodes per evaluation; episode i uses seed ``base_seed + i``
    :param base_seed: seed of episode 0
    :param n_envs: episodes run side by side
    :param run_dir: the run directory (``metrics/eval.csv`` and ``best_model.zip`` go there)
    :param threshold: "solved" return; the first timestep whose mean reaches it is kept
    :param deterministic: greedy/mean actions
    :param sinks: more receivers of the ``eval/...`` metrics
    :param final_at: from this timestep on, periodic evaluation is left to the final one, which the caller
        runs with :meth:`evaluate_now` after training (so the curve's last point is the final model's)
    :param stop_at: stop training once an evaluation mean reaches this (None: never)
    :param patience: stop training after this many evaluations without a new best mean (None: never)

    The CSV file and eval envs stay open after training for that final evaluation; :meth:`close` them.
    """

    COLUMNS = ["timesteps", "mean", "std", "sem", "n", "median", "min", "max", "success_rate",
               "mean_length", "wall_time", "eval_seconds"]
    EPISODE_COLUMNS = ["timesteps", "seed", "return", "length"]

    def __init__(self, freq: int, env_fn: Callable[[], gym.Env], n_episodes: int, base_seed: int, n_envs: int,
                 run_dir: Path, threshold: float | None, deterministic: bool = True,
                 sinks: list[Sink] | None = None, final_at: int | None = None, stop_at: float | None = None,
                 patience: int | None = None) -> None:
        super().__init__()
        self.final_at, self.stop_at, self.patience = final_at, stop_at, patience
        self.stop_reason: str | None = None
        self.last: tuple[int, EvalResult] | None = None
        self._since_best = 0
        self.freq, self.env_fn, self.n_episodes, self.base_seed = freq, env_fn, n_episodes, base_seed
        self.n_envs, self.run_dir, self.threshold, self.deterministic = n_envs, run_dir, threshold, deterministic
        self.sinks = sinks or []
        self.best_mean = float("-inf")
        self.first_solved: int | None = None
        self.eval_seconds = 0.0
        self._next = freq
        self._envs: list[gym.Env] = []
        self._csv: CsvLog | None = None
        self._episodes_csv: CsvLog | None = None
        self._start = 0.0

    def _on_training_start(self) -> None:
        if self._csv is None:  # a resumed run goes on from the evaluations it recorded
            history = [(int(float(r["timesteps"])), float(r["mean"]))
                       for r in csv_rows(self.run_dir / "metrics" / "eval.csv")]
            self.best_mean = max((m for _, m in history), default=float("-inf"))
            self.first_solved = next((t for t, m in history if self.threshold is not None and m >= self.threshold),
                                     None)
        self._csv = self._csv or CsvLog(self.run_dir / "metrics" / "eval.csv", self.COLUMNS)
        self._episodes_csv = self._episodes_csv or CsvLog(self.run_dir / "metrics" / "eval_episodes.csv",
                                                          self.EPISODE_COLUMNS)
        self._envs = self._envs or [self.env_fn() for _ in range(min(self.n_envs, self.n_episodes))]
        self._start = time.perf_counter()
        self._next = (self.num_timesteps // self.freq + 1) * self.freq

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            self._next = (self.num_timesteps // self.freq + 1) * self.freq
            if self.final_at is None or self.num_timesteps < self.final_at:
                self.evaluate_now()
                return self.stop_reason is None
        return True

    def evaluate_now(self) -> EvalResult:
        """Evaluate the model now: a row in ``eval.csv``, the sinks, ``best_model.zip`` if it is the best."""
        self.num_timesteps = self.model.num_timesteps
        t0 = time.perf_counter()
        result = evaluate(self.model, self.env_fn, self.n_episodes, self.base_seed, self.n_envs,
                          self.deterministic, self.threshold, envs=self._envs)
        seconds = time.perf_counter() - t0
        self.eval_seconds += seconds
        stats = result.stats()
        row = {"timesteps": self.num_timesteps, **stats, "wall_time": round(time.perf_counter() - self._start, 3),
               "eval_seconds": round(seconds, 3)}
        assert self._csv is not None and self._episodes_csv is not None
        self._csv.write(row)
        for seed, ret, length in zip(result.seeds, result.returns, result.lengths):
            self._episodes_csv.write({"timesteps": self.num_timesteps, "seed": seed, "return": ret, "length": length})
        self.last = (self.num_timesteps, result)
        self._since_best += 1
        if stats["mean"] > self.best_mean:  # type: ignore[operator]
            self.best_mean, self._since_best = float(stats["mean"]), 0  # type: ignore[arg-type]
            self.model.save(self.run_dir / "best_model.zip")
        if self.stop_at is not None and stats["mean"] >= self.stop_at:
            self.stop_reason = f"eval mean {stats['mean']:.1f} reached early_stop.reward_threshold={self.stop_at:g}"
        elif self.patience is not None and self._since_best >= self.patience:
            self.stop_reason = f"no new best eval mean in {self.patience} evaluations (early_stop.patience)"
        if self.first_solved is None and self.threshold is not None and stats["mean"] >= self.threshold:
            self.first_solved = self.num_timesteps
        log.info("eval at %d steps: mean %.4g +- %.2g (sem) over %d episodes, %.1fs",
                 self.num_timesteps, stats["mean"], stats["sem"], stats["n"], seconds)
        for sink in self.sinks:
            sink({f"eval/{k}": v for k, v in stats.items() if v is not None} | {"time/eval_seconds": seconds},
                 self.num_timesteps)
        return result

    def close(self) -> None:
        for env in self._envs:
            env.close()
        for csv_log in (self._csv, self._episodes_csv):
            if csv_log:
                csv_log.close()


class ContinuedCSV(CSVOutputFormat):
    """SB3's CSV logger output, continuing the file's rows (a resumed run) instead of starting it afresh."""

    def __init__(self, filename: str) -> None:
        path = Path(filename)
        old = path.read_text() if path.is_file() else ""
        super().__init__(filename)
        if old.strip():
            self.file.write(old if old.endswith("\n") else old + "\n")
            self.file.flush()
            self.keys = old.splitlines()[0].split(self.separator)
