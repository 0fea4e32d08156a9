"""Sweeps with --multirun: job records, the comparison at the end, failures, parallel jobs, lander.compare."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml
from nbclient import NotebookClient

from helpers import REPO, lander, read_json, run_lander, start_lander, tiny
from helpers.browser import check_visit, hover_text, not_blank, open_page, plot_data, wait_for_plots
from helpers.wandb_reader import read_run, records

# a sweep's job: two PPO/A2C updates, with the video and report of the default config
JOB = ["n_envs=2", *tiny(None, 1024, n_steps=256, eval_every=256, video=True, report=True)]
NOT_WALL_CLOCK = ["timesteps", "mean", "std", "sem", "n", "median", "min", "max", "success_rate", "mean_length"]


def sweep(sweep_dir, *overrides):
    return lander("--multirun", *overrides, *JOB, f"hydra.sweep.dir={sweep_dir}", timeout=900)


@pytest.fixture(scope="module")
def serial_sweep(tmp_path_factory):
    sweep_dir = tmp_path_factory.mktemp("sweep") / "serial"
    cmd = [
        "--multirun",
        "hydra/launcher=basic",
        "algo=ppo,a2c",
        "seed=0,1",
        *JOB,
        "logger=wandb",  # this file's W&B tests read its runs
        f"hydra.sweep.dir={sweep_dir}",
    ]
    proc = start_lander(*cmd, merged=True).completed(timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:]
    (sweep_dir / "console.txt").write_text(proc.stdout)  # what the console showed, in order
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
    """The default launcher is lander's, one job per core at once (torch 1 thread per job); results as serial."""
    proc = sweep(tmp_path / "parallel", "algo=ppo,a2c", "seed=0,1")
    assert proc.returncode == 0, proc.stderr[-4000:]
    launcher = yaml.safe_load((tmp_path / "parallel" / "0" / ".hydra" / "hydra.yaml").read_text())["hydra"]["launcher"]
    assert launcher["_target_"].endswith(".ParallelLauncher") and launcher["n_jobs"] == -1
    assert f"launching 4 job(s), {len(os.sched_getaffinity(0))} at a time" in proc.stdout + proc.stderr
    for i in range(4):
        serial = pd.read_csv(serial_sweep / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        parallel = pd.read_csv(tmp_path / "parallel" / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        pd.testing.assert_frame_equal(serial, parallel)
        assert (
            read_json(serial_sweep / str(i) / "eval.json")["episodes"]
            == read_json(tmp_path / "parallel" / str(i) / "eval.json")["episodes"]
        )


def test_a_failing_job_does_not_stop_the_others(tmp_path):
    sweep_dir = tmp_path / "failing"
    proc = sweep(sweep_dir, "hydra/launcher=basic", "algo=ppo", "seed=0", "algo.model.batch_size=64,1")
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
    ppo, a2c = tmp_path / "ppo", tmp_path / "a2c"
    for run_dir, algo in ((ppo, "ppo"), (a2c, "a2c")):
        proc = run_lander(run_dir, *tiny(algo, 1000, eval_every=250, video=False))
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_json(ppo / "summary.json")["timesteps"] == 1024 and read_json(a2c / "summary.json")["timesteps"] == 1000
    shutil.copytree(a2c, tmp_path / "a2c_copy")
    out = tmp_path / "report"
    proc = lander(str(ppo), str(a2c), str(tmp_path / "a2c_copy"), "--out", str(out), module="lander.compare")
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
    proc = lander(str(serial_sweep), "--out", str(tmp_path), "--baseline", "algo=sac", module="lander.compare")
    assert proc.returncode == 2 and "baseline='algo=sac' is not a configuration of lunar_lander" in proc.stderr
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.slow  # Hydra's submitit launcher (SLURM's code path, run locally): the default suite uses lander's
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


@pytest.mark.slow  # Ray starts a local cluster (~8 s); the [ray] extra: pip install -c constraints.txt -e ".[ray]"
def test_ray_sweep_matches_the_serial_one_and_is_resumed(serial_sweep, tmp_path):
    """``hydra/launcher=ray`` on Ray started on this machine: the jobs' evaluations are the serial sweep's, the
    comparison is written, and the same command again finds every job completed (nothing trained twice)."""
    pytest.importorskip("ray")
    args = [tmp_path / "ray", "hydra/launcher=ray", "hydra.launcher.ray.init.num_cpus=2", "algo=ppo", "seed=0,1"]
    proc = sweep(*args)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for i in range(2):
        serial = pd.read_csv(serial_sweep / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        pd.testing.assert_frame_equal(
            serial, pd.read_csv(tmp_path / "ray" / str(i) / "metrics/eval.csv")[NOT_WALL_CLOCK]
        )
    assert (tmp_path / "ray" / "comparison" / "table.csv").is_file()
    models = {i: (tmp_path / "ray" / str(i) / "model.zip").stat().st_mtime_ns for i in range(2)}
    again = sweep(*args)
    assert again.returncode == 0, again.stderr[-4000:]
    assert models == {i: (tmp_path / "ray" / str(i) / "model.zip").stat().st_mtime_ns for i in range(2)}


def test_the_documented_optuna_search_runs_as_the_docs_give_it(tmp_path):
    """``python -m lander.run hparams_search=ppo_optuna`` as docs/sweeps-and-statistics.md gives it (no
    --multirun: the preset is a search), one tiny trial: Optuna's sweeper runs it, stores the study and writes the
    best parameters. lander's own sweeper won over the preset's: the command was refused as "a sweep", and with
    --multirun failed in Hydra (the slow test below, which resumes a study, was failing)."""
    import optuna

    sweep_dir = tmp_path / "search"
    search = ["hparams_search=ppo_optuna", "n_envs=2", *tiny(None, 512, n_steps=256, eval_every=0, episodes=2)]
    proc = lander(*search, "hydra.sweeper.n_trials=1", f"hydra.sweep.dir={sweep_dir}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    study = optuna.load_study(study_name="ppo_lunar_lander", storage=f"sqlite:///{sweep_dir}/optuna.db")
    (trial,) = study.trials
    assert trial.state == optuna.trial.TrialState.COMPLETE and set(trial.params) == {
        "algo.model.learning_rate", "algo.model.ent_coef", "algo.model.gae_lambda", "algo.model.n_epochs"}  # fmt: skip
    (run,) = sweep_dir.glob("*/eval.json")
    assert trial.value == pytest.approx(read_json(run)["mean"])
    assert (sweep_dir / "optimization_results.yaml").is_file()


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_optuna_search_stores_a_resumable_study(tmp_path):
    import optuna

    sweep_dir = tmp_path / "optuna"
    search = ["hparams_search=ppo_optuna", "hydra/launcher=basic", "n_envs=2"]
    search += tiny(None, 512, n_steps=256, eval_every=0, episodes=2, video=False)
    for trials in (2, 3):  # n_trials counts the whole study: the second invocation adds one
        proc = lander(*search, f"hydra.sweeper.n_trials={trials}", f"hydra.sweep.dir={sweep_dir}")
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
    from lander.errors import RunSetError
    from lander.reports.sweep_report import compare

    result = compare([serial_sweep], tmp_path / "at512", at_timesteps=512)
    table = result.table
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
    titles = [f"<title>lander comparison: {d.parent.name}/{d.name}</title>" for d in (tmp_path / "at512", serial_sweep)]
    assert titles[0] in (tmp_path / "at512" / "report.html").read_text()  # its directory's (was the one above it)
    assert titles[1] in (serial_sweep / "comparison" / "report.html").read_text()  # a sweep's: the sweep's
    with pytest.raises(RunSetError, match=r"no run under .* reached 1,000,000,000 timesteps.*4 short of it"):
        compare([serial_sweep], tmp_path / "beyond", at_timesteps=10**9)
    assert not (tmp_path / "beyond").exists()


def test_evaluate_cli_on_a_sweep_evaluates_every_job(serial_sweep):
    proc = lander(f"run={serial_sweep}", "n_episodes=2", "name=re_eval", module="lander.evaluate")
    assert proc.returncode == 0, proc.stderr
    for job in ("0", "1", "2", "3"):
        record = read_json(serial_sweep / job / "evaluations" / "re_eval.json")
        assert record["n"] == 2 and record["model"] == "model.zip"
    assert not (serial_sweep / "comparison" / "evaluations").exists()


# The sweep's reports (its jobs' and its comparison's), its console, the notebook and its W&B runs: on this
# file's serial sweep, so that no other test file makes a sweep of its own for them.
RUN_PLOTS = ["plot-returns", "plot-eval_episodes", "plot-training", "plot-speed"]
SWEEP_PLOTS = [
    "plot-learning_curves_lunar_lander",
    "plot-final_scores_lunar_lander",
    "plot-performance_profile_lunar_lander",
]


# PPO by default, A2C with -m slow; every algorithm's report: tests/e2e/test_artifacts.py
@pytest.mark.parametrize("job", ["0", pytest.param("2", marks=pytest.mark.slow)])
def test_run_report_opens_offline_and_interactive(serial_sweep, job, tmp_path):
    run_dir = serial_sweep / job
    algo = read_json(run_dir / "summary.json")["algo"]
    report = run_dir / "report.html"
    with open_page(report) as (page, visit):
        wait_for_plots(page, len(RUN_PLOTS))
        assert all(page.locator(f"#{p} .main-svg").count() for p in RUN_PLOTS)
        returns = {t["name"]: t for t in plot_data(page, "plot-returns")}
        evals = pd.read_csv(run_dir / "metrics/eval.csv")
        (eval_trace,) = [t for name, t in returns.items() if name.startswith("evaluation mean")]
        assert eval_trace["y"] == pytest.approx(evals["mean"].tolist())
        episodes = pd.read_csv(run_dir / "metrics/train_episodes.csv")
        assert returns["training episode"]["y"] == pytest.approx(episodes["return"].tolist(), rel=1e-6)
        titles = page.locator("#plot-training .gtitle, #plot-training .annotation-text").all_text_contents()
        sb3 = run_dir / "metrics/sb3_progress.csv"
        progress = pd.read_csv(sb3) if sb3.stat().st_size else pd.DataFrame()  # A2C logs every 100 updates
        logged = {c for c in progress.columns if not c.startswith("time/") and progress[c].notna().any()}
        assert logged <= set(titles), logged - set(titles)  # every metric SB3 wrote has its plot
        assert logged or "Training (SB3's logger) vs timesteps: nothing recorded" in titles
        page.locator("#plot-returns .legendtoggle").first.click()  # a series toggled off from its legend
        page.wait_for_function("document.getElementById('plot-returns').data[0].visible === 'legendonly'")
        assert hover_text(page, "plot-returns")  # the mouse over the plot shows the values under it
        video = page.evaluate(
            "(() => { const v = document.querySelector('video'); "
            "return [v.src.slice(0, 22), v.readyState, v.duration]; })()"
        )
        config = page.locator("#config pre").first.text_content()
        page.screenshot(path=tmp_path / f"run_{algo}.png", full_page=True)
    check_visit(visit, report)
    assert video[0] == "data:video/mp4;base64," and video[1] >= 1 and video[2] > 0  # embedded, and it plays
    assert "${" not in config and f"name: {algo}" in config  # resolved, as it trained
    assert not_blank(tmp_path / f"run_{algo}.png") > 0.05


def test_sweep_report_compares_and_links_every_run(serial_sweep, tmp_path):
    report = serial_sweep / "comparison" / "report.html"
    table = pd.read_csv(serial_sweep / "comparison" / "table.csv")
    with open_page(report) as (page, visit):
        wait_for_plots(page, len(SWEEP_PLOTS))
        curves = plot_data(page, SWEEP_PLOTS[0])
        shown = [t["name"] for t in curves if t["visible"] is True and "seed" not in t["name"]]
        assert [n for n in shown if "(n=" in n] == [f"{c} (n=2)" for c in table["config"]]
        hidden = [t["name"] for t in curves if t["visible"] == "legendonly"]
        assert len(hidden) == 4  # each seed's own curve, one click away
        scores = plot_data(page, SWEEP_PLOTS[1])
        for config, row in table.set_index("config").iterrows():
            (mean,) = [t for t in scores if t["name"] == f"{config}: mean, 95% CI"]
            assert mean["y"] == pytest.approx([row["final_mean"]])
        links = page.eval_on_selector_all("#runs a", "as => as.map(a => a.getAttribute('href'))")
        text = page.locator("#comparison table").first.text_content()
        page.screenshot(path=tmp_path / "sweep.png", full_page=True)
    check_visit(visit, report)
    assert links == [f"../{i}/report.html" for i in range(4)]
    assert all((report.parent / link).resolve().is_file() for link in links)
    assert "paired t" in text and "algo=a2c" in text
    assert not_blank(tmp_path / "sweep.png") > 0.05


def test_sweep_and_jobs_end_with_a_summary(serial_sweep):
    console = (serial_sweep / "console.txt").read_text()
    last = console[console.rindex("sweep done:") :]
    assert "4 job(s), 4 compared" in last and "algo=a2c" in last and "paired t p=" in last
    assert f"report: {serial_sweep / 'comparison' / 'report.html'}" in last
    assert "wandb:" not in last  # printed after W&B's own lines
    assert console.count("(s.e.), success rate") == 4 and console.count("report: ") == 5  # every job, then the sweep


def test_notebook_runs_against_a_sweep(serial_sweep, monkeypatch):
    notebook = nbformat.read(REPO / "notebooks" / "explore.ipynb", as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)  # stored without outputs
    monkeypatch.setenv("LANDER_RUN", str(serial_sweep / "0"))
    monkeypatch.setenv("LANDER_SWEEP", str(serial_sweep))
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO / "notebooks")}}
    ).execute()
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(figures) >= 4  # the run's and the sweep's interactive figures
    tables = " ".join(o["data"].get("text/plain", "") for o in outputs if o.output_type == "execute_result")
    assert "algo=ppo" in tables and "algo=a2c" in tables


