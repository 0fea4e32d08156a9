"""The service's endpoints that start or stop processes: launch a run, a sweep or a comparison of chosen runs; stop,
pause, continue, resume.

Each is a POST with a JSON body carrying the token (:mod:`lander.service.guard`); a launch's overrides are data
checked by :func:`lander.service.overrides.check_overrides` before anything starts.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Request

from lander.service import store
from lander.service.launcher import Launcher
from lander.service.overrides import Refused, check_overrides, run_label

router = APIRouter()


def launcher_of(request: Request) -> Launcher:
    return request.app.state.launcher


@router.post("/api/runs", status_code=201, summary='Start a run: {"overrides": ["algo=ppo", "seed=0"]}')
def launch_run(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
    launcher = launcher_of(request)
    launcher.room()  # before the overrides are composed: a full service answers at once
    overrides, cfg = check_overrides(body.get("overrides", []), False, launcher.max_jobs, launcher.allowed)
    entry = launcher.launch_run(overrides, run_label(cfg))
    return entry | {"id": entry["path"].replace("/", "~")}


@router.post("/api/sweeps", status_code=201, summary='Start a sweep: {"overrides": ["algo=ppo,a2c", "seed=0,1"]}')
def launch_sweep(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
    launcher = launcher_of(request)
    launcher.room()
    overrides, _ = check_overrides(body.get("overrides", []), True, launcher.max_jobs, launcher.allowed)
    entry = launcher.launch_sweep(overrides)
    return entry | {"id": entry["path"].replace("/", "~")}


@router.post("/api/comparisons", status_code=201, summary='Compare any runs: {"runs": ["<run id>", ...]}')
def compare_runs(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
    """``python -m lander.compare`` over the chosen runs (from any sweeps, or none): each env's runs at their common
    budget, grouped by configuration, the statistics of a sweep's end."""
    launcher = launcher_of(request)
    ids = body.get("runs")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(set(ids)) != len(ids):
        raise Refused('"runs" must be a list of distinct run ids (GET /api/runs); nothing was started')
    if not 2 <= len(ids) <= launcher.max_jobs:
        raise Refused(f"compare 2 to {launcher.max_jobs} runs (--max-jobs), not {len(ids)}; nothing was started")
    runs = [store.run_dir(launcher.root, run_id) for run_id in ids]
    entry = launcher.launch_comparison(runs)
    return entry | {"id": entry["path"].replace("/", "~")}


@router.post("/api/runs/{run_id}/stop", summary="Stop a running run (SIGINT: interrupted, with a checkpoint)")
def stop(request: Request, run_id: str) -> dict[str, Any]:
    launcher = launcher_of(request)
    return launcher.stop(store.run_dir(launcher.root, run_id))


@router.post("/api/runs/{run_id}/pause", summary="Pause a running run at its next step (SIGUSR1: paused)")
def pause(request: Request, run_id: str) -> dict[str, Any]:
    launcher = launcher_of(request)
    return launcher.pause(store.run_dir(launcher.root, run_id))


@router.post("/api/runs/{run_id}/continue", summary="Let a paused run go on (SIGUSR2)")
def go_on(request: Request, run_id: str) -> dict[str, Any]:
    launcher = launcher_of(request)
    return launcher.go_on(store.run_dir(launcher.root, run_id))


@router.post("/api/runs/{run_id}/resume", status_code=201, summary="Resume an interrupted, failed or killed run")
def resume(request: Request, run_id: str) -> dict[str, Any]:
    launcher = launcher_of(request)
    return launcher.resume(store.run_dir(launcher.root, run_id)) | {"id": run_id}


@router.get("/api/launched", summary="The processes this root's service started, and whether they run")
def launched(request: Request) -> list[dict[str, Any]]:
    return launcher_of(request).launched()
