"""The service's endpoints that start or stop processes: launch a run, a sweep or a comparison of chosen runs; stop,
pause, continue, resume.

Each is a POST with a JSON body carrying the token (:mod:`lander.service.guard`); a launch's overrides are data
checked by :func:`lander.service.overrides.check_overrides` before anything starts.
"""

from __future__ import annotations

from typing import Any, cast

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from lander.service import store
from lander.service.launcher import Launcher
from lander.service.overrides import Refused, check_overrides, root_conf, run_label

router = APIRouter()


class Body(BaseModel):
    """A request body: a key it does not have is refused (422), not passed over (``{"overides": [...]}`` started
    lander's default run, without a word)."""

    model_config = ConfigDict(extra="forbid")


class AdaStop(Body):
    """A sweep that decides how many seeds it needs (``hydra/sweeper=adastop``): its configurations get ``n`` seeds
    per interim, at most ``K`` interims, with the family-wise error ``alpha``; the sweeper chooses the seeds."""

    n: int = Field(5, ge=2, le=100, description="seeds per configuration per interim")
    K: int = Field(3, ge=1, le=20, description="interims at most")
    alpha: float = Field(0.05, gt=0, lt=1, description="family-wise error over all comparisons and interims")

    def overrides(self) -> list[str]:
        """The sweeper's overrides, made by the service from these checked numbers."""
        return ["hydra/sweeper=adastop", f"hydra.sweeper.n={self.n}", f"hydra.sweeper.K={self.K}",
                f"hydra.sweeper.alpha={self.alpha!r}"]  # fmt: skip


class Launch(Body):
    """What to launch: overrides of lander's config, as data (checked by
    :func:`lander.service.overrides.check_overrides`)."""

    overrides: list[str] = Field(
        default_factory=list, description='Hydra overrides, e.g. ["algo=ppo", "seed=0"] (a sweep: "seed=0,1,2")'
    )
    adastop: AdaStop | None = Field(
        None, description="a sweep only: let AdaStop decide the seeds (no seed= override then); null: fixed seeds"
    )
    trials: int | None = Field(
        None,
        ge=1,
        description="a search only (hparams_search=...): its trials in all, Optuna's n_trials (at most --max-jobs); "
        "null: the preset's",
    )


class Compare(Body):
    """The runs to compare, by id (``GET /api/runs``), from any sweeps or none; optionally the configuration to test
    the others against and the budget to compare them at (``lander.compare``'s ``--baseline`` and
    ``--at-timesteps``)."""

    runs: list[str] = Field(description="2 to --max-jobs distinct run ids")
    baseline: str | None = Field(
        None,
        min_length=1,
        max_length=1000,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="the configuration to test the others against, as the comparison names it (e.g. 'gamma=0.99'; "
        "null: the first); one that is not there fails the comparison, which says the names it has",
    )
    at_timesteps: int | None = Field(
        None, ge=1, description="compare every run as it stood at N steps, finished or not (null: completed runs)"
    )


class Signal(Body):
    """A stop, pause or continue. A run trained side by side with other seeds (``seeds_per_process``) shares its
    process with them: a signal reaches every seed of it, and is sent only with ``group: true``."""

    group: bool = Field(False, description="act on every seed that shares the run's process (409 otherwise)")


class Reproduce(Body):
    """A reproduction of a run (``python -m lander.reproduce``): all of it, or its first ``steps`` steps."""

    steps: int | None = Field(None, ge=1, description="train and compare only the first N steps (null: the whole run)")


class Launched(BaseModel):
    """A process the service started."""

    id: str = Field(description="the run's, sweep's or comparison's id")
    pid: int
    kind: str = Field(description="run, sweep, compare, resume or reproduce")
    path: str = Field(description="its directory, under the root")
    args: list[str] = Field(description="the arguments of python -m lander.run (or lander.compare)")
    started: float = Field(description="when (Unix time)")
    created: float | None = Field(None, description="the process's creation time (psutil): the record's identity")


class Signalled(BaseModel):
    """A signal sent: to which process, and every run it reaches."""

    pid: int
    group: list[str] = Field(description="the runs that share the process (paths under the root)")
    stopping: str | None = None
    pausing: str | None = None
    continuing: str | None = None


def launcher_of(request: Request) -> Launcher:
    return cast(Launcher, request.app.state.launcher)


