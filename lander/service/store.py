"""The runs and sweeps under the service's root, found on disk (no database): ids, safe paths, what a list shows.

An id is a run's or sweep's path relative to the root with ``/`` written as ``~``
(``outputs~2026-11-23~10-00-00_ppo_lunar_lander_seed-0``). An id that leaves the root (``..``, an absolute
path, a symlink pointing out) or names no run is :class:`NotFound`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lander.csvlog import read_complete
from lander.lock import RunLock
from lander.rundir import RunPaths, find_run_dirs, read_json

METRICS = {  # name in the API: file under metrics/, and its timestep column
    "train_episodes": ("train_episodes.csv", "timesteps"),
    "eval": ("eval.csv", "timesteps"),
    "eval_episodes": ("eval_episodes.csv", "timesteps"),
    "resources": ("resources.csv", "timesteps"),
    "sb3_progress": ("sb3_progress.csv", "time/total_timesteps"),
}
FILES = ("report.html", "video.mp4", "learning_curve.png", "model.zip", "best_model.zip", "eval.json", "summary.json",
         "run.log", "service.log")  # fmt: skip
PLACES = ("outputs", "multirun")
SHOWN = (
    "algo",
    "env",
    "env_id",
    "seed",
    "gamma",
    "total_timesteps",
    "wall_seconds",
    "final_eval_mean",
    "final_eval_sem",
    "error",
)  # summary.json's fields in the list of runs


class NotFound(LookupError):
    """No run, sweep or file by that id under the root."""


def to_id(root: Path, path: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix().replace("/", "~")


def inside(root: Path, id_: str) -> Path:
    """The directory an id names, resolved; :class:`NotFound` if it would be outside the root."""
    parts = id_.split("~")
    if not id_ or any(p in ("", ".", "..") or "/" in p or "\\" in p for p in parts):
        raise NotFound(id_)
    path = (root / Path(*parts)).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_dir():
        raise NotFound(id_)
    return path


def run_dir(root: Path, id_: str) -> Path:
    """The run directory of ``id_`` (one with ``.hydra/config.yaml``, or one the service launched that has not
    written it yet: its ``service.log``), or :class:`NotFound`."""
    path = inside(root, id_)
    if not RunPaths(path).is_run() and not (path / "service.log").is_file():
        raise NotFound(id_)
    return path


def sweep_dir(root: Path, id_: str) -> Path:
    """The sweep directory of ``id_`` (one with Hydra's ``multirun.yaml``), or :class:`NotFound`."""
    path = inside(root, id_)
    if not (path / "multirun.yaml").is_file():
        raise NotFound(id_)
    return path


def run_file(root: Path, id_: str, name: str) -> Path:
    """A file of a run by name (:data:`FILES`, or ``metrics/<name>.csv``), inside the run directory."""
    path = run_dir(root, id_)
    allowed = set(FILES) | {f"metrics/{f}" for f, _ in METRICS.values()}
    target = (path / name).resolve()
    if name not in allowed or not target.is_relative_to(path) or not target.is_file():
        raise NotFound(f"{id_}/{name}")
    return target


def rows(path: Path, column: str, since: float | None = None) -> list[dict[str, Any]]:
    """A metrics CSV as rows of numbers (a row cut short left out), those after ``since`` only."""
    if not path.is_file():
        return []
    _fields, found = read_complete(path)
    out = [{k: number(v) for k, v in row.items()} for row in found]
    if since is not None:
        out = [r for r in out if isinstance(r.get(column), (int, float)) and r[column] > since]
    return out


def number(value: str | None) -> Any:
    if value in (None, ""):
        return None
    try:
        return int(value)  # type: ignore[arg-type]
    except ValueError:
        try:
            return float(value)  # type: ignore[arg-type]
        except ValueError:
            return value


def last_eval(paths: RunPaths) -> dict[str, Any] | None:
    """The latest periodic evaluation (timesteps, mean, sem), read from the end of ``eval.csv``."""
    found = rows(paths.eval_csv, "timesteps")
    return {k: found[-1].get(k) for k in ("timesteps", "mean", "sem")} if found else None


def run_info(root: Path, path: Path) -> dict[str, Any]:
    """What the list of runs shows of one run."""
    paths = RunPaths(path)
    summary = read_json(paths.summary) if paths.summary.is_file() else {}
    status, active, latest = summary.get("status", "created"), RunLock(path).busy(), last_eval(paths)
    if status == "running" and not active:
        status = "stopped"  # recorded as running, but no process holds it: killed (kill -9, power loss)
    return {
        "id": to_id(root, path),
        "path": str(path.relative_to(root.resolve())),
        "status": status,
        "active": active,  # a process holds the run (training, or still writing its last files)
        **{k: summary.get(k) for k in SHOWN},
        "timesteps": max(summary.get("timesteps") or 0, (latest or {}).get("timesteps") or 0),
        "latest_eval": latest,
        "started": (paths.config if paths.config.is_file() else path / "service.log").stat().st_mtime,
        "files": [name for name in FILES if (path / name).is_file()],
    }


def list_runs(root: Path) -> list[dict[str, Any]]:
    """Every run under ``root/outputs`` and ``root/multirun``, newest first."""
    places = [root / p for p in PLACES if (root / p).is_dir()]
    runs = [run_info(root, p) for p in find_run_dirs(places) if p.resolve().is_relative_to(root.resolve())]
    return sorted(runs, key=lambda r: r["started"], reverse=True)


def list_sweeps(root: Path) -> list[dict[str, Any]]:
    """Every sweep directory (Hydra's ``multirun.yaml``) under ``root/multirun``, newest first."""
    found = sorted((root / "multirun").glob("**/multirun.yaml")) if (root / "multirun").is_dir() else []
    sweeps = [{"id": to_id(root, f.parent), "path": str(f.parent.relative_to(root)), "started": f.stat().st_mtime,
               "jobs": len(find_run_dirs([f.parent])), "compared": (f.parent / "comparison/table.csv").is_file()}
              for f in found if f.resolve().is_relative_to(root.resolve())]  # fmt: skip
    return sorted(sweeps, key=lambda s: s["started"], reverse=True)
