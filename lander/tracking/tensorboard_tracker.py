"""TensorBoard: event files in ``<run>/tensorboard/<run name>/`` with the same metric keys as every tracker
(``train/...``, ``eval/...``, ``time/...`` and SB3's own). A resumed run writes into the same directory, and
TensorBoard drops what the earlier attempt logged after the checkpoint's step (``purge_step``), so the curves go on
without a split or a doubled part.
"""

from __future__ import annotations

from typing import Any

from lander.tracking.base import TrackedRun, Tracker, real_numbers


class TensorBoardTracker(Tracker):
    """``logger=tensorboard`` (or ``logger=wandb_tensorboard``): `tensorboard --logdir outputs` shows every run."""

    def start(self, run: TrackedRun) -> None:
        from torch.utils.tensorboard import SummaryWriter  # torch's TensorBoard writer: only when this tracker is on

        # as the CSV files (lander.training.resume.truncate_metrics), what was logged after the checkpoint's step goes
        purge = run.start_step + 1 if run.start_step else None
        self.writer = SummaryWriter(log_dir=str(run.paths.tensorboard / run.name), purge_step=purge)

    def log(self, metrics: dict[str, Any], step: int) -> None:
        for key, value in real_numbers(metrics).items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()  # on disk at once, as the CSV rows: a kill loses nothing already logged

    def finish(self, exit_code: int) -> None:
        if hasattr(self, "writer"):
            self.writer.close()
