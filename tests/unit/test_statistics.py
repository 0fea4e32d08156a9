"""The comparison's statistics, in-process and without training: rliable 1.2.0's reference values
(``fixtures/rliable``), scipy's tests, Holm and power against statsmodels, and the comparison of run directories
written here with known scores (equal budgets, duplicates, few seeds, bad input)."""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import fake_run
from lander.analysis import statistics as st
from lander.analysis.curves import mean_curve, pooled_curve
from lander.compare import main as compare_main
from lander.errors import RunSetError
from lander.reports.sweep_report import compare
from lander.storage.rundir import RunPaths, Status

REFERENCE = json.loads((Path(__file__).parents[1] / "fixtures/rliable/reference.json").read_text())
SEED, REPS = REFERENCE["seed"], REFERENCE["reps"]


@pytest.mark.parametrize("name", sorted(REFERENCE["scores"]))
def test_mean_iqm_and_profile_intervals_equal_rliables(name: str) -> None:
    ref = REFERENCE["scores"][name]
    scores = np.array(ref["scores"])
    for metric, key in ((st.aggregate_mean, "mean"), (st.aggregate_iqm, "iqm")):
        point, low, high = st.interval(scores, metric, REPS, SEED)
        assert [point, low, high] == pytest.approx([ref[key][0], *np.ravel(ref[f"{key}_ci"])], abs=1e-9)
    point, low, high = st.interval(
        scores, lambda s: st.performance_profile(s, REFERENCE["taus"]), REFERENCE["profile_reps"], SEED
    )
    assert point.tolist() == pytest.approx(ref["profile"]) and low.tolist() == pytest.approx(ref["profile_ci"][0])
    assert high.tolist() == pytest.approx(ref["profile_ci"][1])


def test_the_issues_three_seed_interval_spans_the_seed_means() -> None:
    ref = REFERENCE["scores"]["a2c_3_seeds"]
    _, low, high = st.interval(np.array(ref["scores"]), st.aggregate_mean)
    assert (low, high) == (-3725.0, -889.0)  # over runs; pooling episodes gave [-2796, -1581]


@pytest.mark.parametrize("name", sorted(REFERENCE["pairs"]))
def test_probability_of_improvement_and_its_interval_equal_rliables(name: str) -> None:
    ref = REFERENCE["pairs"][name]
    x, y = np.array(ref["x"]), np.array(ref["y"])
    assert st.interval_of_improvement(x, y, REPS, SEED) == pytest.approx(
        [ref["probability_of_improvement"], *ref["ci"]], abs=1e-12
    )
    if x.shape[1] == 1:  # the Mann-Whitney U statistic over all pairs, as scipy computes it
        u = stats.mannwhitneyu(x[:, 0], y[:, 0], alternative="greater").statistic
        assert st.probability_of_improvement(x, y) == pytest.approx(u / (len(x) * len(y)))


def test_holm_and_power_equal_statsmodels() -> None:
    assert st.holm(REFERENCE["holm"]["p"]) == pytest.approx(REFERENCE["holm"]["adjusted"])
    adjusted = st.holm([0.04, float("nan"), 0.01])
    assert np.isnan(adjusted[1]) and adjusted[0] == pytest.approx(0.04) and adjusted[2] == pytest.approx(0.02)
    ref = REFERENCE["power"]
    for d, two_sample, paired in zip(ref["effect_sizes"], ref["two_sample_n"], ref["paired_n"], strict=True):
        assert st.required_n(d, paired=False) == pytest.approx(two_sample, rel=1e-6)
        assert st.required_n(d, paired=True) == pytest.approx(paired, rel=1e-6)
    assert st.required_n(0.0, paired=False) == float("inf") and st.required_n(0.01, paired=True) == float("inf")


def test_paired_test_when_seeds_are_shared_welch_otherwise() -> None:
    x, base = {0: 10.0, 1: 12.0, 2: 15.0, 3: 11.0}, {0: 9.0, 1: 11.5, 2: 13.0, 3: 10.0}
    paired = st.versus_baseline(x, base)
    assert paired["test"] == "paired t"
    assert paired["p_value"] == pytest.approx(stats.ttest_rel(list(x.values()), list(base.values())).pvalue)
    shifted = {seed + 10: value for seed, value in base.items()}
    welch = st.versus_baseline(x, shifted)
    assert welch["test"] == "Welch t"
    assert welch["p_value"] == pytest.approx(
        stats.ttest_ind(list(x.values()), list(base.values()), equal_var=False).pvalue
    )
    pooled_sd = np.sqrt((np.var(list(x.values()), ddof=1) + np.var(list(base.values()), ddof=1)) / 2)
    assert welch["cohens_d"] == pytest.approx((np.mean(list(x.values())) - np.mean(list(base.values()))) / pooled_sd)
    assert paired["p_value"] < welch["p_value"]  # the shared seeds remove the between-seed spread
    single = st.versus_baseline({0: 1.0}, base)
    assert single["test"] == "" and np.isnan(single["p_value"])


def test_identical_scores_on_every_seed_are_no_evidence_of_a_difference() -> None:
    """Two configurations that both score 500 on every seed (CartPole solved by both, a common first comparison):
    no difference, p = 1 (the t statistic is 0/0: the table's p column was empty beside "paired t", and Holm's
    adjustment left it out); a constant nonzero difference stays SciPy's p = 0."""
    solved = dict.fromkeys(range(4), 500.0)
    for baseline in (dict(solved), {seed + 10: 500.0 for seed in range(3)}):  # paired; Welch
        same = st.versus_baseline(solved, baseline)
        assert same["p_value"] == 1.0 and same["diff"] == 0.0 and same["test"] in ("paired t", "Welch t")
    spread = {seed: 100.0 * seed for seed in range(4)}  # the same score seed by seed, seeds apart
    assert st.versus_baseline(spread, dict(spread))["p_value"] == 1.0
    better = st.versus_baseline(dict.fromkeys(range(4), 510.0), solved)
    assert better["p_value"] == 0.0


