"""A video of the trained agent, rendered headless and written with imageio-ffmpeg."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import numpy as np
from omegaconf import DictConfig
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from stable_baselines3.common.base_class import BaseAlgorithm

from lander.envs import make_env
from lander.evaluation.policy import record_episode
from lander.storage.rundir import atomic_write

log = logging.getLogger(__name__)
X264_OPTIONS = ["-preset", "veryfast", "-threads", "1"]  # ffmpeg's output options (see write_video)


def write_video(
    model: BaseAlgorithm,
    env_cfg: DictConfig,
    video_cfg: DictConfig,
    path: Path,
    progress: bool = False,
    obs_transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, Any]:
    """Play one episode on ``video.seed`` and write it to ``path`` (mp4, H.264), atomically.

    :param obs_transform: applied to observations before the policy sees them (frozen normalization)
    :param progress: show a progress bar of the frames (rendering MuJoCo takes about a minute)
    :return: the episode's return, length in frames and the seed
    """
    env = make_env(env_cfg, render_mode="rgb_array")
    info: dict[str, Any] = {"seed": int(video_cfg.seed)}
    limit = getattr(env.spec, "max_episode_steps", None)  # the env's own time limit, where shorter
    steps = min(video_cfg.max_steps, limit or video_cfg.max_steps)
    log.info("recording %s: one episode on seed %d, up to %d steps ...", path.name, video_cfg.seed, steps)

    def encode(tmp: Path) -> None:
        # frames go to the encoder as they are rendered, never all in memory (720 MB for 1,000 LunarLander
        # frames); written as they are (H.264 needs even sizes: LunarLander 600x400, Atari 160x210, MuJoCo 480x480).
        # x264's veryfast preset on one thread: ffmpeg's CPU for 956 LunarLander frames 1.9 s against 2.8 for its
        # default (medium, a thread a core), at 43.5 dB PSNR against 44.6, in 156 kB against 173 (benchmarks/video.py)
        writer = imageio.get_writer(
            tmp, fps=video_cfg.fps, codec="libx264", macro_block_size=2, output_params=X264_OPTIONS
        )
        bar = FrameBar(steps) if progress else None

        def append(frame: Any) -> None:
            writer.append_data(frame)
            if bar is not None:
                bar.advance()

        try:
            info["frames"], info["return"] = record_episode(
                model, env, video_cfg.seed, append, max_steps=video_cfg.max_steps, obs_transform=obs_transform
            )
        finally:
            writer.close()
            if bar is not None:
                bar.close()

    try:
        atomic_write(path, encode)
    finally:
        env.close()
    return {"seed": info["seed"], "return": info["return"], "frames": info["frames"]}


class FrameBar:
    """A progress bar of video frames (rich's, as the training's), up to ``steps`` steps' (one frame more: the
    reset's); an episode that ends sooner closes it full, at its frames.

    :param steps: the most steps the episode can have
    """

    def __init__(self, steps: int) -> None:
        self.progress = Progress(
            TextColumn("video.mp4"),
            TaskProgressColumn(),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        self.task = self.progress.add_task("video.mp4", total=steps + 1)
        self.progress.start()

    def advance(self) -> None:
        """One frame more."""
        self.progress.advance(self.task)

    def close(self) -> None:
        """End the bar at the frames written."""
        self.progress.update(self.task, total=self.progress.tasks[0].completed)
        self.progress.stop()
