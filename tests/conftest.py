"""Fixtures; the helpers themselves are in ``tests/helpers/``."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import TINY_STEPS, tiny_run


@pytest.fixture(scope="session", autouse=True)
def session_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Folders of pytest's own temporary directory (which keeps the last three sessions' only) for what the tests
    would otherwise leave in the machine's: the SB3 loggers the tests make without a folder (``configure(None,
    ...)``, and ``learn`` on a model with no logger set), which SB3 makes anew there each time; and ``TMPDIR`` of
    the tests and every process they start, where a process the tests kill or leave running at their end (a sweep
    job killed with its group, a run the service launched and still trains when the test ends it) leaves what it
    made there (``lander-job-*``, ``lander-service-*``, W&B's ``*wandb-media``)."""
    temporary = tmp_path_factory.mktemp("tmp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))
        patch.setenv("TMPDIR", str(temporary))
        patch.setattr(tempfile, "tempdir", str(temporary))  # found from TMPDIR once, at first use: this process's
        patch.delenv("WANDB_MODE", raising=False)  # logger.wandb.mode=null follows it: the tests' runs are offline
        yield


@pytest.fixture(scope="session", params=list(TINY_STEPS))
def algo_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One tiny run per algorithm (W&B offline), shared by every test that takes this fixture."""
    algo = request.param
    run_dir = tmp_path_factory.mktemp(f"run_{algo}") / "run"
    tiny_run(run_dir, algo, "logger=wandb", "log_grad_norm=true", video=True, report=True)  # the default config
    return algo, run_dir


# The files that take longest (pytest --durations on .ci/run), started first: with --no-loadscope-reorder the two
# workers take whole files in this order, so the short files fill the end of both instead of one long file running
# alone at the end. A file not listed runs after these, in collection order.
LONGEST_FIRST = [
    "test_sweep.py",
    "test_service.py",
    "test_faults.py",
    "test_service_security.py",
    "test_artifacts.py",
    "test_doc_commands.py",
    "test_hostile_input.py",
    "test_training_loop.py",
    "test_course_runs.py",
    "test_resume.py",
    "test_config.py",
    "test_sweep_faults.py",
    "test_course_presets.py",
    "test_sweep_rerun.py",
    "test_side_by_side.py",
    "test_side_by_side_sweep.py",
    "test_first_hour.py",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order is kept
