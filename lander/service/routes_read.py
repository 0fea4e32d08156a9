"""The service's read-only endpoints: runs, their metrics and files, sweeps; what lander offers (algorithms, envs,
presets, config keys: :mod:`lander.config.catalog`).

Every file is read through :mod:`lander.service.store` (real path under the root, regular file, bounded size),
and the files of a run are served as untrusted: under ``Content-Security-Policy: sandbox`` (a report's scripts
run in an opaque origin, with no access to the service, its cookies or the network), ``nosniff``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, cast

import pandas as pd
import yaml
from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field

from lander.config import catalog
from lander.config.trust import resolve_trusted
from lander.service import files, store
from lander.service.launcher import Launcher
from lander.service.overrides import root_conf, root_options
from lander.storage.rundir import RunPaths, SweepPaths, find_run_dirs
from lander.storage.yamlfile import safe_yaml

router = APIRouter()
# what a run's file may do once opened: run its own inline scripts, show its own inline media; nothing else
UNTRUSTED = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; media-src data: blob:; font-src data:"
)
MEDIA = {
    ".html": "text/html",
    ".mp4": "video/mp4",
    ".png": "image/png",
    ".json": "application/json",
    ".csv": "text/csv",
    ".zip": "application/zip",
    ".log": "text/plain",
}


Scalar = str | int | float | bool | None  # a value read from a run's own files: shown as it is, whatever its type


class Open(BaseModel):
    """A body whose fields are listed for the schema; any other field is passed on as it is."""

    model_config = ConfigDict(extra="allow")


class Algo(Open):
    """An algorithm config (``algo=<name>``)."""

    name: str
    description: str
    target: str | None = Field(description="the model class (algo.model._target_)")
    action_spaces: list[str] = Field(description="discrete, continuous")
    observation_spaces: list[str] = Field(description="vector, image, discrete, dict")
    n_envs: int | None = None
    total_timesteps: int | None = Field(None, description="its tuned budget")
    model: dict[str, Any] = Field(description="the model's keyword arguments (algo.model)")
    envs: list[str] = Field(description="the envs whose spaces it acts in")
    mine: bool = Field(False, description="from the root's conf/, not lander's")


class Env(Open):
    """An env config (``env=<name>``)."""

    name: str
    description: str
    id: str = Field(description="Gymnasium's id")
    action_space: str
    observation_space: str
    policy: str
    reward_threshold: float | None = None
    algos: list[str] = Field(description="the algorithms that act in it")
    mine: bool = Field(False, description="from the root's conf/, not lander's")


class Preset(Open):
    """An experiment preset or a search (``experiment=<name>``, ``hparams_search=<name>``); one that cannot be read
    has only its name, group, ``mine`` and ``error``."""

    name: str
    group: str
    override: str | None = Field(None, description="the override that chooses it")
    description: str | None = None
    algo: str | None = None
    env: str | None = None
    sweep: dict[str, str] | None = Field(None, description="what it sweeps: key -> values")
    trials: int | None = Field(None, description="a search's trials in all (Optuna's n_trials); null: an experiment")
    mine: bool = Field(False, description="from the root's conf/, not lander's")
    error: str | None = Field(None, description="why it cannot be read")


class ConfigKey(Open):
    """One key of the run config."""

    key: str
    type: str
    default: Any = None
    meaning: str
    options: list[str] | None = None


class LatestEval(Open):
    """The latest periodic evaluation (a row of metrics/eval.csv)."""

    timesteps: Scalar = None
    mean: Scalar = None
    sem: Scalar = None


class RunInfo(Open):
    """A run as the list of runs shows it."""

    id: str
    path: str = Field(description="its directory, under the root")
    status: str = Field(description="created, running, paused, completed, interrupted, failed, stopped or unreadable")
    active: bool = Field(description="a process holds the run (training, or writing its last files)")
    algo: Scalar = None
    env: Scalar = None
    env_id: Scalar = None
    seed: Scalar = None
    gamma: Scalar = None
    total_timesteps: Scalar = None
    wall_seconds: Scalar = None
    final_eval_mean: Scalar = None
    final_eval_sem: Scalar = None
    error: Scalar = None
    stopped_early: Scalar = Field(None, description="why training ended before the budget (a stop rule, a callback)")
    timesteps: int | float = Field(description="the timesteps trained so far")
    latest_eval: LatestEval | None = None
    started: float = Field(description="when (Unix time)")
    files: list[str] = Field(description="its files the service serves (/api/runs/{id}/files/{name})")
    process_group: list[str] = Field(description="the runs its process trains (more than one: seeds side by side)")


class RunDetail(RunInfo):
    """One run: the list's record, its summary, resolved config and overrides."""

    summary: dict[str, Any] = Field(description="its summary.json")
    config: dict[str, Any] = Field(description="its resolved config")
    overrides: list[Any] = Field(description="its command-line overrides")


