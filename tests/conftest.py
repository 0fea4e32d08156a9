"""Fixtures; the helpers themselves are in ``tests/helpers/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import TINY_STEPS, tiny_run


@pytest.fixture(scope="session", params=list(TINY_STEPS))
def algo_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One tiny run per algorithm (W&B offline), shared by every test that takes this fixture."""
    algo = request.param
    run_dir = tmp_path_factory.mktemp(f"run_{algo}") / "run"
    tiny_run(run_dir, algo, "logger=wandb")
    return algo, run_dir
