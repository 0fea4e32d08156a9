"""Normalization statistics (SB3's ``VecNormalize``) on disk as arrays: ``<model>.vecnormalize.npz`` beside every
model and checkpoint, loaded with ``allow_pickle=False``.

rl-baselines3-zoo saves ``vecnormalize.pkl``, a pickle of the whole wrapper: a planted file would run code on load.
This file holds the running mean, variance and count of the observations and of the discounted returns, each
training env's running return (so that a resumed run goes on exactly) and the settings, as numbers and JSON.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from lander.errors import RunFileError
from lander.storage.rundir import check_regular

SETTINGS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon")
ARRAYS = ("obs_mean", "obs_var", "obs_count", "ret_mean", "ret_var", "ret_count", "returns")
MAX_BYTES = 64 * 2**20  # any one array, inflated: statistics of vector observations take a few kB


def stats_path(model_path: Path) -> Path:
    """Where the statistics of ``model_path`` (``model.zip``, ``checkpoints/model_N_steps.zip``) are saved."""
    return model_path.with_name(model_path.stem + ".vecnormalize.npz")


def obs_stats(venv: VecNormalize) -> RunningMeanStd:
    """The running statistics of ``venv``'s (vector) observations (``norm_obs=false``: unused ones, as SB3 starts
    them, so that every file has the same arrays)."""
    if not venv.norm_obs:
        return RunningMeanStd(shape=tuple(venv.observation_space.shape or ()))
    assert isinstance(venv.obs_rms, RunningMeanStd), "lander normalizes vector observations only"
    return venv.obs_rms


def transform(venv: VecNormalize | None) -> Callable[[np.ndarray], np.ndarray] | None:
    """What the policy sees of a batch of observations, by ``venv``'s current statistics (None: no ``venv``)."""
    if venv is None:
        return None
    return lambda obs: np.asarray(venv.normalize_obs(obs))


def save_stats(venv: VecNormalize, path: Path, timesteps: int) -> None:
    """Write ``venv``'s statistics and settings to ``path`` (an ``.npz``), with the step count of the model they
    are saved beside (``timesteps``): a kill between the two files' renames leaves a pair :func:`check_pair`
    refuses."""
    settings: dict[str, Any] = {name: getattr(venv, name) for name in SETTINGS} | {"timesteps": timesteps}
    obs = obs_stats(venv)
    arrays = {
        "obs_mean": obs.mean,
        "obs_var": obs.var,
        "obs_count": np.asarray(obs.count),
        "ret_mean": np.asarray(venv.ret_rms.mean),
        "ret_var": np.asarray(venv.ret_rms.var),
        "ret_count": np.asarray(venv.ret_rms.count),
        "returns": venv.returns,
    }
    meta = np.frombuffer(json.dumps(settings).encode(), dtype=np.uint8)
    with path.open("wb") as handle:
        np.savez(handle, meta=meta, **arrays)  # type: ignore[arg-type]


@dataclass
class NormalizationStats:
    """Statistics read from a file: ``arrays`` by :data:`ARRAYS` name, ``settings`` by :data:`SETTINGS` name."""

    arrays: dict[str, np.ndarray]
    settings: dict[str, Any]
    timesteps: int | None = None  # the step count of the model saved with them (None: a file of lander < 0.2)

    def check_pair(self, path: Path, model_timesteps: int) -> None:
        """Raise :class:`RunFileError` if these statistics (read from ``path``) were saved with another model than
        one of ``model_timesteps`` steps (a kill between the renames of a model and its statistics)."""
        if self.timesteps is not None and self.timesteps != model_timesteps:
            raise RunFileError(
                f"{path} holds the statistics of the model at {self.timesteps} steps, but the model beside it is at "
                f"{model_timesteps} steps (a pair cut by a kill): not used"
            )

    def normalize_obs(self, obs: np.ndarray) -> np.ndarray:
        """Observations as the frozen wrapper gives them to the policy (``VecNormalize.normalize_obs``)."""
        if not self.settings["norm_obs"]:
            return obs
        scaled = (obs - self.arrays["obs_mean"]) / np.sqrt(self.arrays["obs_var"] + self.settings["epsilon"])
        clip = self.settings["clip_obs"]
        return cast(np.ndarray, np.clip(scaled, -clip, clip).astype(np.float32))


