"""The runs and sweeps under the service's root, found on disk (no database): ids, safe paths, what a list shows.

An id is a run's or sweep's path relative to the root with ``/`` written as ``~``
(``outputs~2026-11-23~10-00-00_ppo_lunar_lander_seed-0``). An id that leaves the root (``..``, an absolute
path, a symlink pointing out) or names no run is :class:`NotFound`.

Run directories may come from anywhere (copied from a colleague, downloaded), so every file is read through
:func:`read_bytes`: its real path must be a regular file under the root (no symlink out, no FIFO or device), of
at most a given size, or it is :class:`Unreadable`; a run whose ``summary.json`` is unreadable is listed with
status ``unreadable`` and the reason, and the list still answers.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
from collections import Counter
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from lander.service.files import Unreadable, read_bytes, read_text, real_file, servable, shown
from lander.storage.csvlog import complete_rows
from lander.storage.lock import RunLock, SweepLock, owner_process, same_process
from lander.storage.rundir import RunPaths, SweepPaths, config_facts, find_run_dirs, shown_status
from lander.storage.yamlfile import safe_yaml

KiB, MiB = 2**10, 2**20
MAX_SUMMARY = MAX_CONFIG = 1 * MiB  # summary.json, .hydra/*.yaml: a few kB when lander writes them
MAX_CSV = 64 * MiB  # a metrics file served whole (a 1M-step run's largest is about 1 MB)
MAX_RECORD = 16 * MiB  # <root>/.lander-service/launched.jsonl
TAIL = 64 * KiB  # what the list of runs reads of the end of eval.csv (its latest evaluation)

TIMESTEP_COLUMNS = {"sb3_progress": "time/total_timesteps"}  # the other metric files' column is "timesteps"
FILES = (
    "report.html",
    "video.mp4",
    "learning_curve.png",
    "model.zip",
    "best_model.zip",
    "eval.json",
    "summary.json",
    "run.log",
    "service.log",
)
PLACES = ("outputs", "multirun")
SHOWN = (
    "algo",
    "env",
    "env_id",
    "seed",
    "gamma",
    "total_timesteps",
    "planned_timesteps",
    "wall_seconds",
    "final_eval_mean",
    "final_eval_sem",
    "error",
    "stopped_early",
)  # summary.json's fields in the list of runs


class NotFound(LookupError):
    """No run, sweep or file by that id under the root."""


def owner_key(run: Path) -> tuple[Any, Any] | None:
    """``(pid, creation time)`` of the live process holding ``run``'s lock, the one its lock file names; None
    where none does (:func:`lander.storage.lock.owner_process`)."""
    if owner_process(run) is None:
        return None
    owner = RunLock(run).owner() or {}
    return owner.get("pid"), owner.get("created")


def process_group(root: Path, run: Path) -> list[str]:
    """The runs (paths under ``root``) whose process is ``run``'s: the seeds of a sweep trained side by side
    (``seeds_per_process``) are its directory's siblings, each held by the same process (:func:`owner_key`);
    ``[run]`` alone for a run with a process of its own, ``[]`` when no process holds it."""
    key = owner_key(run)
    if key is None:
        return []
    shares = [s for s in sorted(run.parent.iterdir()) if s == run or (s.is_dir() and owner_key(s) == key)]
    return [str(s.relative_to(root.resolve())) for s in shares]


def summary_of(root: Path, run: Path) -> tuple[dict[str, Any], str | None]:
    """A run's ``summary.json`` (empty before the run writes one) and None, or ``{"status": "unreadable"}`` and
    why it cannot be read."""
    path = RunPaths(run).summary
    if not path.exists() and not path.is_symlink():
        return {}, None
    try:
        summary = json.loads(read_text(root, path, MAX_SUMMARY))
        if not isinstance(summary, dict):
            raise Unreadable(f"{shown(root, path)}: not a JSON object")
        if not isinstance(summary.get("status", ""), str):
            raise Unreadable(f"{shown(root, path)}: its status is not a string")
    except (Unreadable, ValueError) as exc:
        reason = str(exc) if isinstance(exc, Unreadable) else f"{shown(root, path)}: not JSON ({exc})"
        return {"status": "unreadable"}, reason
    return summary, None


ESCAPES = {"%": "%25", "~": "%7E"}  # in a part of an id: the separator, and the escape's own character
UNESCAPES = re.compile(r"%(25|7E)")


def to_id(root: Path, path: Path) -> str:
    """The id of a directory under ``root``: its path there, each part joined by ``~`` (a ``~`` or ``%`` in a
    name escaped as ``%7E``, ``%25``: ``outputs/my~run`` is not ``outputs/my/run``). A client quotes it in a URL."""
    parts = path.resolve().relative_to(root.resolve()).parts
    return "~".join(re.sub("[%~]", lambda m: ESCAPES[m.group()], part) for part in parts)


def inside(root: Path, id_: str) -> Path:
    """The directory an id names (:func:`to_id`), resolved; :class:`NotFound` if it would be outside the root or is
    not an id :func:`to_id` makes."""
    parts = [UNESCAPES.sub(lambda m: "%" if m.group(1) == "25" else "~", p) for p in id_.split("~")]
    bad_escape = "%" in UNESCAPES.sub("", id_)
    if not id_ or bad_escape or "\x00" in id_ or any(p in ("", ".", "..") or "/" in p or "\\" in p for p in parts):
        raise NotFound(id_.replace("\x00", "\\0"))
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
    """The sweep directory of ``id_`` (one with Hydra's ``multirun.yaml`` or an Optuna search's study), or
    :class:`NotFound`."""
    path = inside(root, id_)
    if not SweepPaths(path).is_sweep():
        raise NotFound(id_)
    return path


def run_file(root: Path, id_: str, name: str) -> Path:
    """The real path of a file of a run by name (:data:`FILES`, or ``metrics/<name>.csv``), a regular file under
    the root; :class:`NotFound` otherwise."""
    path = run_dir(root, id_)
    allowed = set(FILES) | {f"metrics/{f.name}" for f in RunPaths(path).metric_files.values()}
    if name not in allowed:
        raise NotFound(f"{id_}/{name}".replace("\x00", "\\0"))
    try:
        return real_file(root, path / name)
    except Unreadable as exc:
        raise NotFound(str(exc)) from exc


def rows(root: Path, path: Path, column: str, since: float | None = None) -> list[dict[str, Any]]:
    """A metrics CSV as rows of numbers (a row cut short left out, bytes that are not UTF-8 replaced), those after
    ``since`` only; no file: none.
    :class:`Unreadable` for a file that links out of the root, is not a regular file or is too large."""
    if not path.exists() and not path.is_symlink():
        return []
    out = parse_rows(read_bytes(root, path, MAX_CSV).decode(errors="replace"))  # a stray byte: U+FFFD, rows kept
    if since is not None:
        out = [r for r in out if isinstance(r.get(column), (int, float)) and r[column] > since]
    return out


def parse_rows(text: str) -> list[dict[str, Any]]:
    """CSV text as rows of numbers, complete rows only (:func:`lander.storage.csvlog.complete_rows`)."""
    return [{k: number(v) for k, v in row.items()} for row in complete_rows(text)[1]]


def number(value: str | None) -> Any:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


def last_eval(root: Path, paths: RunPaths) -> dict[str, Any] | None:
    """The latest periodic evaluation (timesteps, mean, sem), from the header and the last :data:`TAIL` bytes of
    ``eval.csv``; None if there is none or the file is unreadable."""
    try:
        text = read_bytes(root, paths.eval_csv, TAIL, part="tail")
        if len(text) == TAIL:  # a long file: its header line, then the lines after the first cut one
            header = read_bytes(root, paths.eval_csv, TAIL, part="head").split(b"\n")[0]
            text = header + b"\n" + text[text.find(b"\n") + 1 :]
    except Unreadable:
        return None
    found = parse_rows(text.decode(errors="replace"))
    return {k: found[-1].get(k) for k in ("timesteps", "mean", "sem")} if found else None


def gone(run: str, processes: Mapping[str, bool]) -> bool:
    """True if the service started ``run``'s process (``run`` or a sweep above it is in ``processes``, path ->
    running) and none of those processes runs now."""
    started_it = [processes[p] for p in (run, *map(str, PurePosixPath(run).parents)) if p in processes]
    return bool(started_it) and not any(started_it)


def from_config(root: Path, paths: RunPaths) -> dict[str, Any]:
    """What a run without a ``summary.json`` (starting, or killed before its first) shows of its
    ``.hydra/config.yaml``: its algo, env, seed, gamma and budget (it showed none, and "0 / 0"); {} where the file
    cannot be read. Parsed once a version of the file (its time and size): the list is polled every 2 seconds."""
    try:
        found = real_file(root, paths.config).stat()
    except (Unreadable, OSError):
        return {}
    return dict(parsed_facts(root, paths.config, found.st_mtime_ns, found.st_size))


@functools.lru_cache(maxsize=1024)
def parsed_facts(root: Path, config: Path, _mtime_ns: int, _size: int) -> tuple[tuple[str, Any], ...]:
    """:func:`lander.storage.rundir.config_facts` of one version of ``config`` (6 ms to read and parse a run's
    config), for :func:`from_config`."""
    try:
        cfg = safe_yaml(read_text(root, config, MAX_CONFIG), shown(root, config))
    except (Unreadable, yaml.YAMLError):  # not a config lander wrote
        return ()
    return tuple(config_facts(cfg).items())


def lock_left(run: Path, kind: type[RunLock] = RunLock) -> bool:
    """True if a process of this machine took ``run``'s lock (a run takes its lock before it writes anything, and
    keeps it to its end; a sweep, ``kind`` :class:`SweepLock`, as it starts): for a run without a summary that no
    process holds (:meth:`RunLock.busy`, which the caller asks), its process has ended, unless the process the file
    names still lives (it writes the file as it takes the lock: a run read in between was listed ``stopped``). A
    lock file of another host (a copied run, or one on a shared filesystem) says nothing of its process here."""
    owner = kind(run).owner()
    if owner is None or owner.get("host") != socket.gethostname():
        return False
    pid = owner.get("pid")  # a run's process alive: it is taking the lock now (the file is written as it is taken;
    # a sweep's process holds its lock to its end, and one that let it go has ended)
    if kind is RunLock and isinstance(pid, int) and not isinstance(pid, bool):
        return not same_process(pid, owner.get("created"))
    return True


def run_info(root: Path, path: Path, processes: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """What the list of runs shows of one run (status ``unreadable`` and ``error`` where its summary is).

    :param processes: the directories of the processes the service started, each with whether one runs there
    """
    paths = RunPaths(path)
    active = RunLock(path).busy()  # before the summary: a run that ends between the two reads is not "stopped"
    summary, problem = summary_of(root, path)
    if not summary:
        summary = from_config(root, paths)
    latest = last_eval(root, paths)
    relative = str(path.relative_to(root.resolve()))
    status = shown_status(
        str(summary.get("status", "created")), active, lambda: gone(relative, processes or {}) or lock_left(path)
    )
    shown_keys = {
        k: summary.get(k) if isinstance(summary.get(k), str | int | float | type(None)) else None for k in SHOWN
    }
    timesteps = [t for t in (summary.get("timesteps"), (latest or {}).get("timesteps")) if isinstance(t, int | float)]
    return {
        "id": to_id(root, path),
        "path": relative,
        "status": status,
        "active": active,  # a process holds the run (training, or still writing its last files)
        **shown_keys,
        "error": problem or shown_keys["error"],
        "timesteps": max([0, *timesteps]),
        "latest_eval": latest,
        "started": started(path),
        "files": [name for name in FILES if servable(root, path / name)],
        "process_group": [],  # the runs its process trains (>1: seeds side by side), set by its callers
        "reproductions": reproductions(root, paths),
    }


VERDICTS = ("identical", "diverged", "failed")  # what lander.reproduce writes to reproduction.json


def reproductions(root: Path, paths: RunPaths) -> list[dict[str, Any]]:
    """The run's reproductions (``python -m lander.reproduce``), oldest first: each one's directory, its verdict
    (``identical``, ``diverged``, ``failed``; ``running`` while its process holds it, ``unfinished`` without a
    record) and the lines that say it (text, at most 20 of 500 characters)."""
    found = []
    for copy in paths.reproductions():
        if not copy.resolve().is_relative_to(root.resolve()):  # a link out of the root: not shown
            continue
        verdict, lines = ("running" if RunLock(copy).busy() else "unfinished"), []
        try:
            record = json.loads(read_text(root, RunPaths(copy).reproduction, MAX_SUMMARY))
            if isinstance(record, dict) and record.get("verdict") in VERDICTS:
                verdict = record["verdict"]
                said = record.get("lines")
                lines = [str(line)[:500] for line in said[:20]] if isinstance(said, list) else []
        except (Unreadable, ValueError):
            pass
        found.append({"path": str(copy.resolve().relative_to(root.resolve())), "verdict": verdict, "lines": lines})
    return found


def started(path: Path) -> float:
    for first in (RunPaths(path).config, path / "service.log", path):
        try:
            return first.lstat().st_mtime
        except OSError:
            continue
    return 0.0


def list_runs(root: Path, processes: Mapping[str, bool] | None = None) -> list[dict[str, Any]]:
    """Every run under ``root/outputs`` and ``root/multirun``, newest first (``processes``: :func:`run_info`'s)."""
    places = [root / p for p in PLACES if (root / p).is_dir()]
    found = [p for p in find_run_dirs(places) if p.resolve().is_relative_to(root.resolve())]
    runs = [safe_run_info(root, p, processes) for p in found]
    by_process: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for run in (r for r in runs if r["active"]):  # the active runs by the process holding them (seeds side by
        if (key := owner_key(root / run["path"])) is not None:  # side share one)
            by_process.setdefault(key, []).append(run)
    for shared in by_process.values():
        for run in shared:
            run["process_group"] = sorted(r["path"] for r in shared)
    return sorted(runs, key=lambda r: r["started"], reverse=True)


def safe_run_info(root: Path, path: Path, processes: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """:func:`run_info`, or the run marked ``unreadable`` where its directory cannot be read at all."""
    try:
        return run_info(root, path, processes)
    except OSError as exc:
        return {
            "id": to_id(root, path),
            "path": str(path.relative_to(root.resolve())),
            "status": "unreadable",
            "active": False,
            **dict.fromkeys(SHOWN),
            "error": f"{shown(root, path)}: {exc.strerror or exc}",
            "timesteps": 0,
            "latest_eval": None,
            "started": started(path),
            "files": [],
            "process_group": [],
            "reproductions": [],
        }


def left_out(root: Path, comparison: Path) -> list[dict[str, str]]:
    """The runs a comparison (the directory holding its ``report.html``) did not compare, with why, from its
    ``left_out.json`` (:meth:`lander.analysis.comparison.Comparison.left_out_records`); none where unreadable."""
    try:
        found = json.loads(read_text(root, comparison / "left_out.json", MAX_RECORD)).get("left_out")
    except (Unreadable, ValueError, AttributeError):
        return []
    fields = ("run", "why", "detail")
    if not isinstance(found, list) or not all(isinstance(r, dict) for r in found):
        return []
    return [{k: str(r.get(k, "")) for k in fields} for r in found]


def comparison_dir(root: Path, id_: str) -> Path:
    """A comparison the service started (``comparisons/<date>/<time>``, with its ``inputs.json``), or
    :class:`NotFound`."""
    path = inside(root, id_)
    if not path.is_relative_to((root / "comparisons").resolve()) or not (path / "inputs.json").is_file():
        raise NotFound(id_)
    return path


CONSOLE_TAIL = 4 * KiB  # what is read of the end of a process's console (service.log) to say why it ended


def last_line(root: Path, console: Path) -> str:
    """The last line ``console`` (a process's ``service.log``) holds, read from its end: a failed ``lander.compare``
    logs its one-line reason there (or a traceback, whose last line is the exception)."""
    try:
        lines = read_bytes(root, console, CONSOLE_TAIL, "tail").decode(errors="replace").splitlines()
    except Unreadable:
        return ""
    return next((line.strip()[:500] for line in reversed(lines) if line.strip()), "")


def why_ended(root: Path, directory: Path, without: str) -> str:
    """Why a process the service started in ``directory`` ended ``without`` its output: the last line of its
    ``service.log`` (:func:`last_line`), or that it said nothing."""
    said = last_line(root, directory / "service.log")
    return said or f"ended without {without}, and without a word in its service.log"


def job_statuses(root: Path, sweep: Path) -> Counter[str]:
    """How many jobs of a sweep whose process has ended have each status (:func:`shown_status`: a job without a
    summary that no process holds has ended too)."""
    counts: Counter[str] = Counter()
    for run in find_run_dirs([sweep]):
        active = RunLock(run).busy()  # before the summary, as :func:`run_info`
        counts[shown_status(str(summary_of(root, run)[0].get("status", "created")), active, lambda: True)] += 1
    return counts


def jobs_ended(counts: Counter[str]) -> str:
    """Why a sweep started elsewhere (its console not the service's) ended without a comparison, from its jobs'
    statuses ``counts``: ``3 run(s): 1 completed, 2 interrupted; started outside this service, its process has
    ended: ...``."""
    said = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return (
        f"{sum(counts.values())} run(s){': ' + said if said else ''}; started outside this service, its process "
        "has ended: run its command again to complete it, or compare its runs"
    )


def comparison_info(root: Path, directory: Path, processes: Mapping[str, bool]) -> dict[str, Any]:
    """One comparison of chosen runs (``directory`` holds its ``inputs.json``): the runs it compares, whether its
    report is written (``compared``) and its ``state``: ``compared``, ``comparing`` (its process still runs:
    ``processes``, path -> running, from the service's record) or ``failed``, then with ``error``, the last line of
    its ``service.log`` (a failed comparison showed "not yet" for ever)."""
    inputs = directory / "inputs.json"
    try:
        runs = json.loads(read_text(root, inputs, MAX_RECORD))
    except (Unreadable, ValueError):
        runs = None
    path, compared = str(directory.relative_to(root)), servable(root, directory / "report.html")
    state = "compared" if compared else "comparing" if processes.get(path) else "failed"
    return {
        "id": to_id(root, directory),
        "path": path,
        "started": inputs.lstat().st_mtime,
        "runs": runs if isinstance(runs, list) and all(isinstance(r, str) for r in runs) else [],
        "compared": compared,
        "state": state,
        "left_out": left_out(root, directory),
    } | ({"error": why_ended(root, directory, "a report")} if state == "failed" else {})


def list_comparisons(root: Path, processes: Mapping[str, bool] | None = None) -> list[dict[str, Any]]:
    """Every comparison of chosen runs under ``root/comparisons`` (:func:`comparison_info`), newest first."""
    found = sorted((root / "comparisons").glob("*/*/inputs.json")) if (root / "comparisons").is_dir() else []
    listed = [
        comparison_info(root, inputs.parent, processes or {})
        for inputs in found
        if inputs.resolve().is_relative_to(root.resolve())
    ]
    return sorted(listed, key=lambda c: c["started"], reverse=True)


def list_sweeps(root: Path, processes: Mapping[str, bool] | None = None) -> list[dict[str, Any]]:
    """Every sweep directory (Hydra's ``multirun.yaml``, or an Optuna search's ``optuna.db``: a search made none)
    under ``root/multirun``, newest first, with its ``state``:
    ``compared``; for a sweep the service started (``processes``, path -> running), ``sweeping`` while its process
    runs, else ``ended``, with ``error``, the last line of its ``service.log`` (stopped, or no job completed: it
    showed "not yet" for ever); for a sweep started elsewhere, ``sweeping`` while a process holds its
    :class:`SweepLock` or one of its jobs runs, ``ended`` where a process of this machine held it (``error``: its
    runs' statuses, :func:`jobs_ended`), else ``unknown`` (an older lander's sweep, or a copy: it showed "unknown"
    while it ran and after it ended)."""
    processes = processes or {}
    found = [  # one walk of the tree for both marks (links not followed, as a glob's "**")
        Path(directory) / ("multirun.yaml" if "multirun.yaml" in names else "optuna.db")
        for directory, _, names in os.walk(root / "multirun")
        if "multirun.yaml" in names or "optuna.db" in names
    ]
    sweeps: list[dict[str, Any]] = []
    for f in found:
        if not f.resolve().is_relative_to(root.resolve()):
            continue
        path, counts = str(f.parent.relative_to(root)), Counter[str]()
        launched = processes.get(path)
        held = launched is None and SweepLock(f.parent).busy()  # before its table: a sweep that ends meanwhile
        compared = servable(root, SweepPaths(f.parent).table)
        if launched is None and not compared:  # started elsewhere: its process holds the sweep's lock while it runs
            if held:
                launched = True
            elif lock_left(f.parent, SweepLock):  # it ended, unless a job outlived it (a joblib worker's)
                counts = job_statuses(root, f.parent)
                launched = bool(counts["running"] or counts["paused"])
        state = "compared" if compared else "unknown" if launched is None else "sweeping" if launched else "ended"
        sweeps.append(
            {
                "id": to_id(root, f.parent),
                "path": path,
                "started": f.lstat().st_mtime,
                "jobs": len(find_run_dirs([f.parent])),
                "compared": compared,
                "state": state,
                "left_out": left_out(root, SweepPaths(f.parent).comparison),
            }
        )
        if state == "ended":
            sweeps[-1]["error"] = why_ended(root, f.parent, "a comparison") if path in processes else jobs_ended(counts)
    return sorted(sweeps, key=lambda s: s["started"], reverse=True)