@router.post("/api/runs", status_code=201, summary='Start a run: {"overrides": ["algo=ppo", "seed=0"]}')
def launch_run(request: Request, body: Launch) -> Launched:
    launcher = launcher_of(request)
    launcher.room()  # before the overrides are composed: a full service answers at once
    if body.adastop is not None or body.trials is not None:
        what = '"adastop" decides the seeds of a sweep' if body.adastop else '"trials" are a search\'s'
        raise Refused(f"{what}: POST /api/sweeps; nothing was started")
    conf = root_conf(launcher.root)
    overrides, cfg = check_overrides(body.overrides, False, launcher.max_jobs, launcher.allowed, conf=conf)
    return as_launched(launcher.launch_run(overrides, run_label(cfg)))


def as_launched(entry: dict[str, Any]) -> Launched:
    return Launched(**entry, id=entry["path"].replace("/", "~"))


@router.post("/api/sweeps", status_code=201, summary='Start a sweep: {"overrides": ["algo=ppo,a2c", "seed=0,1"]}')
def launch_sweep(request: Request, body: Launch) -> Launched:
    launcher = launcher_of(request)
    launcher.room()
    sweeper = body.adastop.overrides() if body.adastop else []
    runs = body.adastop.n * body.adastop.K if body.adastop else 1
    if body.trials is not None:
        if body.adastop is not None:
            raise Refused('"adastop" decides a sweep\'s seeds, "trials" a search\'s trials: one or the other')
        sweeper.append(f"hydra.sweeper.n_trials={body.trials}")
    conf = root_conf(launcher.root)
    overrides, _ = check_overrides(
        body.overrides, True, launcher.max_jobs, launcher.allowed, sweeper, runs, trials=body.trials, conf=conf
    )
    return as_launched(launcher.launch_sweep([*overrides, *sweeper]))


@router.post("/api/comparisons", status_code=201, summary='Compare any runs: {"runs": ["<run id>", ...]}')
def compare_runs(request: Request, body: Compare) -> Launched:
    """``python -m lander.compare`` over the chosen runs (from any sweeps, or none): each env's runs at their common
    budget, grouped by configuration, the statistics of a sweep's end."""
    launcher = launcher_of(request)
    ids = body.runs
    if len(set(ids)) != len(ids):
        raise Refused('"runs" must be a list of distinct run ids (GET /api/runs); nothing was started')
    if not 2 <= len(ids) <= launcher.max_jobs:
        raise Refused(f"compare 2 to {launcher.max_jobs} runs (--max-jobs), not {len(ids)}; nothing was started")
    runs = [store.run_dir(launcher.root, run_id) for run_id in ids]
    return as_launched(launcher.launch_comparison(runs, body.baseline, body.at_timesteps))


@router.post("/api/runs/{run_id}/stop", summary="Stop a running run (SIGINT: interrupted, with a checkpoint)")
def stop(request: Request, run_id: str, body: Signal) -> Signalled:
    launcher = launcher_of(request)
    return Signalled(**launcher.stop(store.run_dir(launcher.root, run_id), body.group))


@router.post("/api/runs/{run_id}/pause", summary="Pause a running run at its next step (SIGUSR1: paused)")
def pause(request: Request, run_id: str, body: Signal) -> Signalled:
    launcher = launcher_of(request)
    return Signalled(**launcher.pause(store.run_dir(launcher.root, run_id), body.group))


@router.post("/api/runs/{run_id}/continue", summary="Let a paused run go on (SIGUSR2)")
def go_on(request: Request, run_id: str, body: Signal) -> Signalled:
    launcher = launcher_of(request)
    return Signalled(**launcher.go_on(store.run_dir(launcher.root, run_id), body.group))


@router.post("/api/runs/{run_id}/resume", status_code=201, summary="Resume an interrupted, failed or killed run")
def resume(request: Request, run_id: str) -> Launched:
    launcher = launcher_of(request)
    return Launched(**launcher.resume(store.run_dir(launcher.root, run_id)) | {"id": run_id})


@router.post(
    "/api/runs/{run_id}/reproduce",
    status_code=201,
    summary="Train a run again beside it and compare (python -m lander.reproduce): its verdict appears in the run's "
    "reproductions",
)
def reproduce(request: Request, run_id: str, body: Reproduce) -> Launched:
    launcher = launcher_of(request)
    return Launched(**launcher.reproduce(store.run_dir(launcher.root, run_id), body.steps) | {"id": run_id})


@router.get("/api/launched", summary="The processes this root's service started, and whether they run")
def launched(request: Request) -> list[dict[str, Any]]:
    return launcher_of(request).launched()
