"""``hydra/sweeper=adastop`` from the command line: interims of n seeds launched through the configured launcher (each
configuration's interim side by side in one process), ``comparison/adastop.json``, the report's section, the closing
block, the sweep's W&B run and the notebook API saying the same; a re-run that trains nothing and decides the same;
a configuration whose runs failed named as lacking data."""

from __future__ import annotations

import json
import os
import shlex
import signal

import pytest
import yaml

import lander.api as api
from helpers import lander, start_lander, tiny, wait_for_checkpoints
from helpers.wandb_reader import read_run

ADASTOP = ["hydra/sweeper=adastop", "hydra.sweeper.n=2", "hydra.sweeper.K=2", "hydra.sweeper.B=1000"]


def overrides(run_dir) -> list[str]:
    return yaml.safe_load((run_dir / ".hydra" / "overrides.yaml").read_text())


def adastop_sweep(sweep_dir, *extra: str, env: dict | None = None):
    cmd = ["--multirun", "gamma=0.9,0.99", *ADASTOP, *tiny("ppo", 512, n_steps=64, eval_every=256, episodes=2)]
    cmd += ["video.enabled=false", "report=false"]  # each run's own: the sweep's comparison report is written
    return lander(*cmd, *extra, f"hydra.sweep.dir={sweep_dir}", env=env, timeout=900)


@pytest.fixture(scope="module")
def decided(tmp_path_factory):
    sweep = tmp_path_factory.mktemp("adastop") / "sweep"
    proc = adastop_sweep(sweep, "seeds_per_process=2", "logger=wandb")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sweep, proc


def test_each_interim_launches_n_seeds_of_every_undecided_configuration_side_by_side(decided):
    sweep, proc = decided
    record = json.loads((sweep / "comparison" / "adastop.json").read_text())
    assert record["status"] == "finished" and record["n"] == 2 and record["K"] == 2
    assert set(record["scores"]) == {"gamma=0.9", "gamma=0.99"}
    jobs = sorted(int(p.name) for p in sweep.iterdir() if p.name.isdigit())
    assert len(jobs) == record["runs_used"] == 2 * 2 * record["interims"]  # every run launched has its score
    for label, scores in record["scores"].items():  # each score is the run's final evaluation mean, seed order
        runs = [p for p in sweep.iterdir() if p.name.isdigit() and label in overrides(p)]
        by_seed = {json.loads((r / "summary.json").read_text())["seed"]: r for r in runs}
        assert sorted(by_seed) == record["seeds"][label] == list(range(len(scores)))
        means = [json.loads((by_seed[s] / "summary.json").read_text())["final_eval_mean"] for s in sorted(by_seed)]
        assert scores == pytest.approx(means)
    assert "seeds side by side in process" in proc.stdout + proc.stderr  # each configuration's interim: one process
    (entry,) = record["decisions"]
    assert entry["decision"] in ("larger", "smaller", "undecided")
    # said the same in the closing block, report.md, report.html, the sweep's W&B run and the notebook API
    out = proc.stdout + proc.stderr
    assert f"AdaStop (finished): {record['interims']} interim(s), {record['runs_used']} runs" in out
    assert f"{entry['a']} vs {entry['b']}: {entry['decision']}" in out
    markdown = (sweep / "comparison" / "report.md").read_text()
    assert "## Sequential test (AdaStop)" in markdown and entry["decision"] in markdown.split("AdaStop")[1]
    html = (sweep / "comparison" / "report.html").read_text()
    assert 'id="sequential"' in html and f"used {record['runs_used']} runs" in html
    summary = read_run(sweep)["summary"]["adastop"]
    assert summary["decisions"] == record["decisions"] and summary["runs_used"] == record["runs_used"]
    loaded = api.load_sweep(sweep)
    assert loaded.adastop == record and loaded.decisions.shape == (2, 2)


def test_the_same_command_again_trains_nothing_and_decides_the_same(decided, tmp_path):
    sweep, _ = decided
    before = json.loads((sweep / "comparison" / "adastop.json").read_text())
    jobs = {p.name for p in sweep.iterdir() if p.name.isdigit()}
    again = adastop_sweep(sweep, "seeds_per_process=2", "logger=wandb")
    assert again.returncode == 0, again.stderr[-3000:]
    assert {p.name for p in sweep.iterdir() if p.name.isdigit()} == jobs
    assert "already completed, skipped" in again.stdout + again.stderr
    after = json.loads((sweep / "comparison" / "adastop.json").read_text())
    assert after == before


def test_a_configuration_whose_runs_failed_is_named_as_lacking_data(tmp_path):
    sweep = tmp_path / "sweep"
    env = {"LANDER_FAULT": "finish:trained:KILL"}  # every job's process killed once it has trained
    from helpers.runs import lander_env

    proc = adastop_sweep(sweep, env=lander_env() | env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    record = json.loads((sweep / "comparison" / "adastop.json").read_text())
    assert record["status"] == "incomplete" and record["interims"] == 0
    assert set(record["missing"]) == {"gamma=0.9", "gamma=0.99"}
    assert "AdaStop: configuration gamma=0.9 lacks data" in proc.stdout + proc.stderr


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_the_interims_run_through_hydras_joblib_launcher_too(tmp_path):
    sweep = tmp_path / "sweep"
    proc = adastop_sweep(sweep, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((sweep / "comparison" / "adastop.json").read_text())
    assert record["status"] == "finished" and record["runs_used"] == 2 * 2 * record["interims"]
    assert len([p for p in sweep.iterdir() if p.name.isdigit()]) == record["runs_used"]


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_ctrl_c_stops_an_interim_with_checkpoints_and_the_printed_command_completes_the_test(tmp_path):
    sweep = tmp_path / "sweep"
    cmd = ["--multirun", "gamma=0.9,0.99", *ADASTOP, "seeds_per_process=2"]
    cmd += tiny("ppo", 8192, n_steps=128, eval_every=1024, episodes=2, checkpoints=1024, video=False, report=False)
    proc = start_lander(*cmd, f"hydra.sweep.dir={sweep}", session=True)
    wait_for_checkpoints(sweep, ("0", "2"), proc)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert not (sweep / "comparison" / "adastop.json").exists()  # no interim was tested: none ended
    continued = (proc.stdout + proc.stderr).split("continue: ")[-1].strip()
    rerun = lander(*shlex.split(continued)[3:], timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    record = json.loads((sweep / "comparison" / "adastop.json").read_text())
    assert record["status"] == "finished" and record["runs_used"] == 2 * 2 * record["interims"]
    for job in ("0", "2"):  # resumed from its checkpoint, not trained again
        summary = json.loads((sweep / job / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["resumed_at"] and summary["resumed_at"][0] >= 1024
