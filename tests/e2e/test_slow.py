"""Long runs, left out of the default suite: ``python -m pytest -m slow`` (about 5 minutes on 2 cores)."""

from __future__ import annotations

import pytest

from helpers import read_json, run_lander


@pytest.mark.slow
def test_default_ppo_solves_lunar_lander(tmp_path):
    """The README's first command, as is (W&B off): the final 20-episode evaluation mean reaches 200."""
    proc = run_lander(tmp_path / "run", "algo=ppo", "seed=0", "logger=none", "progress_bar=false", timeout=4 * 3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run/summary.json")
    assert summary["final_eval_mean"] >= 200 and summary["first_timestep_reaching_threshold"] is not None