class LeftOut(BaseModel):
    """A run a comparison did not compare, and why (an unequal budget, a failure)."""

    run: str
    why: str
    detail: str


class SweepInfo(Open):
    """A sweep as the list of sweeps shows it."""

    id: str
    path: str
    started: float
    jobs: int = Field(description="its jobs (run directories)")
    compared: bool = Field(description="its comparison is written")
    state: str = Field(
        description="compared; sweeping (its process runs: one this service started, or one that holds the sweep's "
        "lock); ended (that process ended without a comparison: stopped, or no job completed); or unknown (no "
        "process of this machine is known to have run it: an older lander's, or a copy)"
    )
    error: str | None = Field(
        None,
        description="ended: the last line of its service.log (how the sweep ended), or for a sweep started "
        "elsewhere its runs' statuses",
    )
    left_out: list[LeftOut]


class ComparisonInfo(Open):
    """A comparison of chosen runs as the list shows it."""

    id: str
    path: str
    started: float
    runs: list[str] = Field(description="the runs compared (paths under the root)")
    compared: bool = Field(description="its report is written")
    state: str = Field(description="compared, comparing (its process runs) or failed")
    error: str | None = Field(None, description="failed: the last line of its service.log (lander.compare's reason)")
    left_out: list[LeftOut]


class TableDetail(Open):
    """A sweep's or a comparison's table (table.csv as rows), what it left out, and its report's address."""

    id: str
    path: str
    comparison: list[dict[str, Any]] = Field(description="table.csv as rows (column -> value)")
    left_out: list[LeftOut]
    report: str | None = Field(description="the address of its report.html; None until it is written")


class SweepDetail(TableDetail):
    """One sweep: its jobs and its comparison."""

    jobs: list[RunInfo]


class ComparisonDetail(TableDetail):
    """One comparison of chosen runs."""

    runs: list[str]
    state: str | None = Field(None, description="compared, comparing or failed (as the list says)")
    error: str | None = Field(None, description="failed: the last line of its service.log")


def root_of(request: Request) -> Path:
    return cast(Path, request.app.state.root)


@router.get(
    "/api/algos",
    response_model=list[Algo],
    summary="The algorithms (lander's and the root's conf/algo/): model class, spaces, tuned budget, model keys, envs",
)
def algos(request: Request) -> list[dict[str, Any]]:
    conf = root_conf(root_of(request))
    return catalog.algos(root_options(conf), conf)


@router.get(
    "/api/envs",
    response_model=list[Env],
    summary="The envs (lander's and the root's conf/env/): Gymnasium id, spaces, reward threshold, their algorithms",
)
def envs(request: Request) -> list[dict[str, Any]]:
    conf = root_conf(root_of(request))
    return catalog.envs(root_options(conf), conf)


@router.get(
    "/api/presets",
    response_model=list[Preset],
    summary="Experiment presets and searches (lander's and the root's conf/experiment/)",
)
def presets(request: Request) -> list[dict[str, Any]]:
    conf = root_conf(root_of(request))  # read only where it really is under the root (a copied conf/ may be a
    if conf is not None and not (conf / "experiment").resolve().is_relative_to(conf.resolve()):  # link elsewhere),
        conf = None  # as launches compose it
    return catalog.presets(conf)


@router.get(
    "/api/config",
    response_model=list[ConfigKey],
    summary="Every run config key: type, default, meaning, allowed values",
)
def config_keys() -> list[dict[str, Any]]:
    return catalog.config_keys()


@router.get("/api/runs", response_model=list[RunInfo], summary="Every run under the root, newest first")
def runs(request: Request) -> list[dict[str, Any]]:
    return store.list_runs(root_of(request), processes_of(request))


@router.get(
    "/api/runs/{run_id}", response_model=RunDetail, summary="One run: its summary, resolved config and overrides"
)
def run(request: Request, run_id: str) -> dict[str, Any]:
    root = root_of(request)
    path = store.run_dir(root, run_id)
    paths = RunPaths(path)
    summary, _problem = store.summary_of(root, path)
    return store.safe_run_info(root, path, processes_of(request)) | {
        "process_group": store.process_group(root, path),
        "summary": summary,
        "config": shown_config(root, paths.config),
        "overrides": yaml_file(root, paths.overrides) or [],
    }


@router.get("/api/runs/{run_id}/metrics/{name}", summary="A metrics file as rows; ?since=<timestep> for polling")
def metrics(
    request: Request, run_id: str, name: str, since: float | None = Query(None, allow_inf_nan=False)
) -> list[dict[str, Any]]:
    root = root_of(request)
    files_ = RunPaths(store.run_dir(root, run_id)).metric_files
    if name not in files_:
        raise store.NotFound(f"metrics {name!r} (one of {', '.join(files_)})")
    try:
        return store.rows(root, files_[name], store.TIMESTEP_COLUMNS.get(name, "timesteps"), since)
    except files.Unreadable as exc:
        raise store.NotFound(str(exc)) from exc