def test_the_documented_api_block_runs_against_a_sweep_and_a_run(serial_sweep, tmp_path, monkeypatch):
    """docs/reports-and-tracking.md's Python block, as written, in a directory holding this sweep under ``multirun/``
    and one of its runs under ``outputs/``: it named ``run.evals`` and ``run.progress``, which the API has not."""
    page = (REPO / "docs" / "reports-and-tracking.md").read_text()
    (block,) = re.findall(r"<!-- runnable -->\s*```python\n(.*?)```", page, re.S)
    shutil.copytree(serial_sweep, tmp_path / "multirun" / "2026-11-23" / "10-05-00")
    shutil.copytree(serial_sweep / "0", tmp_path / "outputs" / "2026-11-23" / "10-00-00_ppo_lunar_lander_seed-0")
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(block, "docs/reports-and-tracking.md", "exec"), names)  # the docs' own block
    assert names["run"].path == Path("outputs/2026-11-23/10-00-00_ppo_lunar_lander_seed-0")
    assert names["sweep"].path == Path("multirun/2026-11-23/10-05-00")
    assert len(names["sweep"].scores) == 4


def test_wandb_run_holds_the_report_and_an_artifact_that_syncs_from_its_directory(serial_sweep, tmp_path):
    run_dir = serial_sweep / "0"
    run = read_run(run_dir)
    logged = [row for row in run["history"] if row.get("report/_type") == "html-file"]
    assert len(logged) == 1
    (offline,) = run_dir.glob("wandb/offline-run-*")
    page = offline / "files" / logged[0]["report/path"]
    assert page.read_bytes() == (run_dir / "report.html").read_bytes()  # the whole page as written, Plotly inlined
    copied = shutil.copytree(run_dir, tmp_path / "elsewhere")  # a run directory copied to another machine
    (wandb_file,) = copied.glob("wandb/offline-run-*/run-*.wandb")
    entries = [
        e
        for r in records(wandb_file)
        if r.WhichOneof("record_type") == "artifact"
        for e in r.artifact.manifest.contents
    ]
    assert {e.path for e in entries} == {"model.zip", "eval.json"}
    for entry in entries:  # relative to the run directory: `cd <run dir> && wandb sync wandb/offline-run-*`
        assert not Path(entry.local_path).is_absolute() and entry.local_path.startswith("wandb/artifact_files/")
        data = (copied / entry.local_path).read_bytes()
        assert base64.b64encode(hashlib.md5(data).digest()).decode() == entry.digest
    assert (copied / entries[0].local_path).read_bytes() == (run_dir / entries[0].path).read_bytes()
    comparison = read_run(serial_sweep)  # the sweep's own W&B run, in its group
    assert comparison["job_type"] == "comparison"
    assert [row for row in comparison["history"] if row.get("comparison/report/_type") == "html-file"]


def test_hostile_text_in_a_run_stays_text(serial_sweep, tmp_path):
    """A config value and a summary error with markup: the page shows them, runs none of it."""
    from lander.reports.run_report import write_run_report

    run_dir = Path(shutil.copytree(serial_sweep / "0", tmp_path / "run"))
    config = run_dir / ".hydra/config.yaml"
    text = config.read_text().replace("    tags: []", "    tags:\n    - </script><script>alert(1)</script>")
    config.write_text(text)
    summary = read_json(run_dir / "summary.json") | {"status": "failed", "error": "<img src=x onerror=alert(2)>"}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    write_run_report(run_dir)
    with open_page(run_dir / "report.html") as (page, visit):
        wait_for_plots(page, len(RUN_PLOTS))
        shown = page.locator("body").text_content()
    check_visit(visit, run_dir / "report.html")
    assert "<img src=x onerror=alert(2)>" in shown and "</script><script>alert(1)</script>" in shown
