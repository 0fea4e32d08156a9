"""Loading saved models without unpickling anything from the file, and with limits on what the file holds.

An SB3 zip holds a JSON ``data`` file, in which some values (spaces, schedules) are pickles, and torch
tensors. Every pickled value is replaced, through SB3's ``custom_objects``, by the same object built
from the run's own config (a fresh model on the same env); a pickled value lander does not know is
refused, never loaded. SB3 loads the tensors with ``torch.load(weights_only=True)``. Before anything is
read, the archive's entries are checked: known names only, and sizes a model of this config can have
(a small file that would inflate to gigabytes is refused without inflating it).
"""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from lander.algorithms.build import build_model, model_class
from lander.errors import RunFileError
from lander.storage.rundir import check_regular

TEXT_ENTRIES = {"data": 8 * 2**20, "_stable_baselines3_version": 2**10, "system_info.txt": 2**16}  # bytes at most
TENSOR_SLACK = 4  # a .pth entry may hold this many times the model's parameters (Adam's moments, buffers)


class ModelLoadError(RunFileError):
    """A model file that cannot be loaded safely: unreadable, foreign objects, or not for this env."""


def read_data(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The zip's ``data`` object and the uncompressed size of every ``.pth`` entry, checked against the limits."""
    try:
        with zipfile.ZipFile(path) as archive:
            tensors = {}
            for info in archive.infolist():
                limit = TEXT_ENTRIES.get(info.filename)
                if limit is None and not info.filename.endswith(".pth"):
                    raise ModelLoadError(f"{path} holds {info.filename!r}, which is not part of an SB3 model")
                if limit is not None and info.file_size > limit:
                    raise ModelLoadError(
                        f"{path}: {info.filename} would inflate to {info.file_size} bytes (limit {limit})"
                    )
                if limit is None:
                    tensors[info.filename] = info.file_size
            data = json.loads(archive.read("data").decode())
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, EOFError, RuntimeError) as exc:
        if isinstance(exc, ModelLoadError):
            raise
        raise ModelLoadError(f"{path} is not a readable SB3 model file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(data, dict):
        raise ModelLoadError(f"{path}: its 'data' entry is a JSON {type(data).__name__}, not an SB3 model's object")
    return data, tensors


SHAPING = ("policy_kwargs", "n_steps", "n_envs", "batch_size", "buffer_size", "n_epochs", "gradient_steps")
COUNTERS = ("num_timesteps", "_n_updates", "_episode_num")  # the training state a checkpoint carries


def check_counters(path: Path, data: dict[str, Any]) -> None:
    """The counters a checkpoint carries must be integers >= 0 (``num_timesteps="abc"`` failed inside SB3)."""
    for key in COUNTERS:
        value = data.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ModelLoadError(f"{path}: {key}={value!r} in its data, not a count (an integer >= 0)")


def check_tensor_sizes(path: Path, tensors: dict[str, int], reference: BaseAlgorithm) -> None:
    """Refuse ``.pth`` entries larger than a model of this config can write."""
    limit = TENSOR_SLACK * sum(p.numel() * p.element_size() for p in reference.policy.parameters()) + 2**20
    for name, size in tensors.items():
        if size > limit:
            raise ModelLoadError(f"{path}: {name} would inflate to {size} bytes, more than this model's {limit}")


def safe_load(cfg: DictConfig, path: Path, env: VecEnv, device: str | None = None) -> BaseAlgorithm:
    """Load the model at ``path`` for the run configured by ``cfg``, on ``env``, unpickling nothing.

    :param cfg: the run's config (``.hydra/config.yaml``): it rebuilds the spaces and schedules
    :param path: an SB3 ``.zip`` (``model.zip``, ``best_model.zip`` or a checkpoint)
    :param env: the env the model will act in
    :raises ModelLoadError: an unreadable or oversized file, a pickled value lander does not know, or a
        model whose networks do not fit ``env``
    """
    check_regular(path)  # a symlink to /dev/zero would be read until memory ran out, a FIFO waited on forever
    data, tensors = read_data(path)
    keys = [k for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v]
    reference = build_model(cfg, env, cfg.seed)  # the same classes, spaces and schedules, from config
    unknown = [k for k in keys if not hasattr(reference, k)]
    if unknown:
        raise ModelLoadError(
            f"{path} holds pickled objects lander does not load: {', '.join(unknown)}; refusing to unpickle them"
        )
    check_tensor_sizes(path, tensors, reference)
    check_counters(path, data)
    # what sizes the networks and buffers comes from the run's config, never from the file: a planted
    # policy_kwargs.net_arch=[12000, 12000] or n_steps=1e12 would allocate gigabytes before any check
    shaping = [k for k in SHAPING if k in data and hasattr(reference, k)]
    custom_objects: dict[str, Any] = {k: getattr(reference, k) for k in [*keys, *shaping]}
    try:
        return model_class(cfg).load(path, env=env, device=device or cfg.device, custom_objects=custom_objects)
    except pickle.UnpicklingError as exc:
        raise ModelLoadError(f"{path} holds objects other than tensors; refusing to load them") from exc
    except (RuntimeError, ValueError, KeyError, AssertionError, TypeError, AttributeError) as exc:
        raise ModelLoadError(
            f"{path} does not fit {cfg.env.id} with {cfg.algo.name}'s networks "
            f"({type(exc).__name__}: {str(exc).splitlines()[0]})"
        ) from exc
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ModelLoadError(f"{path} is not a readable SB3 model file ({type(exc).__name__}: {exc})") from exc
