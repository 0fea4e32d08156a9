"""HTML reports opened in a real browser (headless Chromium, network off), the notebook executed by a real
kernel, and the W&B run's files: reports logged, the model artifact's bytes inside the run directory."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

from helpers import REPO, TINY_SWEEP, lander_env, read_json, run_lander
from helpers.browser import not_blank, open_page, wait_for_plots
from helpers.wandb_reader import read_run, records

SWEEP = ["algo=ppo,a2c", "seed=0,1", *TINY_SWEEP]  # the default launcher: joblib, one job per core
RUN_PLOTS = ["plot-returns", "plot-eval_episodes", "plot-training", "plot-speed"]
SWEEP_PLOTS = ["plot-learning_curves_lunar_lander", "plot-final_scores_lunar_lander",
               "plot-performance_profile_lunar_lander"]  # fmt: skip


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sweep = tmp_path_factory.mktemp("reports") / "sweep"
    cmd = [sys.executable, "-m", "lander.run", "--multirun", *SWEEP, f"hydra.sweep.dir={sweep}"]
    proc = subprocess.run(cmd, cwd=REPO, env=lander_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:]
    sweep.joinpath("console.txt").write_text(proc.stdout)  # what the console showed, in order
    return sweep


def plot_data(page, plot_id: str) -> list[dict]:  # type: ignore[no-untyped-def]
    """Each trace's name, visibility and y values as Plotly drew them."""
    script = f"document.getElementById('{plot_id}')._fullData.map(t => ({{name: t.name, visible: t.visible, "
    return page.evaluate(script + "y: Array.from(t.y || [])}))")


def hover_text(page, plot_id: str) -> str:  # type: ignore[no-untyped-def]
    """Move the mouse across the plot's middle until Plotly shows a hover label; its text ('' if none)."""
    box = page.locator(f"#{plot_id} .nsewdrag").first.bounding_box()
    for fraction in (0.5, 0.95, 0.75, 0.25, 0.05, 0.6, 0.4, 0.85, 0.15):
        page.mouse.move(box["x"] + box["width"] * fraction, box["y"] + box["height"] * 0.5)
        page.wait_for_timeout(100)
        text = page.locator(f"#{plot_id} .hoverlayer").text_content()
        if text:
            return text
    return ""


def check_visit(visit, report: Path) -> None:  # type: ignore[no-untyped-def]
    assert not visit.errors, visit.errors  # no JavaScript error
    assert not visit.console, visit.console
    assert not visit.dialogs, visit.dialogs  # nothing from a file ran as script
    assert visit.outside(report) == [], visit.outside(report)  # no network, no CDN: only the report itself


@pytest.mark.parametrize("job", ["0", "2"])  # PPO and A2C; every algorithm's report: tests/test_artifacts.py
def test_run_report_opens_offline_and_interactive(sweep_dir, job, tmp_path):
    run_dir = sweep_dir / job
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
        video = page.evaluate("(() => { const v = document.querySelector('video'); "
                              "return [v.src.slice(0, 22), v.readyState, v.duration]; })()")  # fmt: skip
        config = page.locator("#config pre").first.text_content()
        page.screenshot(path=tmp_path / f"run_{algo}.png", full_page=True)
    check_visit(visit, report)
    assert video[0] == "data:video/mp4;base64," and video[1] >= 1 and video[2] > 0  # embedded, and it plays
    assert "${" not in config and f"name: {algo}" in config  # resolved, as it trained
    assert not_blank(tmp_path / f"run_{algo}.png") > 0.05


def test_sweep_report_compares_and_links_every_run(sweep_dir, tmp_path):
    report = sweep_dir / "comparison" / "report.html"
    table = pd.read_csv(sweep_dir / "comparison" / "table.csv")
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


def test_sweep_and_jobs_end_with_a_summary(sweep_dir):
    console = (sweep_dir / "console.txt").read_text()
    last = console[console.rindex("sweep done:") :]
    assert "4 job(s), 4 compared" in last and "algo=a2c" in last and "paired t p=" in last
    assert f"report: {sweep_dir / 'comparison' / 'report.html'}" in last
    assert "wandb:" not in last  # printed after W&B's own lines
    assert console.count("(s.e.), success rate") == 4 and console.count("report: ") == 5  # every job, then the sweep


def test_notebook_runs_against_a_sweep(sweep_dir, monkeypatch):
    notebook = nbformat.read(REPO / "notebooks" / "explore.ipynb", as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)  # stored without outputs
    monkeypatch.setenv("LANDER_RUN", str(sweep_dir / "0"))
    monkeypatch.setenv("LANDER_SWEEP", str(sweep_dir))
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()  # fmt: skip
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(figures) >= 4  # the run's and the sweep's interactive figures
    tables = " ".join(o["data"].get("text/plain", "") for o in outputs if o.output_type == "execute_result")
    assert "algo=ppo" in tables and "algo=a2c" in tables


