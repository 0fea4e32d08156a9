"""SB3's logger outputs of a lander run: its CSV file continued across a resume (:class:`ContinuedCSV`), and every
tracker (:class:`TrackerWriter`), so that SB3's own records (``train/loss``, ``time/fps``, ``rollout/...``) reach
the same places as lander's metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import CSVOutputFormat, KVWriter

from lander.tracking.base import Tracker, real_numbers


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


class TrackerWriter(KVWriter):
    """Forwards SB3's logger records to a tracker: every real number, numpy scalars included (SB3 logs
    ``train/approx_kl`` and others as ``np.float32``)."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        values = real_numbers(key_values)
        if values:
            self.tracker.log(values, step)

    def close(self) -> None:
        pass