@router.get("/api/runs/{run_id}/files/{name:path}", summary="A file of the run (report, video, model, ...)")
def run_file(request: Request, run_id: str, name: str) -> FileResponse:
    return untrusted(store.run_file(root_of(request), run_id, name))


@router.get("/api/sweeps", response_model=list[SweepInfo], summary="Every sweep under the root, newest first")
def sweeps(request: Request) -> list[dict[str, Any]]:
    return store.list_sweeps(root_of(request), processes_of(request))


@router.get(
    "/api/sweeps/{sweep_id}", response_model=SweepDetail, summary="One sweep: its jobs and its comparison table"
)
def sweep(request: Request, sweep_id: str) -> dict[str, Any]:
    root = root_of(request)
    path = store.sweep_dir(root, sweep_id)
    processes = processes_of(request)
    jobs = [store.safe_run_info(root, job, processes) for job in find_run_dirs([path])]
    report = files.servable(root, SweepPaths(path).report)
    return {
        "id": sweep_id,
        "path": str(path.relative_to(root)),
        "jobs": jobs,
        "comparison": table_rows(root, SweepPaths(path).table),
        "left_out": store.left_out(root, SweepPaths(path).comparison),  # runs the comparison did not compare, and why
        "report": f"/api/sweeps/{sweep_id}/report" if report else None,
    }


def table_rows(root: Path, table: Path) -> list[dict[str, Any]]:
    """A comparison's ``table.csv`` as JSON rows (none where it is not written yet, or unreadable)."""
    try:
        text = files.read_text(root, table, store.MAX_CSV)
        return cast(
            list[dict[str, Any]], pd.read_csv(io.StringIO(text)).astype(object).where(pd.notna, None).to_dict("records")
        )
    except (files.Unreadable, ValueError):
        return []


@router.get("/api/sweeps/{sweep_id}/report", summary="The sweep's comparison/report.html")
def sweep_report(request: Request, sweep_id: str) -> FileResponse:
    root = root_of(request)
    try:
        report = files.real_file(root, SweepPaths(store.sweep_dir(root, sweep_id)).report)
    except files.Unreadable as exc:
        raise store.NotFound(str(exc)) from exc
    return untrusted(report)


@router.get("/api/comparisons", response_model=list[ComparisonInfo], summary="Comparisons of chosen runs, newest first")
def comparisons(request: Request) -> list[dict[str, Any]]:
    return store.list_comparisons(root_of(request), processes_of(request))


def processes_of(request: Request) -> dict[str, bool]:
    """The directories of the processes this root's services started, each with whether one still runs there."""
    return cast(Launcher, request.app.state.launcher).processes()


@router.get(
    "/api/comparisons/{comparison_id}",
    response_model=ComparisonDetail,
    summary="One comparison: its runs and its table",
)
def comparison(request: Request, comparison_id: str) -> dict[str, Any]:
    root = root_of(request)
    path = store.comparison_dir(root, comparison_id)
    listed = store.comparison_info(root, path, processes_of(request))
    return {
        "id": comparison_id,
        "path": listed["path"],
        "runs": listed["runs"],
        "state": listed["state"],
        "error": listed.get("error"),
        "comparison": table_rows(root, path / "table.csv"),
        "left_out": listed["left_out"],  # runs it did not compare (an unequal budget, a failure), and why
        "report": f"/api/comparisons/{comparison_id}/report" if listed["compared"] else None,
    }


@router.get("/api/comparisons/{comparison_id}/report", summary="A comparison's report.html")
def comparison_report(request: Request, comparison_id: str) -> FileResponse:
    root = root_of(request)
    try:
        report = files.real_file(root, store.comparison_dir(root, comparison_id) / "report.html")
    except files.Unreadable as exc:
        raise store.NotFound(str(exc)) from exc
    return untrusted(report)


def untrusted(path: Path) -> FileResponse:
    """A file of a run or sweep, served so that it cannot act on the service (see :data:`UNTRUSTED`)."""
    media = MEDIA.get(path.suffix, "application/octet-stream")
    return FileResponse(path, media_type=media, headers={"Content-Security-Policy": UNTRUSTED})


def yaml_file(root: Path, path: Path) -> Any:
    """A small YAML file of a run, safely parsed; None if absent or unreadable."""
    try:
        return safe_yaml(files.read_text(root, path, store.MAX_CONFIG), files.shown(root, path))
    except (files.Unreadable, yaml.YAMLError):
        return None


def shown_config(root: Path, config: Path) -> dict[str, Any]:
    """A run's config with its interpolations resolved where only trusted ones are called (``${key}``,
    ``${now:...}``); as written otherwise, so ``${oc.env:...}`` never shows the service's environment."""
    loaded = yaml_file(root, config)
    return resolve_trusted(loaded) if isinstance(loaded, dict) else {}