def test_wandb_run_holds_the_report_and_an_artifact_that_syncs_from_its_directory(sweep_dir, tmp_path):
    run_dir = sweep_dir / "0"
    run = read_run(run_dir)
    logged = [row for row in run["history"] if row.get("report/_type") == "html-file"]
    assert len(logged) == 1
    (offline,) = run_dir.glob("wandb/offline-run-*")
    page = offline / "files" / logged[0]["report/path"]
    assert page.read_bytes() == (run_dir / "report.html").read_bytes()  # the whole page as written, Plotly inlined
    copied = shutil.copytree(run_dir, tmp_path / "elsewhere")  # a run directory copied to another machine
    (wandb_file,) = copied.glob("wandb/offline-run-*/run-*.wandb")
    entries = [e for r in records(wandb_file) if r.WhichOneof("record_type") == "artifact"
               for e in r.artifact.manifest.contents]  # fmt: skip
    assert {e.path for e in entries} == {"model.zip", "eval.json"}
    for entry in entries:  # relative to the run directory: `cd <run dir> && wandb sync wandb/offline-run-*`
        assert not Path(entry.local_path).is_absolute() and entry.local_path.startswith("wandb/artifact_files/")
        data = (copied / entry.local_path).read_bytes()
        assert base64.b64encode(hashlib.md5(data).digest()).decode() == entry.digest
    assert (copied / entries[0].local_path).read_bytes() == (run_dir / entries[0].path).read_bytes()
    comparison = read_run(sweep_dir)  # the sweep's own W&B run, in its group
    assert comparison["job_type"] == "comparison"
    assert [row for row in comparison["history"] if row.get("comparison/report/_type") == "html-file"]


def test_interrupted_run_leaves_a_report_of_what_it_recorded(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_lander(run_dir, "n_envs=2", "algo.model.n_steps=256", "total_timesteps=4096", "eval.freq=512",
                      "eval.episodes=2", "eval.n_envs=2", "checkpoint_freq=512", "progress_bar=false",
                      "logger=none", env=lander_env(LANDER_FAULT="row:eval.csv@3:INT"))  # fmt: skip
    assert proc.returncode != 0
    assert read_json(run_dir / "summary.json")["status"] == "interrupted"
    assert "report.html" in proc.stdout + proc.stderr  # named among what was saved
    with open_page(run_dir / "report.html") as (page, visit):
        wait_for_plots(page, len(RUN_PLOTS))
        header = page.locator(".status").first.text_content()
        resume = page.locator(".error").first.text_content()
        evals = [t for t in plot_data(page, "plot-returns") if t["name"].startswith("evaluation")]
    check_visit(visit, run_dir / "report.html")
    assert header == "interrupted" and f"resume={run_dir}" in resume
    lines = (run_dir / "metrics/eval.csv").read_text().splitlines()
    whole = [line for line in lines[1:] if line.count(",") == lines[0].count(",")]  # the row cut short left out
    assert len(whole) == 2 and len(evals[0]["y"]) == len(whole)


def test_hostile_text_in_a_run_stays_text(sweep_dir, tmp_path):
    """A config value and a summary error with markup: the page shows them, runs none of it."""
    from lander.report_run import write_run_report

    run_dir = Path(shutil.copytree(sweep_dir / "0", tmp_path / "run"))
    config = run_dir / ".hydra/config.yaml"
    config.write_text(config.read_text().replace("  tags: []", "  tags:\n  - </script><script>alert(1)</script>"))
    summary = read_json(run_dir / "summary.json") | {"status": "failed", "error": "<img src=x onerror=alert(2)>"}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    write_run_report(run_dir)
    with open_page(run_dir / "report.html") as (page, visit):
        wait_for_plots(page, len(RUN_PLOTS))
        shown = page.locator("body").text_content()
    check_visit(visit, run_dir / "report.html")
    assert "<img src=x onerror=alert(2)>" in shown and "</script><script>alert(1)</script>" in shown


def test_report_cli_rewrites_a_killed_runs_report(tmp_path):
    run_dir = tmp_path / "run"
    killed = run_lander(run_dir, "n_envs=2", "algo.model.n_steps=256", "total_timesteps=4096", "eval.freq=512",
                        "eval.episodes=2", "eval.n_envs=2", "progress_bar=false", "logger=none",
                        env=lander_env(LANDER_FAULT="row:eval.csv@2:KILL"))  # fmt: skip
    assert killed.returncode == -signal.SIGKILL and not (run_dir / "report.html").exists()
    proc = subprocess.run([sys.executable, "-m", "lander.report", str(run_dir)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(run_dir / "report.html")
    page = (run_dir / "report.html").read_text()
    assert 'class="status running"' in page and f"resume={run_dir}" in page  # killed: how to continue
    bad = subprocess.run([sys.executable, "-m", "lander.report", str(tmp_path / "nothing")], capture_output=True,
                         text=True)  # fmt: skip
    assert bad.returncode == 2 and "not a directory" in bad.stderr
