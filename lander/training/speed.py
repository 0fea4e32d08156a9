"""torch settings that make SB3's training cheaper and leave every number bit for bit the same.

Profiled on the default PPO run (BENCHMARKS.md), about 9% of the CPU went to two things that are not
learning: torch's per-parameter (single-tensor) optimizer loop, which is what torch uses on the CPU by
default, and ``torch.distributions`` checking its arguments on every distribution SB3 builds. The
``foreach`` optimizer update does the same arithmetic on the same tensors in fewer calls, and the
argument checks only raise errors. ``torch_fast_paths=false`` turns both off;
``tests/e2e/test_speed_paths.py`` compares runs with and without them, metrics and weights.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm


def fast_paths(cfg: DictConfig) -> bool:
    """``torch_fast_paths``; true for a run saved before the key existed (``resume=`` of an older run)."""
    return bool(cfg.get("torch_fast_paths", True))


def optimizers(model: BaseAlgorithm) -> list[torch.optim.Optimizer]:
    """Every torch optimizer of ``model``: the policy's, its actor's and critic's, SAC's entropy coefficient's."""
    found: dict[int, torch.optim.Optimizer] = {}
    for owner in (model, *model.policy.modules()):
        for value in vars(owner).values():
            if isinstance(value, torch.optim.Optimizer):
                found[id(value)] = value
    return list(found.values())


def use_foreach(model: BaseAlgorithm, enabled: bool = True) -> None:
    """Set torch's ``foreach`` update on every optimizer of ``model`` that has one (Adam, RMSprop, SGD...).

    Set again after a model is loaded: a saved optimizer state carries its own ``foreach`` value.
    """
    for optimizer in optimizers(model):
        if "foreach" in optimizer.defaults:
            for group in optimizer.param_groups:
                group["foreach"] = enabled or None  # None: torch's own choice (single-tensor on the CPU)


@contextmanager
def distribution_checks(enabled: bool) -> Iterator[None]:
    """``torch.distributions`` argument validation on or off for a block; the previous setting after it."""
    previous = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(enabled)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(previous)
