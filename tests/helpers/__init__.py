"""Helpers shared by the tests (``from helpers import ...``; pytest puts ``tests/`` on ``sys.path``)."""

from helpers.runs import (
    QUICK,
    REPO,
    TINY,
    TINY_SWEEP,
    WALL_CLOCK,
    assert_same_results,
    composed,
    lander,
    lander_env,
    policy_weights,
    read_json,
    run_lander,
    tiny_run,
)

__all__ = [
    "QUICK",
    "REPO",
    "TINY",
    "TINY_SWEEP",
    "WALL_CLOCK",
    "assert_same_results",
    "composed",
    "lander",
    "lander_env",
    "policy_weights",
    "read_json",
    "run_lander",
    "tiny_run",
]
