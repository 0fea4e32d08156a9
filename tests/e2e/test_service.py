"""The experiment service for real: uvicorn in a subprocess, HTTP requests with httpx, tiny trainings launched,
stopped and resumed through the API, and the dashboard driven in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from helpers import REPO, fake_run, lander_env
from helpers.browser import not_blank, open_page, wait_for_plots
from helpers.service import LONG, TINY, Service, service


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, Path]]:
    root = tmp_path_factory.mktemp("service")
    with service(root, "--max-running", "3") as svc:  # a second resume is refused for its run, not for the count
        yield svc, root


def test_a_launched_run_is_watched_to_completed_with_its_metrics_and_files(api):
    svc, root = api
    started = svc.post("/api/runs", json={"overrides": ["algo=ppo", *TINY]})
    assert started.status_code == 201, started.text
    run_id = started.json()["id"]
    run = svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] in ("completed", "failed") and not r["active"])
    assert run["status"] == "completed" and run["algo"] == "ppo" and run["timesteps"] == 1024
    assert run["config"]["env"]["policy"] == "MlpPolicy" and "algo=ppo" in run["overrides"]  # resolved config
    path = root / run["path"]
    assert re.fullmatch(r"outputs/[\d-]{10}/[\d-]{8}_ppo_lunar_lander_seed-0", run["path"])  # named as in a terminal
    evals = svc.get(f"/api/runs/{run_id}/metrics/eval").json()
    assert [e["mean"] for e in evals] == pytest.approx(pd.read_csv(path / "metrics/eval.csv")["mean"].tolist())
    later = svc.get(f"/api/runs/{run_id}/metrics/eval", params={"since": evals[0]["timesteps"]}).json()
    assert later == evals[1:]  # polling: only what came after
    assert svc.get(f"/api/runs/{run_id}/metrics/sb3_progress").json()
    report = svc.get(f"/api/runs/{run_id}/files/report.html")
    assert report.status_code == 200 and report.content == (path / "report.html").read_bytes()
    listed = {r["id"]: r for r in svc.get("/api/runs").json()}
    assert listed[run_id]["final_eval_mean"] == pytest.approx(json.loads((path / "eval.json").read_text())["mean"])
    assert listed[run_id]["planned_timesteps"] == 1024  # what the progress bar counts to
    assert listed[run_id]["latest_eval"]["mean"] == pytest.approx(evals[-1]["mean"])
    finished = svc.post(f"/api/runs/{run_id}/pause", json={})
    assert finished.status_code == 409 and "only a running run can be paused" in finished.json()["error"]


def test_a_run_is_stopped_as_interrupted_and_resumed_from_its_checkpoint(api):
    """A default run (W&B offline) stopped, then two clicks on Resume (before: refused, 422, for W&B's own links out
    of the run directory): the first process is still importing (it has not taken the run's lock yet)
    when the second request comes; that one is refused (409) before any process starts (the service allows 3
    running), the run's log stays the first's, and the run goes on from its checkpoint. Paused, it takes no step
    until continued."""
    svc, root = api
    run_id = svc.post("/api/runs", json={"overrides": LONG}).json()["id"]
    svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "running" and r["timesteps"] >= 1024)
    stopped = svc.post(f"/api/runs/{run_id}/stop", json={})
    assert stopped.status_code == 200, stopped.text
    run = svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] not in ("running", "created") and not r["active"])
    assert run["status"] == "interrupted" and (root / run["path"] / "checkpoints").is_dir()
    run_dir = root / run["path"]  # logged to W&B (the default), whose links lead out of the run directory:
    assert any(p.is_symlink() and not p.resolve().is_relative_to(run_dir) for p in (run_dir / "wandb").rglob("*"))
    again = svc.post(f"/api/runs/{run_id}/stop", json={})
    assert again.status_code == 409 and "not running" in again.json()["error"]
    resumed = svc.post(f"/api/runs/{run_id}/resume", json={})
    second = svc.post(f"/api/runs/{run_id}/resume", json={})
    assert resumed.status_code == 201, resumed.text
    assert second.status_code == 409 and f"being resumed by process {resumed.json()['pid']}" in second.json()["error"]
    launched = (root / ".lander-service" / "launched.jsonl").read_text().splitlines()
    assert sum('"kind": "resume"' in line for line in launched) == 1
    running = svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "running" and r["summary"]["resumed_at"])
    assert running["summary"]["resumed_at"][0] >= 1024  # from its checkpoint, not from step 0
    busy = svc.post(f"/api/runs/{run_id}/resume", json={})
    assert busy.status_code == 409 and "running" in busy.json()["error"]
    not_paused = svc.post(f"/api/runs/{run_id}/continue", json={})
    assert not_paused.status_code == 409 and "nothing to continue" in not_paused.json()["error"]
    assert svc.post(f"/api/runs/{run_id}/pause", json={}).status_code == 200
    paused = svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "paused")
    assert svc.get(f"/api/runs/{run_id}").json()["timesteps"] == paused["timesteps"] and paused["active"]
    assert svc.post(f"/api/runs/{run_id}/continue", json={}).status_code == 200
    svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "running" and r["timesteps"] > paused["timesteps"])
    svc.post(f"/api/runs/{run_id}/stop", json={})
    svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "interrupted" and not r["active"])
    assert "ERROR" not in (root / run["path"] / "run.log").read_text()  # no second writer's complaint


def test_what_lander_offers_is_listed_for_clients_and_the_form(api, tmp_path):
    """``/api/algos``, ``/api/envs``, ``/api/presets``, ``/api/config``: the options of lander/conf, which algorithm
    acts in which env, the presets (the root's own among them, a broken one with why), every key with its type."""
    svc, root = api
    (root / "conf" / "experiment").mkdir(parents=True, exist_ok=True)
    (root / "conf" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\n# my seeds\ndefaults:\n  - override /algo: a2c\n"
        "hydra:\n  sweeper:\n    params:\n      seed: 0,1\n"
    )
    (root / "conf" / "experiment" / "broken.yaml").write_text("a: [1,\n")
    algos = {a["name"]: a for a in svc.get("/api/algos").json()}
    assert set(algos) == {p.stem for p in (REPO / "lander/conf/algo").glob("*.yaml")}
    assert algos["ppo"]["target"] == "stable_baselines3.PPO" and algos["ppo"]["model"]["n_steps"] == 1024
    assert "lunar_lander" in algos["ppo"]["envs"] and "lunar_lander" not in algos["sac"]["envs"]
    envs = {e["name"]: e for e in svc.get("/api/envs").json()}
    assert envs["lunar_lander"]["id"] == "LunarLander-v3" and "ppo" in envs["lunar_lander"]["algos"]
    assert "sac" not in envs["lunar_lander"]["algos"] and "sac" in envs["lunar_lander_continuous"]["algos"]
    presets = {p["name"]: p for p in svc.get("/api/presets").json()}
    assert presets["gamma_sweep"]["algo"] == "ppo" and presets["gamma_sweep"]["sweep"]["gamma"] == "0.98,0.99,0.999"
    assert presets["mine"] == presets["mine"] | {"mine": True, "algo": "a2c", "override": "experiment=mine"}
    assert presets["broken"]["mine"] and presets["broken"]["error"]
    (tmp_path / "elsewhere" / "experiment").mkdir(parents=True)  # a copied root whose conf/ leads out of it
    (tmp_path / "elsewhere" / "experiment" / "secret.yaml").write_text("# a comment from outside the root\na: 1\n")
    (root / "conf").rename(root / "conf_real")
    (root / "conf").symlink_to(tmp_path / "elsewhere")
    try:
        outside = {p["name"] for p in svc.get("/api/presets").json()}
    finally:
        (root / "conf").unlink()
        (root / "conf_real").rename(root / "conf")
    assert "secret" not in outside and "gamma_sweep" in outside
    keys = {k["key"]: k for k in svc.get("/api/config").json()}
    assert keys["memory_limit_mb"]["type"] == "float | None" and keys["memory_limit_mb"]["default"] == "null"
    assert keys["vec_env"]["options"] == ["dummy", "subproc"] and keys["seed"]["type"] == "int"
    assert set(keys["algo"]["options"]) == set(algos) and "positive" in keys["eval.freq"]["allowed"]


def test_the_roots_own_configs_are_launched_as_they_are_listed(api):
    """The root's ``conf/``, as ``python -m lander.run`` run in the root composes it: an env and a preset of the
    user's, launched (before: 422, "lander/conf/experiment/<name>.yaml does not exist", for a preset the dashboard
    listed), the launched process given the same search path (it runs in an empty directory of the service's)."""
    svc, root = api
    for group, name, text in (
        ("env", "cartpole_brief", "defaults:\n  - cartpole\nname: cartpole_brief\nkwargs:\n  max_episode_steps: 30\n"),
        ("experiment", "brief_gamma", "# @package _global_\n# gamma 0.9\ngamma: 0.9\n"),
    ):
        (root / "conf" / group).mkdir(parents=True, exist_ok=True)
        (root / "conf" / group / f"{name}.yaml").write_text(text)
    assert {"mine": True, "override": "experiment=brief_gamma"}.items() <= {
        p["name"]: p for p in svc.get("/api/presets").json()
    }["brief_gamma"].items()
    overrides = ["algo=a2c", "env=cartpole_brief", "experiment=brief_gamma", *TINY, "logger=none"]
    started = svc.post("/api/runs", json={"overrides": overrides})
    assert started.status_code == 201, started.text
    assert f"hydra.searchpath=['file://{root.resolve() / 'conf'}']" in started.json()["args"]
    run = svc.wait_for(f"/api/runs/{started.json()['id']}", lambda r: r["status"] != "created" and not r["active"])
    assert run["status"] == "completed", (root / run["path"] / "service.log").read_text()[-3000:]
    assert run["env"] == "cartpole_brief" and run["gamma"] == 0.9
    assert run["config"]["env"]["kwargs"] == {"max_episode_steps": 30}
    envs, algos = ({x["name"]: x for x in svc.get(f"/api/{kind}").json()} for kind in ("envs", "algos"))
    assert envs["cartpole_brief"]["mine"] and not envs["cartpole"]["mine"]  # composed: its defaults' id and spaces
    assert envs["cartpole_brief"]["id"] == "CartPole-v1" and "a2c" in envs["cartpole_brief"]["algos"]
    assert "cartpole_brief" in algos["a2c"]["envs"] and "cartpole_brief" not in algos["sac"]["envs"]
    with open_page(svc.printed_url, offline=False) as (page, visit):  # chosen in the form, as any env
        page.wait_for_selector("#env option[value=cartpole_brief]", state="attached")
        page.select_option("#algo", "a2c")
        shown = page.text_content("#env option[value=cartpole_brief]")
        typed = ["env=cartpole_brief", "experiment=brief_gamma", "seed=3", *TINY, "logger=none"]  # as a key=value too
        page.fill("#overrides", " ".join(typed))
        page.click("#launch-run")
        page.wait_for_selector("#message.ok")
    assert shown == "cartpole_brief (CartPole-v1) (yours)" and not visit.errors

    def ended(r: dict) -> bool:  # not "created" and inactive: listed, not yet held by its process (a busy machine)
        return r["seed"] == 3 and r["status"] in ("completed", "failed") and not r["active"]

    ran = svc.wait_for("/api/runs", lambda runs: any(ended(r) for r in runs))
    clicked = next(r for r in ran if r["seed"] == 3)
    assert (clicked["status"], clicked["env"], clicked["gamma"]) == ("completed", "cartpole_brief", 0.9), clicked
    missing = svc.post("/api/runs", json={"overrides": ["env=cartpole_short"]})  # the repository's, not the root's
    assert (
        missing.status_code == 422
        and "env/cartpole_short.yaml is in neither lander/conf/ nor conf/" in (missing.json()["error"])
    )


def test_bad_requests_get_clear_errors_and_change_nothing(api, tmp_path):
    svc, root = api
    (root / "outputs").mkdir(exist_ok=True)  # where the symlink below goes (made by the tests before, when they ran)
    svc.wait_for("/api/launched", lambda rows: not any(r["alive"] for r in rows))  # the tests before's runs ended
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    cases = [
        (b'{"overrides": [', 400, "malformed JSON"),
        ({"overrides": "algo=ppo"}, 422, "list of strings"),
        ({"overrides": ["algo=pop"]}, 422, "algo/pop"),
        ({"overrides": ["sed=1"]}, 422, "seed"),  # lander's own did-you-mean
        ({"overrides": ["seed=x"]}, 422, "seed"),
        ({"overrides": ["seed=0,1"]}, 422, "sweep"),
        ({"overrides": ["+callbacks.x._target_=os.system"]}, 422, "_target_"),
        ({"overrides": ["hydra.run.dir=/etc"]}, 422, "hydra"),
        ({"overrides": ["hydra/launcher=basic"]}, 422, "hydra"),
        ({"overrides": ["~seed=0"]}, 422, "deleting"),
        ({"overrides": ["algo@x=ppo"]}, 422, "'@'"),
        ({"overrides": ["+seed2=1"]}, 422, "'+'"),
        ({"overrides": ["env.id=gymnasium.envs:Foo-v0"]}, 422, "module"),
        ({"overrides": ["logger.wandb.project=${oc.env:HOME}"]}, 422, "interpolations"),
        ({"overrides": ["--multirun"]}, 422, "key=value"),
        ({"overrides": ["+env.kwargs.gravity=5.0"]}, 422, "env.kwargs: LunarLander-v3 cannot be made"),  # was 500
    ]
    for body, status, words in cases:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        response = svc.post("/api/runs", content=content, headers={"content-type": "application/json"})
        assert response.status_code == status, (body, response.text)
        assert words in response.json()["error"], (body, response.text)
    for body, status, words in [
        ({"runs": "outputs"}, 422, "list of distinct run ids"),
        ({"runs": ["a", "a"]}, 422, "list of distinct run ids"),
        ({"runs": ["a"]}, 422, "compare 2 to"),
        ({"runs": ["nothing", "..~..~etc"]}, 404, "nothing"),
    ]:
        response = svc.post("/api/comparisons", json=body)
        assert response.status_code == status and words in response.json()["error"], (body, response.text)
    outside = tmp_path / "outside"
    (outside / ".hydra").mkdir(parents=True)
    (outside / ".hydra/config.yaml").write_text("seed: 0\n")
    (root / "outputs").mkdir(exist_ok=True)
    (root / "outputs" / "link").symlink_to(outside)  # a symlink out of the root
    for path in [
        "/api/runs/nothing",
        "/api/runs/..~..~etc",
        "/api/runs/outputs~link",
        "/api/runs/~etc~passwd",
        "/api/runs/outputs~link/metrics/eval",
        "/api/runs/nothing/metrics/eval",
        "/api/sweeps/nothing",
        "/api/comparisons/outputs",
        "/api/comparisons/nothing/report",
        "/api/runs/outputs~link/files/.hydra/config.yaml",
    ]:
        assert svc.get(path).status_code == 404, path
    assert all(r["path"] != "outputs/link" for r in svc.get("/api/runs").json())
    (root / "outputs" / "link").unlink()
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before  # nothing started, nothing written


def test_a_sweep_that_decides_its_seeds_is_refused_or_launched_with_checked_numbers(api):
    """``"adastop": {n, K, alpha}`` is numbers, never text; what the sweep cannot take is refused in one line, nothing
    started (the launch itself, into the sweep's record: the slow test below)."""
    svc, _ = api
    for body, words in [
        ({"overrides": ["gamma=0.9,0.99"], "adastop": {"n": 1}}, "greater than or equal to 2"),
        ({"overrides": ["gamma=0.9,0.99"], "adastop": {"alpha": "0.05; rm -rf"}}, "valid number"),
        ({"overrides": ["gamma=0.9,0.99", "seed=0,1"], "adastop": {"n": 2}}, "chooses the seeds"),
        ({"overrides": ["gamma=0.9"], "adastop": {"n": 2}}, "at least two"),
        ({"overrides": ["gamma=0.9,0.99"], "adastop": {"n": 40, "K": 20}}, "at most"),
    ]:
        response = svc.post("/api/sweeps", json=body)
        assert response.status_code == 422 and words in response.json()["error"], (body, response.text)
    refused = svc.post("/api/runs", json={"overrides": ["gamma=0.9"], "adastop": {"n": 2}})
    assert refused.status_code == 422 and "POST /api/sweeps" in refused.json()["error"]


def test_a_search_takes_its_number_of_trials_from_the_request(api):
    """``"trials": N`` (the dashboard's field beside a search preset) is a number, never text: Optuna's ``n_trials``
    of a search, counted against ``--max-jobs``; before, a service user got the preset's 20 trials of 1M steps."""
    svc, root = api
    search = ["hparams_search=ppo_optuna", "env=cartpole", "total_timesteps=512", "video.enabled=false"]
    for path, body, words in [
        ("/api/sweeps", {"overrides": ["experiment=gamma_sweep"], "trials": 2}, "are the trials of an Optuna search"),
        ("/api/sweeps", {"overrides": search, "trials": 0}, "greater than or equal to 1"),
        ("/api/sweeps", {"overrides": search, "trials": "2; rm -rf"}, "valid integer"),
        ("/api/sweeps", {"overrides": search, "trials": 101}, "expands to 101 jobs"),
        ("/api/sweeps", {"overrides": search, "trials": 2, "adastop": {"n": 2}}, "one or the other"),
        ("/api/runs", {"overrides": search, "trials": 2}, "POST /api/sweeps"),
    ]:
        response = svc.post(path, json=body)
        assert response.status_code == 422 and words in response.json()["error"], (body, response.text)
    assert not (root / "multirun").exists() or not any((root / "multirun").rglob("optuna.db"))
    launched = svc.post("/api/sweeps", json={"overrides": [*search, *TINY[:2], "logger=none"], "trials": 2})
    assert launched.status_code == 201, launched.text
    assert "hydra.sweeper.n_trials=2" in launched.json()["args"]
    sweep = svc.wait_for(f"/api/sweeps/{launched.json()['id']}", lambda s: s["report"] is not None)
    assert len(sweep["jobs"]) == 2  # two trials, not the preset's 20


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_a_sweep_that_decides_its_seeds_runs_to_its_record(api):
    """The request's numbers become the sweeper's overrides, and the sweep its record, served with it."""
    svc, root = api
    tiniest = [*TINY, "total_timesteps=512", "video.enabled=false", "report=false", "seeds_per_process=2"]
    body = {"overrides": ["algo=ppo", "env=cartpole", "gamma=0.9,0.99", *tiniest], "adastop": {"n": 2, "K": 1}}
    launched = svc.post("/api/sweeps", json=body)
    assert launched.status_code == 201, launched.text
    assert launched.json()["args"][-5:-1] == [
        "hydra/sweeper=adastop",
        "hydra.sweeper.n=2",
        "hydra.sweeper.K=1",
        "hydra.sweeper.alpha=0.05",
    ]
    sweep = svc.wait_for(f"/api/sweeps/{launched.json()['id']}", lambda s: s["report"] is not None)
    record = json.loads((root / launched.json()["path"] / "comparison" / "adastop.json").read_text())
    assert record["n"] == 2 and record["K"] == 1 and record["runs_used"] == len(sweep["jobs"]) == 4


def test_launching_where_nothing_can_be_written_is_refused(tmp_path):
    (tmp_path / "outputs").write_text("a file where the runs would go")
    with service(tmp_path) as svc:
        response = svc.post("/api/runs", json={"overrides": TINY})
        assert response.status_code == 409 and "cannot write" in response.json()["error"]
    assert not (tmp_path / ".lander-service").exists()


def test_a_chosen_token_is_required_on_every_request(tmp_path):
    token = "lab-token-0123456789"
    with service(tmp_path, "--host", "0.0.0.0", "--token", token, "--allow-host", "lab.example") as svc:
        assert svc.token == token
        assert httpx.get(f"{svc.url}/api/runs").status_code == 401
        assert httpx.get(f"{svc.url}/", params={"token": "wrong"}).status_code == 401
        assert svc.get("/api/runs").json() == []
        assert svc.get("/api/runs", headers={"Host": "lab.example"}).status_code == 200  # --allow-host
        assert httpx.get(f"{svc.url}/", params={"token": token}).status_code == 303  # sets the cookie


def test_a_comparison_or_sweep_that_ends_without_its_report_says_so_in_the_list_and_on_the_dashboard(tmp_path):
    """Two runs that never trained, compared: ``lander.compare`` refuses them (exit 2, its reason in the
    comparison's ``service.log``). The list said ``compared: false`` for ever and the dashboard "not yet"; now the
    comparison is ``failed`` with that reason, in the API and on the page. A sweep the service started whose process
    ended without a comparison is ``ended``, with its console's last line."""
    for name in ("a", "b"):
        (tmp_path / "outputs" / name / ".hydra").mkdir(parents=True)
        (tmp_path / "outputs" / name / ".hydra" / "config.yaml").write_text("seed: 0\nenv: {name: lunar_lander}\n")
    with service(tmp_path) as svc:
        launched = svc.post("/api/comparisons", json={"runs": ["outputs~a", "outputs~b"]})
        assert launched.status_code == 201, launched.text
        (listed,) = svc.wait_for("/api/comparisons", lambda found: found[0]["state"] != "comparing")
        assert listed["state"] == "failed" and not listed["compared"], listed
        assert listed["error"].startswith("lander.compare: no run under ") and "nothing to compare" in listed["error"]
        detail = svc.get(f"/api/comparisons/{listed['id']}").json()
        assert (detail["state"], detail["error"], detail["report"]) == ("failed", listed["error"], None)
        # a sweep whose process is killed (it said "not yet" for ever too), and one started elsewhere
        (tmp_path / "multirun" / "elsewhere").mkdir(parents=True)
        (tmp_path / "multirun" / "elsewhere" / "multirun.yaml").write_text("{}\n")
        sweep = svc.post("/api/sweeps", json={"overrides": ["seed=0,1", *TINY, "logger=none"]})
        assert sweep.status_code == 201, sweep.text
        svc.wait_for("/api/sweeps", lambda found: any(s["state"] == "sweeping" for s in found), 120)
        os.killpg(sweep.json()["pid"], signal.SIGKILL)
        sweeps = svc.wait_for("/api/sweeps", lambda found: all(s["state"] != "sweeping" for s in found), 60)
        assert {s["path"]: s["state"] for s in sweeps} == {
            sweep.json()["path"]: "ended",
            "multirun/elsewhere": "unknown",
        }
        with open_page(svc.printed_url, offline=False) as (page, _visit):
            page.wait_for_selector("#comparisons .error")
            page.wait_for_selector("#sweeps .warning")
            shown = page.text_content("#comparisons .error"), page.text_content("#sweeps .warning")
    assert shown[0] == f"failed: {listed['error']}"
    assert shown[1].startswith("ended without a comparison: ")


def test_a_run_that_stopped_early_says_why_in_the_list_and_on_the_dashboard(tmp_path):
    """A run an early_stop rule or a callback ended before its budget is ``completed`` with ``stopped_early``:
    the dashboard showed it as completed at 544 of 4,096 steps, nothing said why."""
    run = fake_run(tmp_path / "outputs", "early", [], 0, {512: -300.0, 544: -290.0})
    summary = json.loads((run / "summary.json").read_text())
    why = "eval mean -290.0 reached early_stop.reward_threshold=-295"
    summary |= {"timesteps": 544, "total_timesteps": 4096, "planned_timesteps": 4096, "stopped_early": why}
    (run / "summary.json").write_text(json.dumps(summary))
    with service(tmp_path) as svc:
        (listed,) = svc.get("/api/runs").json()
        with open_page(svc.printed_url, offline=False) as (page, _visit):
            page.wait_for_selector("#runs .stopped-early")
            shown = page.text_content("#runs .stopped-early")
    assert (listed["status"], listed["stopped_early"]) == ("completed", why)
    assert shown == f"stopped early: {why}"


def test_a_comparison_of_chosen_runs_takes_a_baseline_and_a_budget(tmp_path):
    """``{"runs": [...], "baseline": ..., "at_timesteps": N}``: ``lander.compare``'s ``--baseline`` and
    ``--at-timesteps``, which the service did not take; a baseline that is not there fails the comparison, which
    says the names it has; one that reads as an option is still a label."""
    for seed in (0, 1):
        fake_run(tmp_path / "outputs", f"short{seed}", ["gamma=0.9"], seed, {100: 1.0 + seed, 200: 2.0})
        fake_run(tmp_path / "outputs", f"long{seed}", ["gamma=0.99"], seed, {100: 3.0 + seed, 200: 5.0})
    ids = [f"outputs~{name}{seed}" for name in ("short", "long") for seed in (0, 1)]
    with service(tmp_path, "--max-running", "4") as svc:
        for body, words in [
            ({"baseline": "a\u0000b"}, "body.baseline"),  # an argument with a NUL: a 500 from Popen
            ({"baseline": ""}, "body.baseline"),
            ({"at_timesteps": 0}, "body.at_timesteps"),
        ]:
            refused = svc.post("/api/comparisons", json={"runs": ids} | body)
            assert refused.status_code == 422 and words in refused.json()["error"], refused.text
        launched = {
            name: svc.post("/api/comparisons", json={"runs": ids} | body).json()["id"]
            for name, body in [
                ("chosen", {"baseline": "gamma=0.99", "at_timesteps": 150}),
                ("absent", {"baseline": "gamma=0.5"}),
                ("option", {"baseline": "--help"}),
            ]
        }
        with open_page(svc.printed_url, offline=False) as (page, _visit):  # the dashboard's field
            page.wait_for_selector("#runs input.pick")
            for pick in page.query_selector_all("#runs input.pick"):
                pick.check()
            page.fill("#baseline", "gamma=0.99")
            page.click("#compare")
            page.wait_for_selector("#message.ok")
            launched["page"] = svc.get("/api/comparisons").json()[0]["id"]  # newest first
        listed = svc.wait_for("/api/comparisons", lambda found: all(c["state"] != "comparing" for c in found), 120)
        states = {c["id"]: (c["state"], c.get("error")) for c in listed}
        chosen = svc.get(f"/api/comparisons/{launched['chosen']}").json()
        clicked = svc.get(f"/api/comparisons/{launched['page']}").json()
    assert states[launched["page"]] == ("compared", None) and len(set(launched.values())) == 4
    assert {row["baseline"] for row in clicked["comparison"]} == {"gamma=0.99"}
    assert {row["timesteps"] for row in clicked["comparison"]} == {200}
    assert states[launched["chosen"]] == ("compared", None)
    assert {row["baseline"] for row in chosen["comparison"]} == {"gamma=0.99"}
    assert {row["config"]: row["final_mean"] for row in chosen["comparison"]} == {"gamma=0.9": 1.5, "gamma=0.99": 3.5}
    assert {row["timesteps"] for row in chosen["comparison"]} == {100}  # at 150: as they stood, evaluated at 100
    for name, given in [("absent", "gamma=0.5"), ("option", "--help")]:
        state, error = states[launched[name]]
        assert state == "failed" and f"baseline={given!r} is not a configuration of lunar; configurations:" in error


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_a_restarted_service_still_knows_what_it_launched(tmp_path):
    with service(tmp_path, keep=True) as svc:
        started = svc.post("/api/runs", json={"overrides": LONG}).json()
        svc.wait_for(f"/api/runs/{started['id']}", lambda r: r["status"] == "running")
    with service(tmp_path) as svc:  # a new service process over the same root (and a new token)
        (launched,) = svc.get("/api/launched").json()
        assert launched["pid"] == started["pid"] and launched["alive"]
        assert svc.post(f"/api/runs/{started['id']}/stop", json={}).status_code == 200
        svc.wait_for(f"/api/runs/{started['id']}", lambda r: r["status"] == "interrupted")
        assert not svc.wait_for("/api/launched", lambda rows: not rows[0]["alive"])[0]["alive"]


ROW = "[...document.querySelectorAll('#runs tr')].find(r => r.dataset.id === id)"  # a run's row, by its id


def test_the_dashboard_after_one_click_on_the_printed_url(tmp_path):
    """The default service (a token) in Chromium: the printed URL opens the dashboard, which launches, stops,
    resumes, pauses and continues a run, launches a sweep and shows its runs, reports (drawn, sandboxed) and
    comparison, compares ticked runs, and reproduces a run (``lander.reproduce``) showing its verdict."""
    with service(tmp_path) as svc, open_page(svc.printed_url, offline=False) as (page, visit):
        # a root without runs: where the dashboard finds them is said (an empty dashboard said nothing); printed
        # before the service answered, read by the helper's thread
        hint = f"{tmp_path.resolve()} has no outputs/ or multirun/ yet: the dashboard lists"
        for _ in range(600):
            if hint in "".join(svc.output):
                break
            time.sleep(0.1)
        assert hint in "".join(svc.output), svc.output
        assert page.url == f"{svc.url}/"  # the token became a cookie and left the address bar
        page.wait_for_selector("#algo option[value=sac]", state="attached")  # the form's choices: /api/algos, envs
        page.select_option("#algo", "sac")
        sac_envs = page.eval_on_selector_all("#env option", "os => os.map(o => o.value)")
        page.select_option("#algo", "ppo")
        page.select_option("#env", "lunar_lander")
        page.fill("#seeds", "0,x")
        page.click("#launch-run")
        page.wait_for_selector("#message.error")
        bad_seeds = page.text_content("#message")
        page.check("#adastop")  # AdaStop decides a sweep's seeds: a run is refused by the form
        page.click("#launch-run")
        page.wait_for_selector("#message.error")
        adastop_run = page.text_content("#message")
        page.uncheck("#adastop")
        page.fill("#seeds", "0")
        page.select_option("#preset", "hparams_search=ppo_optuna")  # a search: its number of trials may be given
        trials = (page.is_enabled("#trials"), page.get_attribute("#trials", "placeholder"))
        page.fill("#trials", "two")
        page.click("#launch-sweep")
        bad_trials = page.text_content("#message")
        page.select_option("#preset", "")
        trials_without_a_search = (page.is_enabled("#trials"), page.input_value("#trials"))
        page.fill("#overrides", "algo.model.learning_rate=0.001 no_such_key=1")
        page.click("#launch-run")
        unknown = page.text_content("#message")
        page.fill("#overrides", " ".join(LONG))
        page.click("#launch-run")
        page.wait_for_selector("#message.ok", timeout=60000)
        page.click("#runs button.stop", timeout=120000)  # shown once the run trains
        page.wait_for_selector("#runs button.resume", timeout=120000)
        stopped = page.text_content("#runs .status")
        page.click("#runs button.resume")
        page.click("#runs button.pause", timeout=120000)  # shown once the resumed run trains
        page.wait_for_selector("#runs button.continue", timeout=60000)  # paused: Continue and Stop
        paused = page.text_content("#runs .status")
        page.click("#runs button.stop")  # a paused run stops as a running one does
        page.wait_for_selector("#runs button.resume", timeout=120000)
        settled = page.get_attribute("#runs tr", "data-id")  # the stopped run: its row is marked on the node
        page.evaluate(f"id => {{ {ROW}.kept = true; }}", settled)
        page.fill("#overrides", " ".join(["seed=0,1", *TINY, "logger=none"]))
        page.click("#launch-sweep")
        page.wait_for_selector("#message.ok", timeout=60000)
        page.wait_for_selector("#sweeps a:text('report.html')", timeout=240000)  # updated in place, no reload
        page.wait_for_function("document.querySelectorAll('#runs input.pick').length == 3")
        kept = page.evaluate(f"id => {ROW}.kept === true", settled)  # the same node while the sweep's rows moved
        for pick in page.query_selector_all("#runs input.pick")[:2]:  # the sweep's two jobs, newest first
            pick.check()
        page.click("#compare")
        page.wait_for_selector("#comparisons a:text('report.html')", timeout=120000)
        (compared,) = svc.get("/api/comparisons").json()
        chosen = svc.get(f"/api/comparisons/{compared['id']}").json()
        chosen_report = svc.get(chosen["report"])
        statuses = page.eval_on_selector_all("#runs .status", "s => s.map(e => e.textContent)")
        links = page.eval_on_selector_all("#runs a", "as => as.map(a => a.textContent)")
        comparison = page.get_attribute("#sweeps a:text('report.html')", "href")
        with page.context.expect_page() as opened:
            page.click("#runs a:text('report.html')")
        report = opened.value
        wait_for_plots(report, 2)  # a run's report draws its plots in its sandbox
        (listed,) = svc.get("/api/sweeps").json()
        sweep = svc.get(f"/api/sweeps/{listed['id']}").json()
        svc.wait_for("/api/launched", lambda entries: not any(e["alive"] for e in entries), 60)  # room for one more
        job = "#runs tr[data-id*='multirun']"  # a job of the sweep, completed
        page.click(f"{job} button.reproduce")
        page.wait_for_selector(f"{job} .verdict.identical", timeout=120000)  # trained again, compared: identical
        verdict = page.get_attribute(f"{job} .verdict.identical", "title")
        page.fill("#overrides", "algo=pop")
        page.click("#launch-sweep")
        page.wait_for_selector("#message.error", timeout=60000)
        error = page.text_content("#message")
        page.screenshot(path=tmp_path / "dashboard.png", full_page=True)
    assert not visit.errors and not visit.dialogs, visit.errors
    assert "lunar_lander_continuous" in sac_envs and "lunar_lander" not in sac_envs
    assert bad_seeds.startswith("seeds:") and unknown.startswith("unknown key no_such_key")
    assert adastop_run == "AdaStop decides the seeds of a sweep: use Launch sweep"
    assert trials == (True, "20") and bad_trials.startswith("trials: a positive integer")
    assert trials_without_a_search == (False, "")
    launched = (tmp_path / ".lander-service" / "launched.jsonl").read_text().splitlines()
    assert len(launched) == 5  # the run, its resume, the sweep, the comparison, the reproduction: nothing refused
    assert verdict.startswith("identical: ") and ".reproduce-1 reproduces " in verdict
    assert all(u.startswith(svc.url) for u in visit.requests), visit.requests  # nothing from elsewhere (no CDN)
    assert stopped == "interrupted" and paused == "paused"
    assert kept, "the settled run's row was drawn again while only the sweep's runs changed"
    assert statuses.count("completed") == 2 and statuses.count("interrupted") == 1  # the sweep's jobs, the run
    assert {"report.html", "video.mp4"} <= set(links)
    assert comparison.endswith("/report")
    assert [row["seeds"] for row in sweep["comparison"]] == [2] and len(sweep["jobs"]) == 2
    # the two ticked runs (the sweep's jobs, though any runs would do), compared through POST /api/comparisons
    assert sorted(chosen["runs"]) == sorted(job["path"] for job in sweep["jobs"])
    assert [row["seeds"] for row in chosen["comparison"]] == [2]
    assert chosen_report.status_code == 200 and "sandbox" in chosen_report.headers["content-security-policy"]
    assert error.startswith("algo=pop: not one of a2c, dqn")  # said by the form, nothing sent
    assert not_blank(tmp_path / "dashboard.png") > 0.02


def test_the_launched_processes_working_directory_is_made_at_the_first_launch_and_removed_at_the_end(
    tmp_path, monkeypatch
):
    """The launched processes run in an empty directory of the service's own (nothing there to import): made at
    the first launch, not by a service that launches nothing, and removed when the service ends (before: one left
    in the temporary directory by every service, launching or not)."""
    import gc
    import tempfile

    from lander.service.launcher import Launcher

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    (tmp_path / "root").mkdir()
    launcher = Launcher(tmp_path / "root")
    assert list(temporary.iterdir()) == []
    entry = launcher.start(["--help"], tmp_path / "root" / "outputs" / "help", "run")
    assert launcher.children[entry["pid"]].wait(timeout=120) == 0
    (made,) = temporary.iterdir()
    assert made == launcher.cwd and made.name.startswith("lander-service-")
    del launcher
    gc.collect()
    assert list(temporary.iterdir()) == []


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended and not yet waited for, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_service_ended_by_sigterm_removes_its_working_directory(tmp_path):
    """``kill`` (SIGTERM: systemd's and Docker's stop) ends the service as Ctrl-C does, its launched processes'
    working directory removed (before: uvicorn shut down, then raised SIGTERM again, and the process died without
    its exit handlers: one empty ``lander-service-*`` left in the temporary directory at each stop)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    (tmp_path / "root").mkdir()
    with service(tmp_path / "root", env=lander_env(TMPDIR=str(temporary))) as svc:
        overrides = [*TINY, "logger=none", "video.enabled=false", "report=false"]
        launched = svc.post("/api/runs", json={"overrides": overrides}).json()
        svc.wait_for(f"/api/runs/{launched['id']}", lambda r: r["status"] == "completed" and not r["active"])
        for _ in range(600):  # a process still running there keeps the directory: its exit (after the run's end)
            if not alive(launched["pid"]):
                break
            time.sleep(0.1)
        assert len(list(temporary.glob("lander-service-*"))) == 1
        assert svc.process is not None
        svc.process.send_signal(signal.SIGTERM)
        assert svc.process.wait(timeout=60) != 0  # ended by the signal, as it was asked
    assert list(temporary.glob("lander-service-*")) == []  # (torch's torchinductor_<user> is the run's, kept)