# --- run directories with known scores ---------------------------------------------------------------------


def test_configurations_that_share_the_highest_mean_are_named_tied(tmp_path: Path) -> None:
    """A tie for the highest final mean names every configuration in it (the first of them was named highest)."""
    for seed in range(2):
        for config, score in (("algo=ppo", 5.0), ("algo=a2c", 5.0), ("algo=dqn", 1.0)):
            fake_run(tmp_path, f"{config[5:]}{seed}", [config], seed, {1000: score + seed})
    compare([tmp_path], tmp_path / "out")
    report = (tmp_path / "out/report.md").read_text()
    line = next(line for line in report.splitlines() if line.startswith("Highest final mean on lunar: "))
    assert line.endswith(", tied (5.5).") and "**algo=ppo**" in line and "**algo=a2c**" in line and "dqn" not in line


def test_configurations_are_compared_at_the_timestep_all_runs_reached(tmp_path: Path) -> None:
    for seed in range(3):  # "ppo" overshoots its 20k budget to 32768 (rollouts of 16384); "a2c" stops at 20000
        fake_run(tmp_path, f"p{seed}", ["algo=ppo"], seed, {16384: 10.0 + seed, 32768: 100.0 + seed})
        fake_run(tmp_path, f"a{seed}", ["algo=a2c"], seed, {10000: 5.0, 20000: 50.0 + 2 * seed})
    result = compare([tmp_path], tmp_path / "out", baseline="algo=ppo")
    table = result.table.set_index("config")
    assert table.loc["algo=ppo", "timesteps"] == 16384 and table.loc["algo=ppo", "final_mean"] == pytest.approx(11.0)
    assert table.loc["algo=a2c", "timesteps"] == 20000 and table.loc["algo=a2c", "final_mean"] == pytest.approx(52.0)
    assert table.loc["algo=a2c", "test"] == "paired t" and table.loc["algo=a2c", "prob_improvement"] == 1.0
    report = (tmp_path / "out/report.md").read_text()
    assert "Compared at **20,000 timesteps**" in report and "3 run(s) went further (up to 32,768" in report
    at = compare([tmp_path], tmp_path / "at", at_timesteps=32768).table
    assert list(at["config"]) == ["algo=ppo"] and at["final_mean"].iloc[0] == pytest.approx(101.0)


def test_a_run_stopped_early_stands_at_its_last_evaluation_in_the_table_and_the_curve(tmp_path: Path) -> None:
    """Seed 0 of ``gamma=0.9`` stopped by its rule at 20k (200.0), its other seed trained to 40k: the table and the
    curve count seed 0 at 200.0 past 20k (before: the budget was 20k for every run, and the curve's mean past 20k
    was seed 1's alone). A comparison asked at 40k counts it too; where every run stopped early, each stands at
    its last evaluation."""
    fake_run(tmp_path, "x0", ["gamma=0.9"], 0, {10000: 100.0, 20000: 200.0}, stopped_early="eval mean 200.0 reached")
    fake_run(tmp_path, "x1", ["gamma=0.9"], 1, {10000: 50.0, 20000: 60.0, 30000: 70.0, 40000: 80.0})
    for seed in range(2):
        fake_run(tmp_path, f"y{seed}", ["gamma=0.99"], seed, {20000: 10.0, 40000: 20.0 + seed})
    result = compare([tmp_path], tmp_path / "out")
    table = result.table.set_index("config")
    assert table.loc["gamma=0.9", "final_mean"] == pytest.approx(140.0)  # (200 + 80) / 2, at 40k
    assert table.loc["gamma=0.99", "timesteps"] == 40000 and result.budgets("lunar") == [40000]
    curve = mean_curve(result.groups["lunar"]["gamma=0.9"]).set_index("timesteps")
    assert curve.loc[40000, "mean"] == pytest.approx(140.0) and curve.loc[40000, "n_seeds"] == 2
    assert curve.loc[30000, "mean"] == pytest.approx(135.0)  # (200 + 70) / 2
    for run in result.groups["lunar"]["gamma=0.9"]:  # two episodes an evaluation, each at the evaluation's mean
        rows = [(t, m + d) for t, m in zip(run.eval["timesteps"], run.eval["mean"], strict=True) for d in (-1, 1)]
        pd.DataFrame(rows, columns=["timesteps", "return"]).to_csv(run.paths.eval_episodes, index=False)
    pooled = pooled_curve(result.groups["lunar"]["gamma=0.9"]).set_index("timesteps")
    assert list(pooled.index) == [10000, 20000, 30000, 40000] and set(pooled["n_episodes"]) == {4}
    assert pooled.loc[30000, "mean"] == pytest.approx(135.0) and pooled.loc[40000, "n_seeds"] == 2
    report = (tmp_path / "out/report.md").read_text()
    assert "Compared at **40,000 timesteps**" in report and "1 run(s) stopped early by their stop rule" in report
    assert f"`{tmp_path / 'x0'}` at 20,000 (eval mean 200.0 reached)" in report
    at = compare([tmp_path], tmp_path / "at", at_timesteps=30000).table.set_index("config")
    assert at.loc["gamma=0.9", "final_mean"] == pytest.approx(135.0) and at.loc["gamma=0.9", "seeds"] == 2
    before = compare([tmp_path], tmp_path / "before", at_timesteps=15000).table.set_index("config")
    assert before.loc["gamma=0.9", "final_mean"] == pytest.approx(75.0)  # x0 at 15k: its 10k evaluation
    assert "stopped early" not in (tmp_path / "before/report.md").read_text()
    for name in ("x1", "y0", "y1"):
        shutil.rmtree(tmp_path / name)
    fake_run(tmp_path, "z0", ["gamma=0.9"], 1, {10000: 5.0}, stopped_early="no new best eval mean in 3 evaluations")
    alone = compare([tmp_path / "x0", tmp_path / "z0"], tmp_path / "alone")
    assert alone.table["final_mean"].iloc[0] == pytest.approx(102.5) and alone.budgets("lunar") == [20000]


