"""Where a run's metrics go besides its CSV files: what every tracker shares.

A tracker (:class:`lander.tracking.wandb_tracker.WandbRun`, :class:`lander.tracking.tensorboard_tracker.TensorBoardRun`)
takes flat ``{"prefix/key": value}`` dicts with the env step (``log``), and an SB3 ``KVWriter`` forwards SB3's own
records to it. SB3's CSV output is continued across a resume by :class:`ContinuedCSV`.
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.logger import CSVOutputFormat


def run_name(cfg: DictConfig, gamma: float) -> str:
    """The W&B name of a run: ``logger.name`` if set, else ``{algo}_{env}_gamma-{gamma}_seed-{seed}``."""
    if cfg.logger.get("name"):
        return str(cfg.logger.name)
    return f"{cfg.algo.name}_{cfg.env.name}_gamma-{gamma:g}_seed-{cfg.seed}"


def real_numbers(values: dict[str, Any]) -> dict[str, int | float]:
    """The values that are real numbers, numpy scalars included (booleans left out), as Python ints and floats."""
    return {
        k: int(v) if isinstance(v, numbers.Integral) else float(v)
        for k, v in values.items()
        if isinstance(v, numbers.Real) and not isinstance(v, bool)
    }


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
