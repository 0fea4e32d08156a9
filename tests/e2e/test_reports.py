"""Reports of runs that did not complete: an interrupted run's, opened in headless Chromium (network off), and a
killed run's, written by ``python -m lander.report``. The reports of a sweep and its jobs, the notebook and the
W&B side are tested on the serial sweep of ``tests/test_sweep.py``."""

from __future__ import annotations

import re
import shutil
import signal
from pathlib import Path

import pytest

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
    # killed: its summary says running, but no process holds the run (the dashboard's "stopped"); how to continue
    assert 'class="status stopped"' in page and "killed without a chance to record it" in page
    assert "still training" not in page and f"resume={run_dir}" in page
    with open_page(run_dir / "report.html") as (shown, _visit):  # the badge is drawn (white text on its colour)
        assert shown.eval_on_selector(".status", "e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
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


def test_a_damaged_run_gets_its_report_with_one_line_per_damaged_file(tmp_path):
    """``lander.report`` of copies of a run with a binary ``config.yaml``, one that is not YAML, and an ``eval.csv``
    with text values and no ``n`` or ``success_rate`` column: before, each was a traceback and no report; now one
    line naming the file, exit 0, and the report says so (the learning-rate plot on a log axis, the video with its
    first frame as a poster, the peak memory of ``summary.json``)."""
    run_dir = tmp_path / "run"
    proc = run_lander(run_dir, "n_envs=2", "algo.model.n_steps=256", "total_timesteps=1024", "eval.freq=512",
                      "eval.episodes=2", "eval.n_envs=2", "video.max_steps=30", "logger=none")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (run_dir / "report.html").read_text()
    shown = re.search(r"peak memory \(MB\)</th><td>([\d.]+)</td>", report)
    assert shown and float(shown[1]) == pytest.approx(read_json(run_dir / "summary.json")["peak_rss_mb"], abs=0.5)
    assert 'poster="data:image/png;base64,' in report and '"type":"log"' in report
    damaged = {
        "binary": (".hydra/config.yaml", bytes(range(256)), ".hydra/config.yaml is not readable YAML"),
        "not-yaml": (".hydra/config.yaml", b"a: [1, 2\n  b: :\n", ".hydra/config.yaml is not readable YAML"),
        "eval": ("metrics/eval.csv", b"timesteps,mean,sem\nabc,x,y\n256,zz,1\n", "lacks the column(s) n, success_rate"),
    }
    for name, (path, content, said) in damaged.items():
        copy = tmp_path / name
        shutil.copytree(run_dir, copy)
        (copy / path).write_bytes(content)
        (copy / "report.html").unlink()
        written = lander(str(copy), module="lander.report")
        assert written.returncode == 0, written.stderr[-3000:]
        assert "Traceback" not in written.stderr and said in written.stderr, written.stderr[-3000:]
        assert said in (copy / "report.html").read_text()


def comparison_of(tmp_path: Path, labels: list[str]) -> Path:
    """The comparison report (``lander.compare``) of hand-made runs, two seeds of each configuration ``labels``."""
    from helpers.runs import fake_run
    from lander.reports.sweep_report import compare

    for seed in range(2):
        for i, label in enumerate(labels):
            fake_run(tmp_path / "runs", f"{i}_{seed}", [label], seed, {100: float(i + seed), 200: float(2 * i + seed)})
    compare([tmp_path / "runs"], tmp_path / "out")
    return tmp_path / "out/report.html"


def test_a_comparisons_plots_show_configuration_labels_as_written(tmp_path):
    """Plotly reads tags in the text it draws: a configuration ``x=<b>bold</b>`` was drawn as a bold "x=bold" in the
    legend, ``x=<a href='...'>y</a>`` as "x=y" (a run copied from elsewhere could pass for another configuration
    there). The legends and axes show each label as the table does, character for character."""
    labels = ["x=<b>bold</b>", "x=<a href='https://example.org'>y</a>", "x=a&amp;b"]
    report = comparison_of(tmp_path, labels)
    with open_page(report) as (page, visit):
        wait_for_plots(page, 2)
        legends = page.eval_on_selector_all(".legendtext", "ts => ts.map(t => t.textContent)")
        ticks = page.eval_on_selector_all(".xtick text", "ts => ts.map(t => t.textContent)")
    check_visit(visit, report)
    for label in labels:
        assert f"{label} (n=2)" in legends, (label, legends)
    assert "x=<b>bold</b>" in ticks, ticks


def test_a_comparison_of_long_configurations_fits_the_page(tmp_path):
    """A sweep with a callback of one's own: each configuration's label is 250 characters, one word of them 90.
    Plotly cut the legend entries off at the figure's right, and the table, its first column as wide as that
    word allowed, ran past the page (scrolled sideways). The legends wrap at spaces and the page is no wider than
    the window; every character of each label is still there."""
    stop = "+callbacks.stop={_target_:stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes,max_episodes:3}"
    rest = "algo.model.batch_size=64 eval.episodes=2 eval.freq=512 eval.n_envs=2 n_envs=2 seeds_per_process=2"
    labels = [f"{stop} algo.model.n_steps={n} {rest} total_timesteps=4096" for n in (128, 256)]
    report = comparison_of(tmp_path, labels)
    with open_page(report) as (page, visit):
        wait_for_plots(page, 2)
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        cut = page.evaluate(
            """[...document.querySelectorAll('.legendtext')].filter(t => {
                const svg = t.closest('svg').getBoundingClientRect(), box = t.getBoundingClientRect();
                return box.right > svg.right + 1; }).map(t => t.textContent)"""
        )
        legends = page.eval_on_selector_all(".legendtext", "ts => ts.map(t => t.textContent)")
    check_visit(visit, report)
    assert widths[0] <= widths[1], widths  # no sideways scroll
    assert cut == [], cut
    for label in labels:  # Plotly draws each line of an entry as its own text span: the words, in order
        assert any(text.replace(" ", "").startswith(label.replace(" ", "")) for text in legends), (label, legends)
