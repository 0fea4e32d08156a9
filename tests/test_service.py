"""The experiment service for real: uvicorn in a subprocess, HTTP requests with httpx, tiny trainings launched,
stopped and resumed through the API, and the dashboard driven in headless Chromium."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pandas as pd
import pytest

from helpers import REPO, lander_env
from helpers.browser import not_blank, open_page

TINY = ["n_envs=2", "algo.model.n_steps=256", "total_timesteps=1024", "eval.freq=512", "eval.episodes=2",
        "eval.n_envs=2", "video.max_steps=50", "progress_bar=false", "checkpoint_freq=0"]  # fmt: skip
LONG = ["n_envs=2", "algo.model.n_steps=256", "total_timesteps=200000", "eval.freq=512", "eval.episodes=2",
        "eval.n_envs=2", "video.enabled=false", "progress_bar=false", "checkpoint_freq=512", "logger=none"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def service(root: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``python -m lander.serve --root root`` on a free port until the block ends; yields its base URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "lander.serve", "--root", str(root), "--port", str(port), *args]
    process = subprocess.Popen(cmd, cwd=REPO, env=env or lander_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx.get(url + "/openapi.json", timeout=1, headers={"Authorization": "Bearer secret"})
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read().decode()  # type: ignore[union-attr]
                time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)


def wait_for(url: str, predicate, timeout: float = 240) -> dict:  # type: ignore[no-untyped-def]
    """Poll ``url`` until ``predicate(json)`` holds; return that JSON."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = httpx.get(url, timeout=10)
        if response.status_code == 200 and predicate(response.json()):
            return response.json()
        time.sleep(0.5)
    raise AssertionError(f"{url}: not reached in {timeout} s; last: {response.text[:2000]}")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("service")
    with service(root) as url:
        yield url, root


def test_a_launched_run_is_watched_to_completed_with_its_metrics_and_files(api):
    url, root = api
    started = httpx.post(f"{url}/api/runs", json={"overrides": ["algo=ppo", *TINY]}, timeout=60)
    assert started.status_code == 201, started.text
    run_id = started.json()["id"]
    run = wait_for(f"{url}/api/runs/{run_id}", lambda r: r["status"] in ("completed", "failed") and not r["active"])
    assert run["status"] == "completed" and run["algo"] == "ppo" and run["timesteps"] == 1024
    assert run["config"]["env"]["policy"] == "MlpPolicy" and "algo=ppo" in run["overrides"]  # resolved config
    path = root / run["path"]
    evals = httpx.get(f"{url}/api/runs/{run_id}/metrics/eval").json()
    assert [e["mean"] for e in evals] == pytest.approx(pd.read_csv(path / "metrics/eval.csv")["mean"].tolist())
    later = httpx.get(f"{url}/api/runs/{run_id}/metrics/eval", params={"since": evals[0]["timesteps"]}).json()
    assert later == evals[1:]  # polling: only what came after
    assert httpx.get(f"{url}/api/runs/{run_id}/metrics/sb3_progress").json()
    report = httpx.get(f"{url}/api/runs/{run_id}/files/report.html")
    assert report.status_code == 200 and report.content == (path / "report.html").read_bytes()
    listed = {r["id"]: r for r in httpx.get(f"{url}/api/runs").json()}
    assert listed[run_id]["final_eval_mean"] == pytest.approx(json.loads((path / "eval.json").read_text())["mean"])


def test_a_run_is_stopped_as_interrupted_and_resumed_from_its_checkpoint(api):
    url, root = api
    run_id = httpx.post(f"{url}/api/runs", json={"overrides": LONG}, timeout=60).json()["id"]
    wait_for(f"{url}/api/runs/{run_id}", lambda r: r["status"] == "running" and r["timesteps"] >= 1024)
    stopped = httpx.post(f"{url}/api/runs/{run_id}/stop")
    assert stopped.status_code == 200, stopped.text
    run = wait_for(f"{url}/api/runs/{run_id}", lambda r: r["status"] not in ("running", "created") and not r["active"])
    assert run["status"] == "interrupted" and (root / run["path"] / "checkpoints").is_dir()
    again = httpx.post(f"{url}/api/runs/{run_id}/stop")
    assert again.status_code == 409 and "not running" in again.json()["error"]
    resumed = httpx.post(f"{url}/api/runs/{run_id}/resume", timeout=60)
    assert resumed.status_code == 201, resumed.text
    running = wait_for(f"{url}/api/runs/{run_id}", lambda r: r["status"] == "running" and r["summary"]["resumed_at"])
    assert running["summary"]["resumed_at"][0] >= 1024  # from its checkpoint, not from step 0
    busy = httpx.post(f"{url}/api/runs/{run_id}/resume")
    assert busy.status_code == 409 and "running" in busy.json()["error"]
    httpx.post(f"{url}/api/runs/{run_id}/stop")
    wait_for(f"{url}/api/runs/{run_id}", lambda r: r["status"] == "interrupted")


