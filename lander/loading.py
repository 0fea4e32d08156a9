"""Loading saved models without unpickling anything from the file.

An SB3 zip holds a JSON ``data`` file, in which some values (spaces, schedules) are pickles, and torch
tensors. Every pickled value is replaced, through SB3's ``custom_objects``, by the same object built
from the run's own config (a fresh model on the same env); a pickled value lander does not know is
refused, never loaded. SB3 loads the tensors with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from lander.algos import build_model, model_class


class ModelLoadError(RuntimeError):
    """A model file that cannot be loaded safely: unreadable, foreign objects, or not for this env."""


def pickled_keys(path: Path) -> list[str]:
    """The keys of the zip's ``data`` whose values are pickles (SB3's ``:serialized:`` entries)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data").decode())
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, EOFError) as exc:
        raise ModelLoadError(f"{path} is not a readable SB3 model file ({type(exc).__name__}: {exc})") from exc
    return [k for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v]


def safe_load(cfg: DictConfig, path: Path, env: VecEnv, device: str | None = None) -> BaseAlgorithm:
    """Load the model at ``path`` for the run configured by ``cfg``, on ``env``, unpickling nothing.

    :param cfg: the run's config (``.hydra/config.yaml``): it rebuilds the spaces and schedules
    :param path: an SB3 ``.zip`` (``model.zip``, ``best_model.zip`` or a checkpoint)
    :param env: the env the model will act in
    :raises ModelLoadError: an unreadable file, a pickled value lander does not know, or a model whose
        networks do not fit ``env``
    """
    keys = pickled_keys(path)
    reference = build_model(cfg, env, cfg.seed)  # the same classes, spaces and schedules, from config
    unknown = [k for k in keys if not hasattr(reference, k)]
    if unknown:
        raise ModelLoadError(
            f"{path} holds pickled objects lander does not load: {', '.join(unknown)}; refusing to unpickle them"
        )
    custom_objects: dict[str, Any] = {k: getattr(reference, k) for k in keys}
    try:
        return model_class(cfg).load(path, env=env, device=device or cfg.device, custom_objects=custom_objects)
    except (RuntimeError, ValueError, KeyError, AssertionError) as exc:
        raise ModelLoadError(
            f"{path} does not fit {cfg.env.id} with {cfg.algo.name}'s networks "
            f"({type(exc).__name__}: {str(exc).splitlines()[0]})"
        ) from exc
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ModelLoadError(f"{path} is not a readable SB3 model file ({type(exc).__name__}: {exc})") from exc
