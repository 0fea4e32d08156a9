"""Checkpoints that survive a kill: written atomically, the newest K kept, and found again on resume.

A checkpoint is ``checkpoints/model_<steps>_steps.zip`` (SB3's own format, loadable by ``PPO.load``),
with ``replay_buffer_<steps>_steps.npz`` beside it for off-policy algorithms when configured (arrays only:
:mod:`lander.replay`). Each file is written to a temporary name and renamed, the replay buffer first, so a
kill leaves either a whole checkpoint with its buffer or no checkpoint under its final name.
Checkpoints are taken between rollouts, where the model is exactly the one that starts the
next rollout, so a resumed run counts no step twice.
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from lander.callbacks import Every
from lander.monitoring import check_finite
from lander.replay import save_buffer
from lander.rundir import atomic_write, find_checkpoints

log = logging.getLogger(__name__)


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
        path = atomic_write(directory / f"model_{steps}_steps.zip", model.save)
    finally:
        model.num_timesteps = current
    if keep > 0:
        for old_steps, old in find_checkpoints(directory)[keep:]:
            old.unlink()
            replay_buffer_path(directory, old_steps).unlink(missing_ok=True)
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
