"""Algorithms lander adds to SB3's, built on its base classes so they save, load and train like SB3 models."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm


def dump_logs(model: BaseAlgorithm, **extra: Any) -> None:
    """SB3-style log lines: episodes, mean return and length of recent episodes, steps per second, ``extra``.

    :param model: the algorithm (its ``logger``, episode buffer and step counters)
    :param extra: more ``key=value`` records, e.g. ``rollout/exploration_rate``
    """
    elapsed = max((time.time_ns() - model.start_time) / 1e9, 1e-9)
    model.logger.record("time/episodes", model._episode_num, exclude="tensorboard")
    if model.ep_info_buffer:
        model.logger.record("rollout/ep_rew_mean", float(np.mean([ep["r"] for ep in model.ep_info_buffer])))
        model.logger.record("rollout/ep_len_mean", float(np.mean([ep["l"] for ep in model.ep_info_buffer])))
    for key, value in extra.items():
        model.logger.record(key, value)
    model.logger.record("time/fps", int((model.num_timesteps - model._num_timesteps_at_start) / elapsed))
    model.logger.record("time/total_timesteps", model.num_timesteps, exclude="tensorboard")
    model.logger.dump(step=model.num_timesteps)
