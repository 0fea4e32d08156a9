"""Reports of runs that did not complete: an interrupted run's, opened in headless Chromium (network off), and a
killed run's, written by ``python -m lander.report``. The reports of a sweep and its jobs, the notebook and the
W&B side are tested on the serial sweep of ``tests/test_sweep.py``."""

from __future__ import annotations

import signal

from helpers import lander, lander_env, read_json, run_lander
from helpers.browser import check_visit, open_page, plot_data, wait_for_plots

RUN_PLOTS = ["plot-returns", "plot-eval_episodes", "plot-training", "plot-speed"]


def test_interrupted_run_leaves_a_report_of_what_it_recorded(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_lander(
        run_dir,
        "n_envs=2",
        "algo.model.n_steps=256",
        "total_timesteps=4096",
        "eval.freq=512",
        "eval.episodes=2",
        "eval.n_envs=2",
        "checkpoint_freq=512",
        "progress_bar=false",
        "logger=none",
        env=lander_env(LANDER_FAULT="row:eval.csv@3:INT"),
    )
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


def test_report_cli_rewrites_a_killed_runs_report(tmp_path):
    run_dir = tmp_path / "run"
    killed = run_lander(
        run_dir,
        "n_envs=2",
        "algo.model.n_steps=256",
        "total_timesteps=4096",
        "eval.freq=512",
        "eval.episodes=2",
        "eval.n_envs=2",
        "progress_bar=false",
        "logger=none",
        env=lander_env(LANDER_FAULT="row:eval.csv@2:KILL"),
    )
    assert killed.returncode == -signal.SIGKILL and not (run_dir / "report.html").exists()
    proc = lander(str(run_dir), module="lander.report")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(run_dir / "report.html")
    page = (run_dir / "report.html").read_text()
    assert 'class="status running"' in page and f"resume={run_dir}" in page  # killed: how to continue
    bad = lander(str(tmp_path / "nothing"), module="lander.report")
    assert bad.returncode == 2 and "not a directory" in bad.stderr

    lines = (run_dir / "metrics/eval.csv").read_text().splitlines()
    cells = lines[1].split(",")
    cells[1] = "abc"  # the first evaluation's mean, as text
    (run_dir / "metrics/eval.csv").write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    edited = lander(str(run_dir), module="lander.report")
    note = "metrics/eval.csv: column 'mean' holds 1 value(s) that are not numbers (the first on line 2)"
    assert edited.returncode == 0 and note in edited.stderr and "Traceback" not in edited.stderr
    assert note.replace("'", "&#x27;") in (run_dir / "report.html").read_text()  # said in the report too