def test_configurations_that_differ_in_their_budget_are_each_compared_at_their_own(tmp_path: Path) -> None:
    """Runs whose overrides set budgets of 20k (``total_timesteps=``) and 40k (``algo.total_timesteps=``) and runs
    with none (the algorithm's own, here 30k): three budget groups, each at its own common budget, the smallest
    first (before: every run at 20k). ``at_timesteps`` still puts every run at the one asked for."""
    for seed in range(2):
        fake_run(tmp_path, f"a{seed}", ["total_timesteps=20000"], seed, {10000: 1.0, 20000: 2.0 + seed})
        fake_run(tmp_path, f"b{seed}", ["algo.total_timesteps=40000"], seed, {20000: 3.0, 40000: 4.0 + seed})
        fake_run(tmp_path, f"c{seed}", ["gamma=0.9"], seed, {10000: 5.0, 30000: 6.0 + seed})
    result = compare([tmp_path], tmp_path / "out")
    assert result.budgets("lunar") == [20000, 30000, 40000]
    assert [list(group) for _, group in result.budget_groups("lunar")] == [
        ["total_timesteps=20000"],
        ["gamma=0.9"],
        ["algo.total_timesteps=40000"],
    ]
    table = result.table.set_index("config")
    assert table["timesteps"].to_dict() == {
        "total_timesteps=20000": 20000,
        "algo.total_timesteps=40000": 40000,
        "gamma=0.9": 30000,
    }
    assert table.loc["algo.total_timesteps=40000", "final_mean"] == pytest.approx(4.5)
    report = (tmp_path / "out/report.md").read_text()
    assert "compared at their own (20,000, 30,000 and 40,000 timesteps)" in report, report
    assert "Without a budget override: compared at **30,000 timesteps**" in report, report
    at = compare([tmp_path], tmp_path / "at", at_timesteps=20000)
    assert at.budgets("lunar") == [20000] and set(at.table["timesteps"]) == {10000, 20000}
    assert "differ in their budget" not in (tmp_path / "at/report.md").read_text()


def test_a_run_not_evaluated_by_the_common_timestep_is_listed_not_compared(tmp_path: Path) -> None:
    fake_run(tmp_path, "final_only", ["algo=ppo"], 0, {50000: 200.0})  # eval.freq=0: only its final evaluation
    for seed in range(2):
        fake_run(tmp_path, f"short{seed}", ["algo=a2c"], seed, {10000: 1.0, 20000: 2.0})
    result = compare([tmp_path], tmp_path / "out")
    assert list(result.table["config"]) == ["algo=a2c"]
    assert [r.path.name for r in result.left_out["unevaluated"]] == ["final_only"]
    report = (tmp_path / "out/report.md").read_text()
    assert "## Runs with no evaluation at or before" in report and "(compared timestep 20,000)" in report


def test_a_duplicated_run_counts_once_and_is_listed(tmp_path: Path) -> None:
    for seed in range(2):
        fake_run(tmp_path, f"x{seed}", ["gamma=0.9"], seed, {100: 1.0 + seed})
        fake_run(tmp_path, f"y{seed}", ["gamma=0.99"], seed, {100: 3.0 + seed})
    again = fake_run(tmp_path, "y1_again", ["gamma=0.99"], 1, {100: 9.0})  # the same configuration and seed
    os.utime(again / "summary.json", (2e9, 2e9))  # ... finished later
    result = compare([tmp_path], tmp_path / "out")
    table = result.table.set_index("config")
    assert table.loc["gamma=0.99", "seeds"] == 2 and table.loc["gamma=0.99", "final_mean"] == pytest.approx(6.0)
    assert [(r.path.name, kept.path.name) for r, kept in result.left_out["duplicates"]] == [("y1", "y1_again")]
    assert "duplicates not counted: 1" in (tmp_path / "out/report.md").read_text()


def test_one_seed_gets_no_interval_test_or_improvement_and_says_so(tmp_path: Path) -> None:
    fake_run(tmp_path, "a", ["gamma=0.9"], 0, {100: 1.0})
    for seed in range(3):
        fake_run(tmp_path, f"b{seed}", ["gamma=0.99"], seed, {100: 2.0 + seed})
    result = compare([tmp_path], tmp_path / "out", baseline="gamma=0.99")
    row = result.table.set_index("config").loc["gamma=0.9"]
    assert row["seeds"] == 1 and row["test"] == ""
    assert all(np.isnan(row[c]) for c in ("sem", "ci95_low", "ci95_high", "p_value", "prob_improvement"))
    report = (tmp_path / "out/report.md").read_text()
    assert "`gamma=0.9`: n=1 seed, so no interval" in report and "`gamma=0.99`: only 3 seeds" in report


def test_few_seeds_report_how_many_the_difference_would_need(tmp_path: Path) -> None:
    for seed, (a, b) in enumerate([(10.0, 11.0), (14.0, 16.5), (12.0, 12.5)]):
        fake_run(tmp_path, f"a{seed}", ["lr=1"], seed, {100: a})
        fake_run(tmp_path, f"b{seed}", ["lr=2"], seed, {100: b})
    row = compare([tmp_path], tmp_path / "out").table.set_index("config").loc["lr=2"]
    diffs = np.array([1.0, 2.5, 0.5])
    assert row["seeds_needed"] == np.ceil(st.required_n(diffs.mean() / diffs.std(ddof=1), paired=True))
    assert f"would need about {int(row['seeds_needed'])} seeds" in (tmp_path / "out/report.md").read_text()


