"""Runs of different env counts are compared at their budgets: 16-env PPO, whose whole steps of 16 envs carry it
past a budget that is not a multiple of 16, beside 1-env A2C, which stops on it (real runs, real comparison)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

from helpers import lander, run_lander, tiny
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


def cartpole_sweep(sweep: Path, *overrides: str, seeds: str = "0,1") -> subprocess.CompletedProcess:
    """A sweep of ``seeds`` on CartPole with ``overrides`` into ``sweep``, which must succeed."""
    proc = lander("--multirun", *overrides, "env=cartpole", f"seed={seeds}", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


PRESET = """# @package _global_
total_timesteps: {steps}
eval:
  freq: {every}
"""


def test_runs_left_out_are_said_at_the_top_and_in_the_api_and_a_run_trained_further_by_its_budget(tmp_path) -> None:
    """Three runs: ``long`` and ``short``, of the user's presets (``./conf/experiment/``) of 2,048 steps evaluated
    first at 1,024 and of 512, and ``further`` trained to 512 and then further to 1,024 (``resume=...
    total_timesteps=1024``). The presets' budgets are theirs, not an override's: ``long`` and ``short`` are
    compared at their common budget, 512, where ``long`` has no evaluation: it is left out, and the report says so
    in its first lines (before: only at the bottom of report.md), as ``left_out.json`` and the service's API do.
    ``further`` is labelled with the budget it was trained to (before: its first command's 512), an override's:
    its budget is what it differs in, and it is compared at its own (:func:`lander.analysis.runset.budget_groups`)."""
    from lander.reports.sweep_report import compare
    from lander.service import store

    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    for name, steps, every in (("long", 2048, 1024), ("short", 512, 512)):
        (tmp_path / "conf" / "experiment" / f"{name}.yaml").write_text(PRESET.format(steps=steps, every=every))
    small = ["algo=ppo", "n_envs=2", "algo.model.n_steps=256", *tiny(None, 0, episodes=2, video=False, report=False)]
    small = [o for o in small if not o.startswith("eval.freq=")]  # the presets' and further's own
    for name, overrides in (
        ("long", ["experiment=long"]),
        ("short", ["experiment=short"]),
        ("further", ["total_timesteps=512", "eval.freq=512"]),
    ):
        proc = lander(*small, *overrides, f"hydra.run.dir={tmp_path / name}", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    further = lander(f"resume={tmp_path / 'further'}", "total_timesteps=1024")
    assert further.returncode == 0, further.stderr[-3000:]
    out = tmp_path / "comparison"
    found = compare([tmp_path / n for n in ("long", "further", "short")], out)
    labels = {run.path.name: label for label, runs in found.groups["lunar_lander"].items() for run in runs}
    assert "total_timesteps=1024" in labels["further"] and "experiment=short" in labels["short"], labels
    steps = {run.path.name: run.timesteps for runs in found.groups["lunar_lander"].values() for run in runs}
    assert steps == {"short": 512, "further": 1024}, steps  # further at its own budget
    assert found.budgets("lunar_lander") == [512, 1024]
    report = (out / "report.md").read_text().splitlines()
    assert "**1 of 3 runs not compared**" in "\n".join(report[:4]), report[:6]
    dropped = store.left_out(tmp_path, out)
    assert [(Path(r["run"]).name, r["why"]) for r in dropped] == [("long", "unevaluated")], dropped
    assert "1 of 3 runs not compared" in (out / "report.html").read_text()


def test_a_budget_sweep_compares_each_budget_at_its_own(tmp_path: Path) -> None:
    """``total_timesteps=1000,2000`` over two gammas (seed 0), evaluated every 500 steps: the budget is what the sweep
    compares, so the 2,000-step runs stand at 2,000 (before: at 1,000, the smaller budget, where they were a
    half-trained copy of the other configuration), and the two gammas of one budget at the same one. The table,
    report.md, the figures' marks and the sweep's last lines say where each was compared."""
    sweep = tmp_path / "sweep"
    budgets = ["total_timesteps=1000,2000", "gamma=0.9,0.99"]
    proc = cartpole_sweep(sweep, *tiny("a2c", 0, episodes=2), *budgets, seeds="0")
    found = analyse([sweep])
    assert found.budgets("cartpole") == [1000, 2000]
    for label, runs in found.groups["cartpole"].items():
        budget = 2000 if "total_timesteps=2000" in label else 1000
        assert [run.timesteps for run in runs] == [budget], label
        assert all(run.final_mean == float(run.eval["mean"].iloc[-1]) for run in runs)  # its evaluation there
        assert all(int(run.eval["timesteps"].max()) == budget for run in runs)  # its curve up to there
    table = pd.read_csv(sweep / "comparison" / "table.csv").set_index("config")["timesteps"].to_dict()
    assert table == {
        "gamma=0.9 total_timesteps=1000": 1000,
        "gamma=0.9 total_timesteps=2000": 2000,
        "gamma=0.99 total_timesteps=1000": 1000,
        "gamma=0.99 total_timesteps=2000": 2000,
    }, table
    report = (sweep / "comparison" / "report.md").read_text()
    assert "each budget's runs are compared at their own (1,000 and 2,000 timesteps)" in report, report
    assert "`total_timesteps=2000`: compared at **2,000 timesteps**" in report, report
    html = (sweep / "comparison" / "report.html").read_text()
    assert "compared at 1,000" in html and "compared at 2,000" in html  # a mark on the curves for each
    closing = "cartpole at 1,000 and 2,000 timesteps, each budget at its own"
    assert closing in proc.stdout + proc.stderr, proc.stderr[-3000:]


def test_runs_stopped_early_by_their_rule_stand_at_their_last_evaluation(tmp_path: Path) -> None:
    """A sweep of ``early_stop.reward_threshold=1,null`` on CartPole (a return is at least 8): the two runs with a
    threshold stop at their first evaluation, 500 steps; the two without train to the budget, 1,500. The budget is
    the one of the runs that trained on, and a run stopped by its rule is compared at the evaluation it stopped at,
    its result for any later budget (before: every run compared at 500 steps, the budget the first stop set, the
    runs that trained on cut back to where the others had stopped)."""
    sweep = tmp_path / "sweep"
    proc = cartpole_sweep(sweep, *tiny("a2c", 1500, episodes=2), "early_stop.reward_threshold=1,null")
    found = analyse([sweep])
    standing = {}
    for label, runs in found.groups["cartpole"].items():
        for run in runs:
            summary = run.summary
            assert run.final_mean == float(pd.read_csv(run.paths.eval_csv)["mean"].iloc[-1])  # its last evaluation
            standing[(label, run.seed)] = (run.timesteps, bool(summary["stopped_early"]), summary["timesteps"])
    stopped = {key: value for key, value in standing.items() if "reward_threshold=1" in key[0]}
    assert sorted(stopped.values()) == [(500, True, 500)] * 2, standing
    trained_on = {key: value for key, value in standing.items() if key not in stopped}
    assert sorted(trained_on.values()) == [(1500, False, 1500)] * 2, standing
    assert found.budgets("cartpole") == [1500]
    table = pd.read_csv(sweep / "comparison" / "table.csv").set_index("config")["timesteps"].to_dict()
    assert sorted(table.values()) == [500, 1500], table
    report = (sweep / "comparison" / "report.md").read_text()
    assert "Compared at **1,500 timesteps**" in report, report
    assert "2 run(s) stopped early by their stop rule" in report, report
    closing = "cartpole at 1,500 timesteps, 2 run(s) stopped early before it at their last evaluation"
    assert closing in proc.stdout + proc.stderr, proc.stderr[-3000:]  # the sweep's last lines say it too
