"""Building blocks of lander's SB3 callbacks: a periodic trigger, the per-episode training log and SB3's
CSV logger continued across a resume (the crash-safe CSV files are :mod:`lander.csvlog`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import CSVOutputFormat

from lander.csvlog import CsvLog, csv_rows

log = logging.getLogger(__name__)

Sink = Callable[[dict[str, Any], int], None]  # (metrics, env step); W&B's WandbRun.log fits


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

    def __init__(self, path: Path, sinks: list[Sink] | None = None) -> None:
        super().__init__()
        self.path, self.sinks = path, sinks or []
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
            row = {
                "timesteps": self.num_timesteps,
                "episode": self.episodes,
                "return": float(episode["r"]),
                "length": int(episode["l"]),
                "wall_time": round(time.perf_counter() - self._start, 3),
            }
            assert self._csv is not None
            self._csv.write(row)
            for sink in self.sinks:
                sink(
                    {
                        "train/episode_return": row["return"],
                        "train/episode_length": row["length"],
                        "train/episodes": self.episodes,
                    },
                    self.num_timesteps,
                )
        return True

    def _on_training_end(self) -> None:
        if self._csv:
            self._csv.close()


class ContinuedCSV(CSVOutputFormat):
    """SB3's CSV logger output, continuing the file's rows (a resumed run) instead of starting it afresh."""

    def __init__(self, filename: str) -> None:
        path = Path(filename)
        old = path.read_text(errors="replace") if path.is_file() else ""
        old = old[: old.rfind("\n") + 1]  # a last line cut short by a kill is dropped
        super().__init__(filename)
        if old.strip():
            self.file.write(old)
            self.file.flush()
            self.keys = old.splitlines()[0].split(self.separator)
