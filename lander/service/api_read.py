"""The service's read-only endpoints: runs, their metrics and files, sweeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from omegaconf import OmegaConf

from lander.rundir import RunPaths, read_json
from lander.service import store

router = APIRouter()


def root_of(request: Request) -> Path:
    return request.app.state.root


@router.get("/api/runs", summary="Every run under the root, newest first")
def runs(request: Request) -> list[dict[str, Any]]:
    return store.list_runs(root_of(request))


@router.get("/api/runs/{run_id}", summary="One run: its summary, resolved config and overrides")
def run(request: Request, run_id: str) -> dict[str, Any]:
    root = root_of(request)
    path = store.run_dir(root, run_id)
    paths = RunPaths(path)
    overrides = yaml.safe_load(paths.overrides.read_text()) if paths.overrides.is_file() else []
    summary = read_json(paths.summary) if paths.summary.is_file() else {}
    return store.run_info(root, path) | {"summary": summary, "config": resolved(paths.config), "overrides": overrides}


@router.get("/api/runs/{run_id}/metrics/{name}", summary="A metrics file as rows; ?since=<timestep> for polling")
def metrics(request: Request, run_id: str, name: str, since: float | None = None) -> list[dict[str, Any]]:
    if name not in store.METRICS:
        raise store.NotFound(f"metrics {name!r} (one of {', '.join(store.METRICS)})")
    file, column = store.METRICS[name]
    return store.rows(store.run_dir(root_of(request), run_id) / "metrics" / file, column, since)


@router.get("/api/runs/{run_id}/files/{name:path}", summary="A file of the run (report, video, model, ...)")
def run_file(request: Request, run_id: str, name: str) -> FileResponse:
    return FileResponse(store.run_file(root_of(request), run_id, name))


@router.get("/api/sweeps", summary="Every sweep under the root, newest first")
def sweeps(request: Request) -> list[dict[str, Any]]:
    return store.list_sweeps(root_of(request))


@router.get("/api/sweeps/{sweep_id}", summary="One sweep: its jobs and its comparison table")
def sweep(request: Request, sweep_id: str) -> dict[str, Any]:
    root = root_of(request)
    path = store.sweep_dir(root, sweep_id)
    table = path / "comparison" / "table.csv"
    rows = pd.read_csv(table).astype(object).where(pd.notna, None).to_dict("records") if table.is_file() else []
    jobs = [store.run_info(root, job) for job in store.find_run_dirs([path])]
    report = path / "comparison" / "report.html"
    return {"id": sweep_id, "path": str(path.relative_to(root)), "jobs": jobs, "comparison": rows,
            "report": f"/api/sweeps/{sweep_id}/report" if report.is_file() else None}  # fmt: skip


@router.get("/api/sweeps/{sweep_id}/report", summary="The sweep's comparison/report.html")
def sweep_report(request: Request, sweep_id: str) -> FileResponse:
    report = store.sweep_dir(root_of(request), sweep_id) / "comparison" / "report.html"
    if not report.is_file():
        raise store.NotFound(f"{sweep_id}/comparison/report.html")
    return FileResponse(report)


def resolved(config: Path) -> dict[str, Any]:
    """A run's config with its interpolations resolved (as written if they do not resolve)."""
    if not config.is_file():
        return {}
    loaded = OmegaConf.load(config)
    try:
        return OmegaConf.to_container(loaded, resolve=True)  # type: ignore[return-value]
    except Exception:  # an interpolation of a resolver not registered here
        return OmegaConf.to_container(loaded, resolve=False)  # type: ignore[return-value]