@pytest.mark.parametrize("seeds", [(0, 1, 2), (10, 11, 12)], ids=["paired", "welch"])
def test_a_difference_every_seed_shows_alike_is_not_called_too_small_to_detect(tmp_path: Path, seeds) -> None:
    """Scores without spread that differ from the baseline's (a deterministic env: FrozenLake's success rate 1.0
    on every seed against 0.0, CartPole's 500 against 200): the test says p = 0, and the note said the difference
    was "too small to detect with 1000 seeds" (the standardised effect, a difference over a spread of 0, was
    taken for none). Two seeds show it; SciPy's warning of a moment computed from equal values is not printed."""
    for seed, other in zip(range(3), seeds, strict=True):
        fake_run(tmp_path, f"a{seed}", ["lr=1"], seed, {100: 0.0})
        fake_run(tmp_path, f"b{other}", ["lr=2"], other, {100: 1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy's RuntimeWarning "Precision loss ... nearly identical" raised
        row = compare([tmp_path], tmp_path / "out").table.set_index("config").loc["lr=2"]
    assert row["p_value"] == 0.0 and row["seeds_needed"] == 2
    report = (tmp_path / "out/report.md").read_text()
    assert "too small to detect" not in report and "would need about 2 seeds per configuration" in report
    # three seeds alike: their interval is a point, not "wide"
    assert "`lr=2`: only 3 seeds, each scoring 1: the interval over seeds is that point" in report
    assert "interval over seeds is wide" not in report


def test_holm_adjusts_the_configurations_tested_against_one_baseline(tmp_path: Path) -> None:
    for seed in range(4):
        for i, name in enumerate(("base", "c1", "c2")):
            fake_run(tmp_path, f"{name}{seed}", [f"x={name}"], seed, {100: i * (1 + seed % 2) + seed * 0.3})
    table = compare([tmp_path], tmp_path / "out").table
    assert table["p_holm"].tolist()[1:] == pytest.approx(st.holm(table["p_value"].tolist()[1:]))
    assert all(table["p_holm"].iloc[1:] >= table["p_value"].iloc[1:])


def test_a_grid_over_envs_gets_a_stratified_improvement_across_envs(tmp_path: Path) -> None:
    scores = {
        ("cart", "a"): [1.0, 2.0, 3.0],
        ("cart", "b"): [2.5, 2.0, 4.0],
        ("lunar", "a"): [-100.0, 50.0, 20.0],
        ("lunar", "b"): [80.0, 60.0, -10.0],
    }
    for (env, config), values in scores.items():
        for seed, value in enumerate(values):
            fake_run(tmp_path, f"{env}{config}{seed}", [f"env={env}", f"x={config}"], seed, {10: value}, env=env)
    result = compare([tmp_path], tmp_path / "out")
    assert sorted(result.table["env"].unique()) == ["cart", "lunar"]
    row = pd.read_csv(tmp_path / "out/across_envs.csv").iloc[0]
    x = np.array([scores["cart", "b"], scores["lunar", "b"]]).T  # runs x envs, as rliable takes them
    y = np.array([scores["cart", "a"], scores["lunar", "a"]]).T
    assert row["config"] == "x=b" and [
        row["prob_improvement"],
        row["prob_improvement_ci95_low"],
        row["prob_improvement_ci95_high"],
    ] == pytest.approx(st.interval_of_improvement(x, y))
    assert "## Across envs" in (tmp_path / "out/report.md").read_text()


@pytest.mark.parametrize("common", [[], ["total_timesteps=256"]])
def test_one_configuration_swept_over_envs_is_compared_in_each(tmp_path: Path, common: list[str]) -> None:
    # `--multirun env=lunar_lander,cartpole seed=0,1`: one configuration an env, named alike in each (its env
    # left out of its name, as in a grid); it was named by every override in each env, the first env's name the
    # baseline of the second, which had no such configuration (a KeyError, and the sweep had no comparison)
    for env in ("cart", "lunar"):
        for seed in range(2):
            fake_run(tmp_path, f"{env}{seed}", [f"env={env}", *common], seed, {10: seed + len(env)}, env=env)
    table = compare([tmp_path], tmp_path / "out").table
    assert table["env"].tolist() == ["cart", "lunar"]
    assert table["config"].tolist() == [" ".join(common) or "default"] * 2
    assert table["final_mean"].tolist() == [4.5, 5.5]


def test_a_grid_over_envs_whose_baseline_failed_in_one_env_is_compared_there_against_its_first(
    tmp_path: Path,
) -> None:
    # the grid's first configuration (the baseline) failed in lunar: lunar's rows are tested against its next one
    for env in ("cart", "lunar"):
        for seed in range(2):
            status = Status.FAILED if env == "lunar" else Status.COMPLETED
            fake_run(tmp_path, f"{env}a{seed}", [f"env={env}", "x=a"], seed, {10: 1.0}, env=env, status=status)
            fake_run(tmp_path, f"{env}b{seed}", [f"env={env}", "x=b"], seed, {10: 2.0 + seed}, env=env)
            fake_run(tmp_path, f"{env}c{seed}", [f"env={env}", "x=c"], seed, {10: 3.0 + seed}, env=env)
    table = compare([tmp_path], tmp_path / "out").table.set_index(["env", "config"])
    assert table.loc[("cart", "x=b"), "baseline"] == "x=a"
    assert table.loc[("lunar", "x=c"), "baseline"] == "x=b"
    assert table.loc[("lunar", "x=c"), "diff"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda d: fake_run(d, "a", [], 0, {1: 1.0}, status=Status.FAILED), "no run under"),
        (  # stopped by their user: they were counted as failed
            lambda d: [fake_run(d, str(s), [], s, {1: 1.0}, status=Status.INTERRUPTED) for s in (0, 1)],
            "nothing to compare: 2 run(s), 2 interrupted, 0 not finished",
        ),
        (
            lambda d: [fake_run(d, "a", ["env=x"], 0, {1: 1.0}, env="x"), fake_run(d, "b", ["algo=q"], 0, {1: 1.0})],
            "runs of different envs mixed",
        ),
        (
            lambda d: fake_run(d, "a", [], 0, {1: 1.0}).joinpath("metrics/eval.csv").write_text("timesteps,mean\n1,"),
            "metrics/eval.csv lacks the column",
        ),
        (lambda d: fake_run(d, "a", [], 0, {1: 1.0}).joinpath("metrics/eval.csv").unlink(), "missing or empty"),
        (
            lambda d: fake_run(d, "a", [], 0, {1: 1.0}).joinpath(".hydra/config.yaml").write_text("seed: [1"),
            ".hydra/config.yaml cannot be read",
        ),
    ],
    ids=["no-finished-run", "interrupted-runs", "mixed-envs", "corrupt-eval-csv", "missing-eval-csv", "corrupt-config"],
)
def test_bad_input_is_named_and_nothing_is_written(tmp_path: Path, make, message: str) -> None:
    make(tmp_path / "runs")
    with pytest.raises(RunSetError, match=re.escape(message)):
        compare([tmp_path / "runs"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_lander_report_of_runs_it_cannot_compare_writes_their_reports_and_says_why(tmp_path: Path, caplog) -> None:
    """``python -m lander.report <folder>`` of runs it cannot compare (of two envs; a killed sweep's, none
    finished): it wrote every run's report silently (none listed), then the comparison's refusal, exit 2, as if
    nothing had been written. Now the reports are listed, one line says there is no comparison and why, exit 1."""
    from lander.report import main as report_main

    runs = [fake_run(tmp_path, "a", ["env=x"], 0, {1: 1.0}, env="x"), fake_run(tmp_path, "b", ["algo=q"], 0, {1: 1.0})]
    assert report_main([str(tmp_path)]) == 1
    assert f"{tmp_path}: its runs' reports are written, no comparison: runs of different envs mixed" in caplog.text
    assert all((run / "report.html").is_file() for run in runs) and not (tmp_path / "comparison").exists()
    killed = [fake_run(tmp_path / "sweep", str(s), [], s, {1: 1.0}, status=Status.INTERRUPTED) for s in (0, 1)]
    assert report_main([str(tmp_path / "sweep")]) == 1 and "nothing to compare" in caplog.text
    assert all((run / "report.html").is_file() for run in killed)
    assert report_main([str(runs[0])]) == 0  # a run alone: its report


def test_lander_report_keeps_a_comparison_folder_of_ones_own(tmp_path: Path, caplog) -> None:
    """``python -m lander.report <folder of runs>`` wrote its comparison into ``<folder>/comparison/`` whatever was
    there: a user's ``comparison/report.md`` was replaced (``lander.compare`` refused that folder). Now the runs'
    reports are written, one line says why there is no comparison and how to write it, exit 1, the folder as it
    was; an earlier comparison's folder is written anew as before."""
    from lander.report import main as report_main

    runs = [fake_run(tmp_path, f"a{seed}", ["gamma=0.9"], seed, {100: 1.0 + seed}) for seed in range(2)]
    mine = tmp_path / "comparison" / "report.md"
    mine.parent.mkdir()
    mine.write_text("my notes\n")
    assert report_main([str(tmp_path)]) == 1
    said = f"{tmp_path}: its runs' reports are written, no comparison: {mine.parent} holds files of its own (report.md)"
    assert said in caplog.text and f"python -m lander.compare {tmp_path} --out <a new" in caplog.text
    assert mine.read_text() == "my notes\n" and sorted(p.name for p in mine.parent.iterdir()) == ["report.md"]
    assert all((run / "report.html").is_file() for run in runs)
    from lander.api import load_sweep

    with pytest.raises(RunSetError, match=f"^{re.escape(str(mine.parent))} holds files of its own \\(report.md\\)"):
        load_sweep(tmp_path).report()  # the API's the same
    assert sorted(p.name for p in mine.parent.iterdir()) == ["report.md"]
    mine.unlink()
    assert report_main([str(tmp_path)]) == 0 and (tmp_path / "comparison" / "table.csv").is_file()
    assert report_main([str(tmp_path)]) == 0  # its own comparison, written anew


def test_the_apis_report_is_the_comparison_it_was_loaded_as(tmp_path: Path) -> None:
    """``load_sweep(path, baseline=..., at_timesteps=...).report()`` wrote ``comparison/`` against the first
    configuration at the common budget, whatever ``sweep.table`` showed: the report is now the table's."""
    from lander.api import load_sweep

    for seed in range(2):
        fake_run(tmp_path, f"a{seed}", ["gamma=0.9"], seed, {100: 1.0 + seed, 200: 5.0 + seed})
        fake_run(tmp_path, f"b{seed}", ["gamma=0.99"], seed, {100: 2.0 + seed, 200: 3.0 + seed})
    sweep = load_sweep(tmp_path, baseline="gamma=0.99", at_timesteps=100)
    written = pd.read_csv(sweep.report().parent / "table.csv")
    assert list(written["baseline"]) == ["gamma=0.99"] * 2 and list(written["timesteps"]) == [100, 100]
    assert written.set_index("config")["diff"].to_dict() == pytest.approx(
        {"gamma=0.99": np.nan, "gamma=0.9": -1.0}, nan_ok=True
    )
    assert "Baseline: `gamma=0.99`" in (tmp_path / "comparison/report.md").read_text()
    for wrong in (0, -5):  # "no run ... was evaluated by -5 timesteps": the CLI's rule for --at-timesteps, said so
        with pytest.raises(RunSetError, match=f"^at_timesteps={wrong}: must be a number of timesteps >= 1$"):
            load_sweep(tmp_path, at_timesteps=wrong)


def test_a_sweeps_comparison_written_anew_is_the_one_its_end_wrote(tmp_path: Path, caplog) -> None:
    """``python -m lander.report <sweep>`` ("the sweep's comparison anew") and ``lander.compare <sweep>`` compared
    against the first configuration with the seeds' band, whatever the sweep was configured with: a
    ``gamma_sweep``'s table (``baseline=gamma=0.99``) was rewritten against gamma=0.98, a ``qcritic`` sweep's
    episode bands (``comparison_band=episodes``) redrawn over seeds. The runs' own ``baseline``,
    ``comparison_band`` and ``x_axis`` are now the defaults; flags still win."""
    import yaml

    from lander.report import main as report_main

    for seed in range(2):
        for gamma in (0.98, 0.99):
            run = fake_run(tmp_path, f"{gamma}_{seed}", [f"gamma={gamma}"], seed, {100: gamma + seed})
            config = RunPaths(run).config
            saved = yaml.safe_load(config.read_text()) | {"baseline": "gamma=0.99", "comparison_band": "episodes"}
            config.write_text(yaml.safe_dump(saved))
    assert report_main([str(tmp_path)]) == 0
    assert set(pd.read_csv(tmp_path / "comparison/table.csv")["baseline"]) == {"gamma=0.99"}
    assert "s.e. over all evaluation episodes" in (tmp_path / "comparison/report.html").read_text()
    assert compare_main([str(tmp_path), "--baseline", "gamma=0.98", "--band", "seeds"]) == 0
    assert set(pd.read_csv(tmp_path / "comparison/table.csv")["baseline"]) == {"gamma=0.98"}
    assert "95% bootstrap CI over seeds" in (tmp_path / "comparison/report.html").read_text()
    config.write_text(yaml.safe_dump(saved | {"baseline": "gamma=0.5"}))  # one run says another: the first
    assert compare_main([str(tmp_path)]) == 0 and "not a configuration" not in caplog.text
    assert set(pd.read_csv(tmp_path / "comparison/table.csv")["baseline"]) == {"gamma=0.98"}


def test_the_apis_run_figures_are_drawn_as_its_report_draws_them(tmp_path: Path) -> None:
    """``load_run(run).figures()`` of a run configured ``x_axis=episodes`` (the ``reinforce_cartpole`` preset's)
    drew its returns against timesteps, where its ``report.html`` draws them against training episodes."""
    import yaml

    from lander.api import load_run

    run = fake_run(tmp_path, "a", [], 0, {100: 1.0, 200: 2.0})
    config = RunPaths(run).config
    config.write_text(yaml.safe_dump(yaml.safe_load(config.read_text()) | {"x_axis": "episodes"}))
    (run / "metrics/train_episodes.csv").write_text("timesteps,episode,return,length,wall_time\n50,1,-3,50,0.1\n")
    assert load_run(run).figures()["returns"].layout.xaxis.title.text == "training episodes"
    assert load_run(run).figures("timesteps")["returns"].layout.xaxis.title.text == "timesteps"


def test_a_figure_with_nothing_recorded_says_so_without_empty_axes(tmp_path: Path) -> None:
    """A run too short for a resource sample (1,024 steps: ``metrics/resources.csv`` holds its header only) showed
    "Speed and memory: nothing recorded" above an empty 450 px plot with axes from -1 to 6."""
    from lander.api import load_run

    run = fake_run(tmp_path, "a", [], 0, {100: 1.0, 200: 2.0})
    (run / "metrics/resources.csv").write_text("timesteps,steps_per_second,rss_mb,wall_time\n")
    speed = load_run(run).figures()["speed"]
    assert speed.layout.title.text == "Speed and memory: nothing recorded"
    assert speed.layout.xaxis.visible is False and speed.layout.yaxis.visible is False and speed.layout.height <= 120


def test_the_command_line_names_a_baseline_that_is_not_there(tmp_path: Path, caplog) -> None:
    for seed in range(2):
        fake_run(tmp_path / "runs", f"a{seed}", ["gamma=0.9"], seed, {100: 1.0})
        fake_run(tmp_path / "runs", f"b{seed}", ["gamma=0.99"], seed, {100: 2.0})
    code = compare_main([str(tmp_path / "runs"), "--baseline", "gamma=0.5"])  # `python -m lander.compare ...`
    assert code == 2 and "baseline='gamma=0.5' is not a configuration of lunar" in caplog.text
    assert "gamma=0.9, gamma=0.99" in caplog.text and not (tmp_path / "runs/comparison").exists()


def test_the_comparison_is_written_only_where_it_replaces_nothing_but_a_comparison(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """``--out`` a run's directory replaced that run's ``report.html`` with the comparison's; ``--out`` a folder of
    a user's own files (``report.md``) replaced those; ``--out`` a folder in a run, or runs compared from inside a
    run's directory (``comparisons/`` there), wrote a comparison into that run. Each is refused in one line, exit 2,
    every byte kept; a new or empty directory, an earlier comparison's and the service's (``inputs.json``) are
    written."""
    for seed in range(2):
        fake_run(tmp_path / "runs", f"a{seed}", ["gamma=0.9"], seed, {100: 1.0 + seed})
        fake_run(tmp_path / "runs", f"b{seed}", ["gamma=0.99"], seed, {100: 2.0 + seed})
    run = tmp_path / "runs" / "a0"
    (run / "report.html").write_text("the run's own report")
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "report.md").write_text("my notes")
    inside = f"is inside the run {run}: a run's directory holds that run's files only; give --out <a directory"
    for out, named, where in (
        (run, inside, tmp_path),
        (run / "comparison", inside, tmp_path),
        (None, inside, run),  # from the run's directory: comparisons/ there
        (mine, "holds files of its own (report.md) and is not a comparison's directory", tmp_path),
    ):
        before = {p: p.read_bytes() for p in run.parent.parent.rglob("*") if p.is_file()}
        monkeypatch.chdir(where)
        with pytest.raises(SystemExit) as refused:
            compare_main([str(run), str(tmp_path / "runs" / "b0")] + ([] if out is None else ["--out", str(out)]))
        assert refused.value.code == 2
        said = capsys.readouterr().err
        assert f"{'comparisons/ (the default --out)' if out is None else f'--out {out}'} {named}" in said, said
        assert {p: p.read_bytes() for p in run.parent.parent.rglob("*") if p.is_file()} == before
    monkeypatch.chdir(tmp_path)
    service = tmp_path / "service"
    service.mkdir()
    (service / "inputs.json").write_text("[]")
    for out in (tmp_path / "new", tmp_path / "new", service):  # new, then an earlier comparison's, then the service's
        assert compare_main([str(tmp_path / "runs"), "--out", str(out)]) == 0
        assert "gamma=0.99" in (out / "table.csv").read_text()


def test_runs_are_compared_beside_them_and_no_sweeps_comparison_is_replaced(
    tmp_path: Path, monkeypatch, capsys, caplog
) -> None:
    """``lander.compare <run> <run>`` wrote its comparison into the first run's directory, and ``--out
    <sweep>/comparison`` replaced that sweep's comparison with one of other runs. Runs are now compared into
    ``comparisons/<date>/<time>`` of the working directory; another sweep's comparison is refused in one line,
    exit 2, every byte kept; a sweep's own (its directory or its jobs among the paths) is written anew. Two sweeps
    (more seeds of one experiment) are compared into ``comparisons/`` too, not into the first one's own."""
    runs = [
        fake_run(tmp_path / "runs", f"{g}{seed}", [f"gamma={g}"], seed, {100: g + seed})
        for g in (0.9, 0.99)
        for seed in (0, 1)
    ]
    monkeypatch.chdir(tmp_path)
    assert compare_main([str(r) for r in runs]) == 0
    assert [p.name for p in runs[0].iterdir() if p.name == "comparison"] == []
    (written,) = (tmp_path / "comparisons").glob("*/*")
    assert "gamma=0.99" in (written / "table.csv").read_text()
    assert json.loads((written / "inputs.json").read_text()) == [f"runs/{r.name}" for r in runs]  # as the service's
    from lander.service.store import list_comparisons

    assert [(c["state"], c["runs"]) for c in list_comparisons(tmp_path)] == [
        ("compared", [f"runs/{r.name}" for r in runs])
    ]
    sweep = tmp_path / "sweep"
    for seed in range(2):
        fake_run(sweep, str(seed), ["gamma=0.5"], seed, {100: 5.0 + seed})
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    assert compare_main([str(sweep)]) == 0  # its own comparison
    before = {p: p.read_bytes() for p in (sweep / "comparison").rglob("*") if p.is_file()}
    with pytest.raises(SystemExit) as refused:
        compare_main([*(str(r) for r in runs), "--out", str(sweep / "comparison")])
    assert refused.value.code == 2
    said = capsys.readouterr().err
    assert f"--out {sweep / 'comparison'} is the comparison of the sweep {sweep}, which is not among" in said
    assert {p: p.read_bytes() for p in (sweep / "comparison").rglob("*") if p.is_file()} == before
    second = tmp_path / "second"  # more seeds of the same experiment, a sweep of their own
    for seed in (2, 3):
        fake_run(second, str(seed - 2), ["gamma=0.5"], seed, {100: 7.0})
    (second / "multirun.yaml").write_text("hydra: {}\n")
    assert compare_main([str(sweep), str(second)]) == 0  # before: into the first sweep's own comparison/
    assert {p: p.read_bytes() for p in (sweep / "comparison").rglob("*") if p.is_file()} == before
    (together,) = set((tmp_path / "comparisons").glob("*/*")) - {written}
    assert json.loads((together / "inputs.json").read_text()) == ["sweep", "second"]
    assert pd.read_csv(together / "table.csv")["seeds"].tolist() == [4]
    assert compare_main([str(sweep / "0"), str(sweep / "1"), "--out", str(sweep / "comparison")]) == 0  # its jobs
    (tmp_path / "notes.txt").write_text("mine")  # an --out that cannot be made: one line, not a traceback
    assert compare_main([str(sweep), "--out", str(tmp_path / "notes.txt" / "out")]) == 2
    assert "lander.compare: cannot write the comparison in " in caplog.text and "Not a directory" in caplog.text


def test_a_sweep_with_one_evaluation_per_run_shows_points_and_says_why(tmp_path: Path) -> None:
    """A budget below eval.freq leaves one evaluation per run: the curves are drawn as points with their interval,
    on an axis from 0 past the budget, with a note, not as empty lines (PNG and HTML)."""
    from lander.analysis.comparison import analyse
    from lander.analysis.curves import ONE_EVALUATION
    from lander.reports.figures import curves_figure
    from lander.reports.plots import plot_curves

    for seed in range(3):
        fake_run(tmp_path / "runs", f"a{seed}", ["gamma=0.9"], seed, {20000: 1.0 + seed})
        fake_run(tmp_path / "runs", f"b{seed}", ["gamma=0.99"], seed, {20000: 5.0 + 2 * seed})
    groups = analyse([tmp_path / "runs"]).groups["lunar"]
    fig = curves_figure(groups, "lunar", budgets=[20000])
    means = [t for t in fig.data if t.name and t.name.endswith("(n=3)")]
    assert len(means) == 2 and all("markers" in t.mode for t in means)
    assert all(t.error_y.arrayminus[0] > 0 and t.error_y.array[0] > 0 for t in means)  # the interval over seeds
    assert fig.layout.xaxis.range[0] == 0 and fig.layout.xaxis.range[1] > 20000
    assert [a.text for a in fig.layout.annotations if a.text == ONE_EVALUATION]
    plot_curves(groups, "lunar", tmp_path / "curves.png", budgets=[20000])
    assert (tmp_path / "curves.png").stat().st_size > 10_000


def test_a_sweeps_baseline_not_among_its_runs_is_said_and_the_first_configuration_tested_against(tmp_path, caplog):
    """The sweep's end (``ComparisonCallback._compare``): a ``baseline`` that names no configuration of the runs on
    disk is logged and the first configuration is the baseline (the command's precheck refuses one that names no
    configuration of its jobs: ``test_config``'s bad input)."""
    from omegaconf import OmegaConf

    from lander.sweeps.callback import ComparisonCallback

    for seed in range(2):
        fake_run(tmp_path / "sweep", f"a{seed}", ["gamma=0.9"], seed, {100: 1.0 + seed})
        fake_run(tmp_path / "sweep", f"b{seed}", ["gamma=0.99"], seed, {100: 2.0 + 3 * seed})
    found = ComparisonCallback._compare(OmegaConf.create({"baseline": "gamma=0.5"}), tmp_path / "sweep")
    assert "baseline='gamma=0.5' is not a configuration of lunar" in caplog.text
    assert "the comparison tests against the first configuration instead" in caplog.text
    assert set(found.table["baseline"]) == {"gamma=0.9"}


def test_latest_is_the_run_or_sweep_started_last_whatever_was_written_into_an_older_one_since(tmp_path: Path) -> None:
    # lander.api.latest took the directory modified last: evaluating an older run made it the "latest" run, and a
    # folder of single runs (outputs/<date>) counted as a sweep
    from lander.api import latest

    older, newer = (
        fake_run(tmp_path / "outputs", "older", [], 0, {1: 1.0}),
        fake_run(tmp_path / "outputs", "newer", [], 0, {1: 1.0}),
    )
    sweeps = {name: tmp_path / "multirun" / name for name in ("first", "second")}
    for sweep in sweeps.values():
        for seed in (0, 1):
            fake_run(sweep, str(seed), ["x=1"], seed, {1: 1.0})
        (sweep / "multirun.yaml").write_text("hydra: {}\n")
    first, second = sweeps["first"], sweeps["second"]
    for step, run in enumerate([older, first / "0", first / "1", newer, second / "0", second / "1"]):
        os.utime(run / ".hydra" / "config.yaml", (1e9 + step, 1e9 + step))  # the order the runs started in
    (older / "evaluations").mkdir()  # lander.evaluate of the older run, now
    (sweeps["first"] / "comparison").mkdir()  # lander.compare of the first sweep, now
    assert latest(tmp_path / "outputs") == newer
    assert latest(tmp_path) == second / "1"
    assert latest(tmp_path, sweep=True) == latest(tmp_path / "multirun", sweep=True) == sweeps["second"]
    with pytest.raises(RunSetError, match="no sweep directories"):
        latest(tmp_path / "outputs", sweep=True)


def test_runs_short_of_an_asked_budget_are_said_short_of_it_not_unfinished(tmp_path: Path) -> None:
    # `lander.compare --at-timesteps N`: completed runs that ended before N were "not finished", their detail
    # "completed", in report.md's first line, report.html and left_out.json
    for seed in range(2):
        fake_run(tmp_path, f"long{seed}", ["x=long"], seed, {50: 1.0, 100: 2.0 + seed})
        fake_run(tmp_path, f"short{seed}", ["x=short"], seed, {50: 1.0 + seed})
    compare([tmp_path], tmp_path / "out", at_timesteps=80)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "**2 of 4 runs not compared** (short of 80 timesteps: 2)" in report and "not finished" not in report
    assert "## Runs short of 80 timesteps" in report
    html = (tmp_path / "out" / "report.html").read_text()
    assert (
        "short of 80 timesteps: 2" in html and "<h3>Short of 80 timesteps</h3>" in html and "not finished" not in html
    )
    records = json.loads((tmp_path / "out" / "left_out.json").read_text())["left_out"]
    assert [r["detail"] for r in records] == ["completed, evaluated up to 50 of the 80 timesteps compared"] * 2


def test_runs_past_an_asked_budget_but_not_evaluated_by_it_are_said_so_not_short_of_it(tmp_path: Path) -> None:
    """``lander.compare <sweep> --at-timesteps 100`` of runs trained to 1,024 steps and evaluated from 512 on said
    "no run reached 100 timesteps ... 3 short of it": they are past it, with no evaluation by then."""
    for seed in range(3):
        fake_run(tmp_path, f"r{seed}", ["x=a"], seed, {512: 1.0 + seed, 1024: 2.0 + seed})
    with pytest.raises(RunSetError) as refused:
        compare([tmp_path], tmp_path / "out", at_timesteps=100)
    assert "no run under" in str(refused.value) and "evaluated by 100 timesteps" in str(refused.value)
    assert "short of it" not in str(refused.value) and "3 not evaluated by then" in str(refused.value)
    fake_run(tmp_path, "early", ["x=b"], 0, {64: 5.0, 1024: 6.0})  # evaluated by then: compared; the others listed
    result = compare([tmp_path], tmp_path / "out", at_timesteps=100)
    assert list(result.table["config"]) == ["x=b"] and len(result.left_out["unevaluated"]) == 3
    assert not result.left_out["unfinished"]


def test_a_sweep_over_presets_compares_them(tmp_path: Path) -> None:
    # `--multirun experiment=mine_a,mine_b seed=0,1`: a preset's name was no part of a configuration, so the two
    # presets were one configuration, and half the runs dropped as duplicates ("2 compared, 2 duplicates")
    for seed in range(2):
        fake_run(tmp_path, f"a{seed}", ["experiment=mine_a"], seed, {10: 1.0 + seed})
        fake_run(tmp_path, f"b{seed}", ["experiment=mine_b"], seed, {10: 5.0 + seed})
    found = compare([tmp_path], tmp_path / "out")
    assert found.table["config"].tolist() == ["experiment=mine_a", "experiment=mine_b"]
    assert found.table["final_mean"].tolist() == [1.5, 5.5] and not found.left_out["duplicates"]
    # one preset's sweep: the preset is common to its runs, and its labels are what differs
    for seed in range(2):
        for gamma in ("0.9", "0.99"):
            fake_run(tmp_path / "one", f"{gamma}-{seed}", ["experiment=gamma_sweep", f"gamma={gamma}"], seed, {10: 1.0})
    assert compare([tmp_path / "one"], tmp_path / "out1").table["config"].tolist() == ["gamma=0.9", "gamma=0.99"]
