"""The service's HTTP API (FastAPI; OpenAPI docs at ``/docs``) and its dashboard page at ``/``."""

from __future__ import annotations

import hmac
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from omegaconf import OmegaConf

from lander.rundir import RunPaths, read_json
from lander.service import store
from lander.service.launcher import Launcher, Refused, check_overrides


def create_app(root: Path, token: str | None = None) -> FastAPI:
    """The service for the runs and sweeps under ``root``; with ``token``, every request must carry it
    (``Authorization: Bearer <token>``, or ``?token=<token>`` for links and the page)."""
    root = root.resolve()
    app = FastAPI(title="lander", description="Launch, watch, stop, resume and compare lander runs.")
    launcher = Launcher(root)

    @app.middleware("http")
    async def check_token(request: Request, call_next: Any) -> Any:
        if token is not None:
            given = request.headers.get("authorization", "").removeprefix("Bearer ") or request.query_params.get(
                "token", ""
            )
            if not hmac.compare_digest(given.encode(), token.encode()):
                return JSONResponse({"error": "a token is required: Authorization: Bearer <token>"}, 401)
        return await call_next(request)

    @app.exception_handler(store.NotFound)
    async def not_found(_request: Request, exc: store.NotFound) -> JSONResponse:
        return JSONResponse({"error": f"not found: {exc}"}, 404)

    @app.exception_handler(RequestValidationError)
    async def bad_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        malformed = first.get("type") == "json_invalid"
        where = ".".join(map(str, first.get("loc", [])))
        what = "malformed JSON" if malformed else f"{first.get('msg', 'invalid')} at {where}"
        return JSONResponse({"error": f"request body: {what}; expected {{\"overrides\": [\"key=value\", ...]}}"},
                            400 if malformed else 422)  # fmt: skip

    @app.exception_handler(Refused)
    async def refused(_request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, exc.status)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return resources.files("lander.service").joinpath("dashboard.html").read_text()

    @app.get("/api/runs", summary="Every run under the root, newest first")
    def runs() -> list[dict[str, Any]]:
        return store.list_runs(root)

    @app.get("/api/runs/{run_id}", summary="One run: its summary, resolved config and overrides")
    def run(run_id: str) -> dict[str, Any]:
        path = store.run_dir(root, run_id)
        paths = RunPaths(path)
        config = resolved(paths.config)
        overrides = yaml.safe_load(paths.overrides.read_text()) if paths.overrides.is_file() else []
        summary = read_json(paths.summary) if paths.summary.is_file() else {}
        return store.run_info(root, path) | {"summary": summary, "config": config, "overrides": overrides}

    @app.get("/api/runs/{run_id}/metrics/{name}", summary="A metrics file as rows; ?since=<timestep> for polling")
    def metrics(run_id: str, name: str, since: float | None = None) -> list[dict[str, Any]]:
        if name not in store.METRICS:
            raise store.NotFound(f"metrics {name!r} (one of {', '.join(store.METRICS)})")
        file, column = store.METRICS[name]
        return store.rows(store.run_dir(root, run_id) / "metrics" / file, column, since)

    @app.get("/api/runs/{run_id}/files/{name:path}", summary="A file of the run (report, video, model, ...)")
    def run_file(run_id: str, name: str) -> FileResponse:
        return FileResponse(store.run_file(root, run_id, name))

    @app.get("/api/sweeps", summary="Every sweep under the root, newest first")
    def sweeps() -> list[dict[str, Any]]:
        return store.list_sweeps(root)

    @app.get("/api/sweeps/{sweep_id}", summary="One sweep: its jobs and its comparison table")
    def sweep(sweep_id: str) -> dict[str, Any]:
        path = store.sweep_dir(root, sweep_id)
        table = path / "comparison" / "table.csv"
        rows = pd.read_csv(table).astype(object).where(pd.notna, None).to_dict("records") if table.is_file() else []
        jobs = [store.run_info(root, job) for job in store.find_run_dirs([path])]
        report = path / "comparison" / "report.html"
        return {"id": sweep_id, "path": str(path.relative_to(root)), "jobs": jobs, "comparison": rows,
                "report": f"/api/sweeps/{sweep_id}/report" if report.is_file() else None}  # fmt: skip

    @app.get("/api/sweeps/{sweep_id}/report", summary="The sweep's comparison/report.html")
    def sweep_report(sweep_id: str) -> FileResponse:
        report = store.sweep_dir(root, sweep_id) / "comparison" / "report.html"
        if not report.is_file():
            raise store.NotFound(f"{sweep_id}/comparison/report.html")
        return FileResponse(report)

    @app.post("/api/runs", status_code=201, summary='Start a run: {"overrides": ["algo=ppo", "seed=0"]}')
    def launch_run(body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        entry = launcher.launch_run(check_overrides(body.get("overrides", []), multirun=False))
        return entry | {"id": entry["path"].replace("/", "~")}

    @app.post("/api/sweeps", status_code=201, summary='Start a sweep: {"overrides": ["algo=ppo,a2c", "seed=0,1"]}')
    def launch_sweep(body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        entry = launcher.launch_sweep(check_overrides(body.get("overrides", []), multirun=True))
        return entry | {"id": entry["path"].replace("/", "~")}

    @app.post("/api/runs/{run_id}/stop", summary="Stop a running run (SIGINT: interrupted, with a checkpoint)")
    def stop(run_id: str) -> dict[str, Any]:
        return launcher.stop(store.run_dir(root, run_id))

    @app.post("/api/runs/{run_id}/resume", status_code=201, summary="Resume an interrupted, failed or killed run")
    def resume(run_id: str) -> dict[str, Any]:
        entry = launcher.resume(store.run_dir(root, run_id))
        return entry | {"id": run_id}

    @app.get("/api/launched", summary="The processes this root's service started, and whether they run")
    def launched() -> list[dict[str, Any]]:
        return launcher.launched()

    return app


def resolved(config: Path) -> dict[str, Any]:
    """A run's config with its interpolations resolved (as written if they do not resolve)."""
    if not config.is_file():
        return {}
    loaded = OmegaConf.load(config)
    try:
        return OmegaConf.to_container(loaded, resolve=True)  # type: ignore[return-value]
    except Exception:  # an interpolation of a resolver not registered here
        return OmegaConf.to_container(loaded, resolve=False)  # type: ignore[return-value]
