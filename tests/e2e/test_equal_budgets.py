"""Runs of different env counts are compared at their budgets: 16-env PPO, whose whole steps of 16 envs carry it
past a budget that is not a multiple of 16, beside 1-env A2C, which stops on it (real runs, real comparison)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from helpers import run_lander, tiny
from lander.analysis.comparison import analyse

BUDGET = 1000  # not a multiple of 16
COMMON = [*tiny(None, BUDGET, episodes=2, video=False, report=False), "seed=0"]


def test_runs_that_overshoot_are_compared_at_their_budget_evaluation(tmp_path: Path) -> None:
    ppo, a2c = tmp_path / "ppo", tmp_path / "a2c"
    for run_dir, overrides in (
        (ppo, ["algo=ppo", "n_envs=16", "algo.model.n_steps=64"]),
        (a2c, ["algo=a2c", "n_envs=1"]),
    ):
        proc = run_lander(run_dir, *overrides, *COMMON)
        assert proc.returncode == 0, proc.stderr[-3000:]
    ppo_evals = pd.read_csv(ppo / "metrics" / "eval.csv")["timesteps"].tolist()
    assert ppo_evals == [512, 1008, 1024], ppo_evals  # whole steps of 16 envs: 1008 is the budget's, 1024 the end
    assert pd.read_csv(a2c / "metrics" / "eval.csv")["timesteps"].tolist()[-1] == BUDGET
    found = analyse([ppo, a2c])
    steps = {run.path.name: run.timesteps for runs in found.groups["lunar_lander"].values() for run in runs}
    assert steps == {"ppo": 1008, "a2c": BUDGET}  # not PPO at 512 beside A2C at 1000
    table = found.tables["lunar_lander"].set_index("config")["timesteps"].to_dict()
    assert sorted(table.values()) == [BUDGET, 1008]  # each row says where it was compared