def read_stats(path: Path, obs_shape: tuple[int, ...]) -> NormalizationStats:
    """The statistics in ``path`` for observations of ``obs_shape``; nothing is unpickled.

    :raises RunFileError: a missing file, one that is not such an archive, or arrays of other shapes
    """
    if not path.exists():
        raise RunFileError(f"{path} is missing: this run normalizes its observations (env.normalize)")
    check_regular(path)
    try:
        check_sizes(path, MAX_BYTES)  # before any array is read: a header may declare terabytes
        with np.load(path, allow_pickle=False) as archive:
            if set(archive.files) != {"meta", *ARRAYS}:
                raise ValueError(f"arrays {sorted(archive.files)}, expected {sorted(['meta', *ARRAYS])}")
            settings = json.loads(archive["meta"].tobytes().decode())
            arrays = {name: np.asarray(archive[name], dtype=np.float64) for name in ARRAYS}
        timesteps = settings.pop("timesteps", None) if isinstance(settings, dict) else None
        if not isinstance(settings, dict) or set(settings) != set(SETTINGS):
            raise ValueError(f"settings {settings!r}, expected the keys {', '.join(SETTINGS)}")
        check_settings(settings, timesteps)
        for name in ("obs_mean", "obs_var"):
            if arrays[name].shape != obs_shape:
                raise ValueError(f"{name} has shape {arrays[name].shape}, the observations {obs_shape}")
        for name in ("obs_count", "ret_mean", "ret_var", "ret_count"):
            if arrays[name].shape != ():
                raise ValueError(f"{name} has shape {arrays[name].shape}, not a single number")
        if arrays["returns"].ndim != 1:
            raise ValueError(f"returns has shape {arrays['returns'].shape}, not one per env")
        if not all(np.isfinite(a).all() for a in arrays.values()) or (arrays["obs_var"] < 0).any():
            raise ValueError("values that are not finite, or a negative variance")
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        raise RunFileError(f"{path} is not lander's normalization statistics: {exc}") from exc
    return NormalizationStats(arrays, settings, timesteps)


def check_settings(settings: dict[str, Any], timesteps: Any) -> None:
    """The settings' types and ranges as ``VecNormalize`` takes them; ValueError naming the first that is not."""
    for name in ("norm_obs", "norm_reward"):
        if not isinstance(settings[name], bool):
            raise ValueError(f"{name}={settings[name]!r}, not true or false")
    for name in ("clip_obs", "clip_reward", "epsilon", "gamma"):
        value = settings[name]
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not (number and value > 0) and not (name == "gamma" and value is None):
            raise ValueError(f"{name}={value!r}, not a number > 0")
    if timesteps is not None and (not isinstance(timesteps, int) or isinstance(timesteps, bool) or timesteps < 0):
        raise ValueError(f"timesteps={timesteps!r}, not a step count")


def check_sizes(path: Path, limit: int) -> None:
    """Every member of the ``.npz`` at ``path`` inflates to at most ``limit`` bytes, and its array header declares at
    most that many; ValueError naming the member otherwise. Nothing but the headers is read."""
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.file_size > limit:
                raise ValueError(f"{info.filename} would inflate to {info.file_size:,} bytes (at most {limit:,})")
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                read_header = (
                    np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                )
                shape, _fortran, dtype = read_header(member)
                size = math.prod(shape) * dtype.itemsize
                if dtype.hasobject or size > limit:
                    raise ValueError(f"{info.filename} declares {shape} {dtype} ({size:,} bytes; at most {limit:,})")


def load_stats(venv: VecNormalize, path: Path, model_timesteps: int) -> None:
    """Put the statistics of ``path`` into ``venv`` (a run's training envs, for a resume); the settings must be
    the run's, saved with the model of ``model_timesteps`` steps. Each env's running return is restored where the
    number of envs is the same.

    :raises RunFileError: as :func:`read_stats`, settings other than ``venv``'s, or another model's statistics
    """
    assert venv.observation_space.shape is not None
    stats = read_stats(path, tuple(venv.observation_space.shape))
    stats.check_pair(path, model_timesteps)
    ours = {name: getattr(venv, name) for name in SETTINGS}
    if stats.settings != ours:
        raise RunFileError(f"{path} was saved with {stats.settings}, this run normalizes with {ours}")
    obs = obs_stats(venv)
    obs.mean, obs.var, obs.count = stats.arrays["obs_mean"], stats.arrays["obs_var"], float(stats.arrays["obs_count"])
    venv.ret_rms.mean, venv.ret_rms.var = stats.arrays["ret_mean"], stats.arrays["ret_var"]
    venv.ret_rms.count = float(stats.arrays["ret_count"])
    if stats.arrays["returns"].shape == venv.returns.shape:
        venv.returns = stats.arrays["returns"]
