"""TensorBoard beside (or instead of) W&B: ``logger.tensorboard=true`` writes event files to
``<run>/tensorboard/<run name>/`` with the same metric keys as W&B (``train/...``, ``eval/...``, ``time/...`` and
SB3's own). A resumed run writes into the same directory, and TensorBoard drops what the earlier attempt logged after
the checkpoint's step (``purge_step``), so the curves go on without a split or a doubled part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import KVWriter

from lander.tracking.base import real_numbers


class TensorBoardRun:
    """One run's event files; ``log`` has the signature of :meth:`lander.tracking.wandb_tracker.WandbRun.log` (a sink).

    :param log_dir: ``<run>/tensorboard/<run name>``
    :param start_step: the step training starts from (a resumed run's checkpoint; 0 for a new run)
    """

    def __init__(self, log_dir: Path, start_step: int) -> None:
        from torch.utils.tensorboard import SummaryWriter

        # as the CSV files (lander.training.resume.truncate_metrics), what was logged after the checkpoint's step goes
        self.writer = SummaryWriter(log_dir=str(log_dir), purge_step=start_step + 1 if start_step else None)

    def log(self, metrics: dict[str, Any], step: int) -> None:
        for key, value in real_numbers(metrics).items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()  # on disk at once, as the CSV rows: a kill loses nothing already logged

    def close(self) -> None:
        self.writer.close()


class TensorBoardWriter(KVWriter):
    """Forwards SB3's logger records (``train/loss``, ``time/fps``, ``rollout/...``) to a :class:`TensorBoardRun`."""

    def __init__(self, run: TensorBoardRun) -> None:
        self.run = run

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        self.run.log(key_values, step)

    def close(self) -> None:
        pass
