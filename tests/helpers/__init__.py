"""Helpers shared by the tests (``from helpers import ...``; pytest puts ``tests/`` on ``sys.path``)."""

from helpers.runs import (
    ALGO_TINY,
    REPO,
    TINY_STEPS,
    WALL_CLOCK,
    assert_same_results,
    composed,
    fake_run,
    lander,
    lander_env,
    policy_weights,
    read_json,
    run_lander,
    start_lander,
    tiny,
    tiny_run,
    wait_for_checkpoints,
)

__all__ = [
    "ALGO_TINY",
    "REPO",
    "TINY_STEPS",
    "WALL_CLOCK",
    "assert_same_results",
    "composed",
    "fake_run",
    "lander",
    "lander_env",
    "policy_weights",
    "read_json",
    "run_lander",
    "start_lander",
    "tiny",
    "tiny_run",
    "wait_for_checkpoints",
]