def test_bad_requests_get_clear_errors_and_change_nothing(api, tmp_path):
    url, root = api
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    cases = [
        (b'{"overrides": [', 400, "malformed JSON"),
        ({"overrides": "algo=ppo"}, 422, "list of strings"),
        ({"overrides": ["algo=pop"]}, 422, "algo/pop"),
        ({"overrides": ["sed=1"]}, 422, "seed"),  # lander's own did-you-mean
        ({"overrides": ["seed=x"]}, 422, "seed"),
        ({"overrides": ["+callbacks.x._target_=os.system"]}, 422, "_target_"),
        ({"overrides": ["hydra.run.dir=/etc"]}, 422, "hydra"),
        ({"overrides": ["hydra/launcher=basic"]}, 422, "hydra"),
        ({"overrides": ["logger.project=${oc.env:HOME}"]}, 422, "interpolations"),
        ({"overrides": ["--multirun"]}, 422, "key=value"),
    ]
    for body, status, words in cases:
        kwargs = (
            {"content": body, "headers": {"content-type": "application/json"}}
            if isinstance(body, bytes)
            else {"json": body}
        )
        response = httpx.post(f"{url}/api/runs", **kwargs, timeout=60)  # type: ignore[arg-type]
        assert response.status_code == status, (body, response.text)
        assert words in response.json()["error"], (body, response.text)
    outside = tmp_path / "outside"
    (outside / ".hydra").mkdir(parents=True)
    (outside / ".hydra/config.yaml").write_text("seed: 0\n")
    (root / "outputs").mkdir(exist_ok=True)
    (root / "outputs" / "link").symlink_to(outside)  # a symlink out of the root
    for path in ["/api/runs/nothing", "/api/runs/..~..~etc", "/api/runs/outputs~link", "/api/runs/~etc~passwd",
                 "/api/runs/outputs~link/metrics/eval", "/api/runs/nothing/metrics/eval", "/api/sweeps/nothing",
                 "/api/runs/outputs~link/files/.hydra/config.yaml"]:  # fmt: skip
        assert httpx.get(url + path).status_code == 404, path
    assert all(r["path"] != "outputs/link" for r in httpx.get(f"{url}/api/runs").json())
    (root / "outputs" / "link").unlink()
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before  # nothing started, nothing written


def test_launching_where_nothing_can_be_written_is_refused(tmp_path):
    (tmp_path / "outputs").write_text("a file where the runs would go")
    with service(tmp_path) as url:
        response = httpx.post(f"{url}/api/runs", json={"overrides": TINY}, timeout=60)
        assert response.status_code == 409 and "cannot write" in response.json()["error"]
    assert not (tmp_path / ".lander-service").exists()


def test_a_token_is_required_off_this_machine_and_then_on_every_request(tmp_path):
    refused = subprocess.run([sys.executable, "-m", "lander.serve", "--root", str(tmp_path), "--host", "0.0.0.0"],
                             cwd=REPO, env=lander_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert refused.returncode == 2 and "--token" in refused.stderr
    with service(tmp_path, "--token", "secret") as url:
        assert httpx.get(f"{url}/api/runs").status_code == 401
        assert httpx.get(f"{url}/", params={"token": "wrong"}).status_code == 401
        assert httpx.get(f"{url}/api/runs", headers={"Authorization": "Bearer secret"}).json() == []
        assert httpx.get(f"{url}/", params={"token": "secret"}).status_code == 200


def test_a_restarted_service_still_knows_what_it_launched(tmp_path):
    with service(tmp_path) as url:
        started = httpx.post(f"{url}/api/runs", json={"overrides": LONG}, timeout=60).json()
        wait_for(f"{url}/api/runs/{started['id']}", lambda r: r["status"] == "running")
    with service(tmp_path) as url:  # a new service process over the same root
        (launched,) = httpx.get(f"{url}/api/launched").json()
        assert launched["pid"] == started["pid"] and launched["alive"]
        assert httpx.post(f"{url}/api/runs/{started['id']}/stop").status_code == 200
        wait_for(f"{url}/api/runs/{started['id']}", lambda r: r["status"] == "interrupted")
        assert not wait_for(f"{url}/api/launched", lambda rows: not rows[0]["alive"])[0]["alive"]


def test_the_dashboard_launches_a_sweep_and_shows_its_runs_and_comparison(tmp_path):
    with service(tmp_path) as url, open_page(url + "/", offline=False) as (page, visit):
        page.fill("#overrides", " ".join(["seed=0,1", *TINY, "logger=none"]))
        page.click("#launch-sweep")
        page.wait_for_selector("#message.ok", timeout=60000)
        page.wait_for_selector("#sweeps a:text('report.html')", timeout=240000)  # updated in place, no reload
        statuses = page.eval_on_selector_all("#runs .status", "s => s.map(e => e.textContent)")
        links = page.eval_on_selector_all("#runs a", "as => as.map(a => a.textContent)")
        href = page.get_attribute("#runs a:text('report.html')", "href")
        comparison = page.get_attribute("#sweeps a:text('report.html')", "href")
        (listed,) = httpx.get(f"{url}/api/sweeps").json()
        sweep = httpx.get(f"{url}/api/sweeps/{listed['id']}").json()
        page.fill("#overrides", "algo=pop")
        page.click("#launch-sweep")
        page.wait_for_selector("#message.error", timeout=60000)
        error = page.text_content("#message")
        page.screenshot(path=tmp_path / "dashboard.png", full_page=True)
    assert not visit.errors and not visit.dialogs
    assert all(u.startswith(url) for u in visit.requests), visit.requests  # nothing from elsewhere (no CDN)
    assert statuses == ["completed", "completed"]  # both jobs of the sweep
    assert {"report.html", "video.mp4"} <= set(links)
    assert href and href.endswith("/files/report.html") and comparison.endswith("/report")
    assert [row["seeds"] for row in sweep["comparison"]] == [2] and len(sweep["jobs"]) == 2
    assert "algo/pop" in error
    assert not_blank(tmp_path / "dashboard.png") > 0.02
