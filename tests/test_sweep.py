"""Sweeps with --multirun: job records, the comparison at the end, failures, joblib, lander.compare."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers import REPO, TINY_SWEEP, lander, lander_env, read_json, run_lander
from helpers.wandb_reader import read_run

NOT_WALL_CLOCK = ["timesteps", "mean", "std", "sem", "n", "median", "min", "max", "success_rate", "mean_length"]


def sweep(sweep_dir, *overrides):
    cmd = [sys.executable, "-m", "lander.run", "--multirun", *overrides, *TINY_SWEEP, f"hydra.sweep.dir={sweep_dir}"]
    return subprocess.run(cmd, cwd=REPO, env=lander_env(), capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def serial_sweep(tmp_path_factory):
    sweep_dir = tmp_path_factory.mktemp("sweep") / "serial"
    proc = sweep(sweep_dir, "hydra/launcher=basic", "algo=ppo,a2c", "seed=0,1")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return sweep_dir


def test_every_job_leaves_its_record_and_the_table_matches_them(serial_sweep):
    jobs = sorted(p for p in serial_sweep.iterdir() if p.name.isdigit())
    assert [p.name for p in jobs] == ["0", "1", "2", "3"]
    for job in jobs:
        assert read_json(job / "summary.json")["status"] == "completed"
        for name in ("model.zip", "eval.json", "video.mp4", "learning_curve.png", "metrics/eval.csv"):
            assert (job / name).is_file()
    comparison = serial_sweep / "comparison"
    for name in ("table.csv", "table.md", "report.md", "learning_curves_lunar_lander.png"):
        assert (comparison / name).is_file()
    table = pd.read_csv(comparison / "table.csv")
    assert list(table["config"]) == ["algo=ppo", "algo=a2c"] and list(table["seeds"]) == [2, 2]
    for config, algo in (("algo=ppo", "ppo"), ("algo=a2c", "a2c")):
        finals = [read_json(j / "eval.json")["mean"] for j in jobs if read_json(j / "summary.json")["algo"] == algo]
        row = table[table["config"] == config].iloc[0]
        assert row["final_mean"] == pytest.approx(np.mean(finals))
        assert row["sem"] == pytest.approx(np.std(finals, ddof=1) / np.sqrt(2))
        assert row["ci95_low"] <= row["final_mean"] <= row["ci95_high"]
    assert np.isnan(table.iloc[0]["p_value"]) and 0 <= table.iloc[1]["p_value"] <= 1
    assert table.iloc[1]["test"] == "paired t" and 0 <= table.iloc[1]["prob_improvement"] <= 1  # seeds 0, 1 both


def test_jobs_share_one_wandb_group_with_algorithm_job_types(serial_sweep):
    runs = [read_run(serial_sweep / str(i)) for i in range(4)]
    groups = {r["group"] for r in runs}
    assert len(groups) == 1 and groups.pop().startswith("sweep-")
    assert [r["job_type"] for r in runs] == ["ppo", "ppo", "a2c", "a2c"]
    assert all(r["exit_code"] == 0 for r in runs)


def test_default_launcher_runs_jobs_in_parallel_and_matches_the_serial_one(serial_sweep, tmp_path):
    """The default launcher is joblib with one worker per core (torch 1 thread per job); results as serial."""
    proc = sweep(tmp_path / "joblib", "algo=ppo,a2c", "seed=0,1")
    assert proc.returncode == 0, proc.stderr[-4000:]
    launcher = yaml.safe_load((tmp_path / "joblib" / "0" / ".hydra" / "hydra.yaml").read_text())["hydra"]["launcher"]
    assert launcher["_target_"].endswith("JoblibLauncher") and launcher["n_jobs"] == -1
    for i in range(4):
        serial = pd.read_csv(serial_sweep / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        parallel = pd.read_csv(tmp_path / "joblib" / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        pd.testing.assert_frame_equal(serial, parallel)
        assert (
            read_json(serial_sweep / str(i) / "eval.json")["episodes"]
            == read_json(tmp_path / "joblib" / str(i) / "eval.json")["episodes"]
        )


def test_a_failing_job_does_not_stop_the_others(tmp_path):
    sweep_dir = tmp_path / "failing"
    proc = sweep(sweep_dir, "algo=ppo", "seed=0", "algo.model.batch_size=64,1")
    assert proc.returncode != 0
    assert (
        "lander: 1 job(s) of the sweep did not complete: job 1 (algo=ppo seed=0 algo.model.batch_size=1" in proc.stderr
    )
    assert read_json(sweep_dir / "0" / "summary.json")["status"] == "completed"
    assert read_json(sweep_dir / "1" / "summary.json")["status"] == "failed"
    table = pd.read_csv(sweep_dir / "comparison" / "table.csv")
    assert list(table["config"]) == ["algo.model.batch_size=64"]
    report = (sweep_dir / "comparison" / "report.md").read_text()
    assert "## Failed runs" in report and "algo.model.batch_size=1" in report
    page = (sweep_dir / "comparison" / "report.html").read_text()
    failed = page[page.index('id="left-out"') :]  # the failed job, with a link to its own report
    assert 'href="../1/report.html"' in failed and "algo.model.batch_size=1" in failed
    assert 'class="status failed"' in (sweep_dir / "1" / "report.html").read_text()  # written from what it had


def test_ppo_and_a2c_with_one_budget_are_compared_at_one_timestep(tmp_path):
    """PPO's rollouts (2 envs x 256 steps) overshoot total_timesteps=1000 to 1024, A2C's (2 x 5) stop at 1000:
    both are compared at 1000, and a copy of a run directory does not add a seed."""
    tiny = [o for o in TINY_SWEEP if not o.startswith(("total_timesteps=", "eval.freq="))]
    budget = ["total_timesteps=1000", "eval.freq=250", "logger=none", "video.enabled=false"]
    ppo, a2c = tmp_path / "ppo", tmp_path / "a2c"
    for run_dir, algo in ((ppo, ["algo=ppo"]), (a2c, ["algo=a2c", "algo.model.n_steps=5"])):
        proc = run_lander(run_dir, *tiny, *algo, *budget)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_json(ppo / "summary.json")["timesteps"] == 1024 and read_json(a2c / "summary.json")["timesteps"] == 1000
    shutil.copytree(a2c, tmp_path / "a2c_copy")
    out = tmp_path / "report"
    cmd = [sys.executable, "-m", "lander.compare", str(ppo), str(a2c), str(tmp_path / "a2c_copy"), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, env=lander_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out / "table.csv")
    assert list(table["timesteps"]) == [1000, 1000] and list(table["seeds"]) == [1, 1]
    for run_dir, row in zip((ppo, a2c), table.itertuples(), strict=True):
        evals = pd.read_csv(run_dir / "metrics/eval.csv").set_index("timesteps")
        assert row.final_mean == pytest.approx(evals.loc[1000, "mean"])
    report = (out / "report.md").read_text()
    assert "Compared at **1,000 timesteps**" in report and "1 run(s) went further (up to 1,024" in report
    assert "duplicates not counted: 1" in report and f"same as `{tmp_path / 'a2c_copy'}`" in report
    for name in ("learning_curves", "final_scores", "performance_profile"):
        assert (out / f"{name}_lunar_lander.png").stat().st_size > 10_000


def test_compare_rejects_an_unknown_baseline(serial_sweep, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "lander.compare", str(serial_sweep), "--out", str(tmp_path), "--baseline", "algo=sac"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "baseline='algo=sac' is not a configuration of lunar_lander" in proc.stderr
    assert not list(tmp_path.iterdir())  # nothing written


def test_submitit_local_sweep_matches_the_serial_one(serial_sweep, tmp_path):
    proc = sweep(
        tmp_path / "submitit", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10", "algo=ppo", "seed=0,1"
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for i in range(2):
        serial = pd.read_csv(serial_sweep / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        pd.testing.assert_frame_equal(
            serial, pd.read_csv(tmp_path / "submitit" / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        )


def test_optuna_search_stores_a_resumable_study(tmp_path):
    import optuna

    sweep_dir = tmp_path / "optuna"
    search = ["hparams_search=ppo_optuna", "logger=none", "video.enabled=false", "eval.freq=0", "total_timesteps=512"]
    for trials in (2, 3):  # n_trials counts the whole study: the second invocation adds one
        proc = lander(
            *search,
            f"hydra.sweeper.n_trials={trials}",
            *TINY_SWEEP[:1],
            "algo.model.n_steps=256",
            "eval.episodes=2",
            "progress_bar=false",
            f"hydra.sweep.dir={sweep_dir}",
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
    study = optuna.load_study(study_name="ppo_lunar_lander", storage=f"sqlite:///{sweep_dir}/optuna.db")
    finished = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(finished) == 3, "the second invocation continues the stored study to n_trials"
    params = {tuple(sorted(t.params.items())) for t in finished}
    assert len(params) == 3, "a resumed study samples new trials (its sampler is reseeded), never the same ones"
    finals = sorted(read_json(p)["mean"] for p in sweep_dir.glob("*/eval.json"))
    assert sorted(t.value for t in finished) == pytest.approx(finals)
    assert (sweep_dir / "optimization_results.yaml").is_file()


def test_compare_at_an_equal_budget_uses_each_runs_evaluation_at_that_point(serial_sweep, tmp_path):
    from lander.compare import compare
    from lander.runset import RunSetError

    result = compare([serial_sweep], tmp_path / "at512", at_timesteps=512)
    table = result["table"]
    for config, jobs in (("algo=ppo", ("0", "1")), ("algo=a2c", ("2", "3"))):
        row = table[table["config"] == config].iloc[0]
        evals = [pd.read_csv(serial_sweep / j / "metrics/eval.csv").set_index("timesteps").loc[512] for j in jobs]
        episodes = [pd.read_csv(serial_sweep / j / "metrics/eval_episodes.csv") for j in jobs]
        episodes = [e[e["timesteps"] == 512] for e in episodes]
        assert [list(e["seed"]) for e in episodes] == [[1000000, 1000001, 1000002]] * 2  # the fixed eval seeds
        assert [e["return"].mean() for e in episodes] == pytest.approx([e["mean"] for e in evals])
        assert row["final_mean"] == pytest.approx(np.mean([e["mean"] for e in evals]))
        assert row["episode_count"] == 6 and row["ci95_low"] <= row["final_mean"] <= row["ci95_high"]
    assert (
        "Compared at **512 timesteps**: every run that got that far" in (tmp_path / "at512" / "report.md").read_text()
    )
    with pytest.raises(RunSetError, match=r"no run under .* reached 1000000000 timesteps.*4 not finished"):
        compare([serial_sweep], tmp_path / "beyond", at_timesteps=10**9)
    assert not (tmp_path / "beyond").exists()


def test_evaluate_cli_on_a_sweep_evaluates_every_job(serial_sweep):
    proc = subprocess.run(
        [sys.executable, "-m", "lander.evaluate", f"run={serial_sweep}", "n_episodes=2", "name=re_eval"],
        cwd=REPO,
        env=lander_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    for job in ("0", "1", "2", "3"):
        record = read_json(serial_sweep / job / "evaluations" / "re_eval.json")
        assert record["n"] == 2 and record["model"] == "model.zip"
    assert not (serial_sweep / "comparison" / "evaluations").exists()
