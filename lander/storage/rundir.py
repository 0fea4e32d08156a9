"""A run directory and its record: every file's path (:class:`RunPaths`), the typed ``summary.json``
(:class:`RunSummary`, :class:`Status`), atomic writes, and finding the runs under a sweep directory.

Train, resume, evaluate and compare all go through this module, so a file is named in one place only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import glob
import json
import os
import re
import stat
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from lander.errors import RunFileError
from lander.faults import fault
from lander.storage.lock import RunLock


def atomic_write(path: Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp)``, flush ``tmp`` to disk, rename it to ``path`` and flush the directory: a reader (or
    a kill at any instant) sees the whole old file or the whole new one, never half of either.

    The temporary name holds the process id, so two writers never share one.
    """
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")  # the suffix kept: writers infer formats
    try:
        write(tmp)
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        fault(f"write:{path.name}")
        os.replace(tmp, path)
        fsync_directory(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):  # the write's own error is raised, not one of this clean-up's
            tmp.unlink(missing_ok=True)  # a failed write (a full disk, an error, a signal) leaves nothing behind
        raise
    return path


# what a run directory holds before its run started training: Hydra's record of the command, its log, the lock
UNSTARTED = {
    ".hydra",
    ".hydra/config.yaml",
    ".hydra/hydra.yaml",
    ".hydra/overrides.yaml",
    "run.log",
    ".lander.storage.lock",
}


# every entry a run writes at the top of its directory: RunPaths' files and folders, Hydra's, the lock, the trackers'
# folders, the earlier attempts of a re-run, the service's console log (and atomic_write's temporaries)
RUN_ENTRIES = frozenset(
    {
        ".hydra",
        "run.log",
        ".lander.storage.lock",
        "summary.json",
        "eval.json",
        "model.zip",
        "best_model.zip",
        "learning_curve.png",
        "video.mp4",
        "report.html",
        "checkpoints",
        "environment",
        "evaluations",
        "metrics",
        "reproduction.json",
        "wandb",
        "tensorboard",
        "attempts",
        "service.log",
    }
)


# what a sweep writes at the top of its directory besides its jobs: Hydra's record, the comparison, earlier attempts,
# Optuna's study and results, the service's console log, the sweep's lock
SWEEP_ENTRIES = frozenset(
    {
        "multirun.yaml",
        "comparison",
        "attempts",
        "optuna.db",
        "optimization_results.yaml",
        "service.log",
        ".lander.sweep.lock",
    }
)


# what a comparison writes (lander.reports.sweep_report.compare), and the service's list of its runs and console log
COMPARISON_ENTRIES = re.compile(
    r"table\.(csv|md)|report\.(md|html)|left_out\.json|across_envs\.csv"
    r"|(learning_curves|final_scores|performance_profile)_.+\.png|inputs\.json|service\.log"
)
# of those, what only a comparison writes: a directory holding one of these and nothing but COMPARISON_ENTRIES is a
# comparison's (report.md alone may be a user's)
COMPARED = re.compile(r"left_out\.json|inputs\.json|(learning_curves|final_scores|performance_profile)_.+\.png")


def not_a_comparisons(out: Path) -> str | None:
    """Why a comparison may not be written into the directory ``out`` ("holds files of its own (...) and is not a
    comparison's directory"): it holds files a comparison does not write, whose ``report.md`` (a user's) or
    ``report.html`` (a run's) it would replace; None where it may. A directory holding only names a comparison
    writes is a comparison's where one of them is its own (:data:`COMPARED`): ``report.md`` alone may be a user's."""
    foreign = foreign_entries(out, COMPARISON_ENTRIES)
    if not foreign and out.is_dir() and not any(COMPARED.fullmatch(p.name) for p in out.iterdir()):
        foreign = foreign_entries(out, frozenset())  # report.md alone, or table.csv: a user's files of those names
    if not foreign:
        return None
    shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
    return f"holds files of its own ({shown}) and is not a comparison's directory"


def foreign_entries(root: Path, entries: frozenset[str] | re.Pattern[str] = RUN_ENTRIES) -> list[str]:
    """The entries at the top of the directory ``root`` that a run does not write (not in ``entries``: a sweep's,
    :data:`SWEEP_ENTRIES`; a comparison's, :data:`COMPARISON_ENTRIES`), sorted: a user's own files. Empty if
    ``root`` is not a directory."""
    try:
        names = [p.name for p in Path(root).iterdir()]
    except OSError:
        return []
    known = entries.fullmatch if isinstance(entries, re.Pattern) else entries.__contains__
    return sorted(n for n in names if not known(n) and not TEMPORARY.fullmatch(n))


# the links W&B (0.19+) makes in a run's wandb/ folder: the newest run and its logs, and in each run's folder
# wandb-core's log, which lies in ~/.cache/wandb/logs. W&B replaces the first three by a rename at every start and
# writes wandb-core's log in the new run's own folder: none is ever written through by a resumed run. At any depth:
# a sweep's jobs (<sweep>/0/wandb/...) and a retried run's earlier attempts (<run>/attempts/1/wandb/...) hold them too
WANDB_LINKS = re.compile(
    r"(.*/)?wandb/(latest-run|debug\.log|debug-internal\.log|(offline-)?run-[\w-]+/logs/debug-core\.log)"
)


def escaping_entry(
    directory: Path, checked_when_read: frozenset[str] = frozenset(), called: str = "its directory"
) -> tuple[Path, str] | None:
    """The first entry below ``directory`` that a process continuing the run (or sweep) there would write or read
    through to a file outside it, and why: a link out of it (``run.log`` or ``metrics/train_episodes.csv`` to a file
    of yours: the log appended to it, a resume copied its lines into the run) that is not one of W&B's own
    (:data:`WANDB_LINKS`, neither followed nor written through), or a FIFO or device. None if there is none.

    :param checked_when_read: folders whose files are opened only when they are regular files of their own
        (``checkpoints``: :func:`check_regular`, a resume passes over another), left out
    :param called: what the reason calls ``directory`` ("links out of <called>")
    """
    inside = directory.resolve()
    for parent, dirs, names in os.walk(directory, followlinks=False):
        if checked_when_read & set(Path(parent).relative_to(directory).parts):
            continue
        for name in [*dirs, *names]:
            path = Path(parent) / name
            mode = path.lstat().st_mode
            wandb_own = WANDB_LINKS.fullmatch(path.relative_to(directory).as_posix()) is not None
            if stat.S_ISLNK(mode) and not wandb_own:
                try:
                    target = path.resolve()
                except (OSError, RuntimeError):  # a loop of links
                    return path, "is a link that does not resolve"
                if not target.is_relative_to(inside):
                    return path, f"links out of {called}"
            if not (stat.S_ISLNK(mode) or stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return path, "not a regular file"
    return None


def remove_unstarted(root: Path) -> bool:
    """Remove the run directory ``root`` if it holds nothing but :data:`UNSTARTED` (regular files and the
    ``.hydra`` folder): a run refused by a check that could only be made once torch and its envs were loaded
    (``memory_limit_mb`` below the footprint) leaves no directory, as one refused before Hydra made it. Anything
    else there, and it stays. Returns whether it was removed."""
    try:
        entries = {p.relative_to(root).as_posix(): p for p in Path(root).rglob("*")}
    except OSError:
        return False
    if not set(entries) <= UNSTARTED or any(p.is_symlink() for p in entries.values()):
        return False
    if RunLock(root).busy():  # another process's run, which has not trained yet
        return False
    for name in sorted(entries, key=len, reverse=True):  # files before the folder that holds them
        path = entries[name]
        path.rmdir() if path.is_dir() else path.unlink()
    Path(root).rmdir()
    return True


def remove_temporaries(root: Path) -> list[Path]:
    """Remove the temporary files (:func:`atomic_write`) that killed writers left under ``root``."""
    stale = [p for p in Path(root).rglob(".*.tmp*") if TEMPORARY.fullmatch(p.name) and p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


TEMPORARY = re.compile(r"\..+\.\d+\.tmp(\.\w+)?")


def fsync_directory(directory: Path) -> None:
    """Flush a directory's entries (a rename in it) to disk."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def write_json(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    return write_text(path, json.dumps(data, indent=2) + "\n")


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; empty if there is no such file."""
    return json.loads(path.read_text()) if path.is_file() else {}


def shown_status(status: str, active: bool, ended: Callable[[], bool]) -> str:
    """A run's status as the service's lists and a run's report show it: ``stopped`` where no process holds the run
    (``active`` false) and its summary says running or paused (killed: ``kill -9``, power loss), or it has no summary
    yet and its process is known to have ended (``ended()``, asked only then: killed before the run's first
    summary); else its own."""
    if not active and (status in ("running", "paused") or (status == "created" and ended())):
        return "stopped"
    return status


class RunPaths:
    """Every file of a run directory, by what it holds.

    :param root: the run directory (Hydra's output directory of the job)
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.hydra = self.root / ".hydra"
        self.config = self.hydra / "config.yaml"  # the composed config of the run
        self.overrides = self.hydra / "overrides.yaml"  # its command-line overrides
        self.summary = self.root / "summary.json"  # RunSummary: status and results
        self.eval_json = self.root / "eval.json"  # the final evaluation, episode by episode
        self.model = self.root / "model.zip"  # the final model
        self.best_model = self.root / "best_model.zip"  # the model of the best evaluation
        self.learning_curve = self.root / "learning_curve.png"
        self.video = self.root / "video.mp4"
        self.report = self.root / "report.html"  # interactive, self-contained (lander.reports.run_report)
        self.checkpoints = self.root / "checkpoints"
        self.environment = self.root / "environment"  # pip freeze, versions, git commit
        self.evaluations = self.root / "evaluations"  # python -m lander.evaluate writes here
        self.tensorboard = self.root / "tensorboard"  # logger=tensorboard's event files, a folder a run name
        self.metrics = self.root / "metrics"
        self.train_episodes = self.metrics / "train_episodes.csv"
        self.eval_csv = self.metrics / "eval.csv"
        self.eval_episodes = self.metrics / "eval_episodes.csv"
        self.sb3_progress = self.metrics / "sb3_progress.csv"
        self.resources = self.metrics / "resources.csv"
        self.reproduction = self.root / "reproduction.json"  # a reproduction's verdict (lander.reproduce)

    def __repr__(self) -> str:
        return f"RunPaths({str(self.root)!r})"

    def reproductions(self) -> list[Path]:
        """The directories ``python -m lander.reproduce`` trained this run again in (``<run>.reproduce-N``), in
        order of ``N``."""
        found = [
            p
            for p in self.root.parent.glob(f"{glob.escape(self.root.name)}.reproduce-*")
            if REPRODUCTION.search(p.name)
        ]
        return sorted(found, key=lambda p: int(p.name.rsplit("-", 1)[1]))

    @property
    def metric_files(self) -> dict[str, Path]:
        """The metric CSV files by name, the name being the file's stem (as the API and the service call them)."""
        return {
            p.stem: p
            for p in (self.train_episodes, self.eval_csv, self.eval_episodes, self.sb3_progress, self.resources)
        }

    def is_run(self) -> bool:
        """True if this is a lander run directory (it has ``.hydra/config.yaml``)."""
        return self.config.is_file()


def enclosing_run(path: Path) -> Path | None:
    """The run lander made that ``path`` is or lies inside (its ``.hydra/config.yaml`` and the ``summary.json``
    written as it starts: another Hydra app's ``.hydra/`` is no run), or None. ``path`` is resolved first, as the
    system does: ``<run>/../beside`` is beside the run, not in it."""
    path = path.resolve()
    return next((p.root for p in map(RunPaths, (path, *path.parents)) if p.is_run() and p.summary.is_file()), None)


def made_from(run: Path) -> Path | None:
    """The directory ``run`` was made from, where it lies in Hydra's default ``outputs/`` or ``multirun/`` (None
    where it does not: ``hydra.run.dir`` was given)."""
    return next((p.parent for p in run.parents if p.name in ("outputs", "multirun")), None)


class SweepPaths:
    """Every file of a sweep directory that lander reads or writes (the jobs are run directories below it).

    :param root: the sweep directory (Hydra's ``hydra.sweep.dir``)
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.multirun = self.root / "multirun.yaml"  # Hydra's record of the sweep (its basic sweeper's, AdaStop's)
        self.study = (
            self.root / "optuna.db"
        )  # an Optuna search's study (hparams_search=...), which has no multirun.yaml
        self.comparison = self.root / "comparison"  # what the sweep's end writes (lander.reports.sweep_report.compare)
        self.table = self.comparison / "table.csv"
        self.report = self.comparison / "report.html"

    def is_sweep(self) -> bool:
        """A sweep directory: Hydra's ``multirun.yaml`` or an Optuna search's study is there."""
        return self.multirun.is_file() or self.study.is_file()

    def __repr__(self) -> str:
        return f"SweepPaths({str(self.root)!r})"


def new_directory(place: Path, label: str = "") -> Path:
    """A new directory under ``place``, made here (:func:`make_new`), named as ``python -m lander.run`` names its
    own: ``<place>/<date>/<time>_<label>`` (``<time>`` alone without a label); ``-2``, ``-3``, ... after it where
    that is taken."""
    now = datetime.now()
    return make_new(place / now.strftime("%Y-%m-%d") / "_".join(filter(None, [now.strftime("%H-%M-%S"), label])))


def make_new(base: Path, first: int | None = None) -> Path:
    """Make ``base``, or ``base-2``, ``base-3``, ... where another process made that one first: ``mkdir`` is atomic,
    so of two processes asking at once one makes a name and the other the next. Returns the directory made.

    :param first: numbered from ``base-<first>`` on (``lander.reproduce``'s ``<run>.reproduce-N``), not ``base``
    """
    base.parent.mkdir(parents=True, exist_ok=True)
    n = first or 1
    while True:
        found = base if first is None and n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            found.mkdir()
        except FileExistsError:
            n += 1
            continue
        return found


CLAIMED: dict[str, str] = {}  # this process's claimed directories: the name asked for -> the directory made
CLAIM_RESOLVER = "lander.claim"  # claim_directory's name in configs: ${lander.claim:outputs/...} (config.yaml)


def claim_directory(name: str) -> str:
    """The directory :func:`make_new` makes for ``name``, once a process: lander's default ``hydra.run.dir`` and
    ``hydra.sweep.dir`` are named by the second they start in (``${lander.claim:outputs/${now:...}_ppo_..._seed-0}``),
    so two commands started in the same second (a shell loop over gamma, or over algorithms for sweeps) were given
    one directory, where the second one's Hydra wrote its config over the first's. The same name gives the same
    directory for as long as this process runs (Hydra reads the value more than once; the jobs of a sweep get it in
    their config's resolver cache, as they get ``${now:...}``)."""
    if name not in CLAIMED:
        CLAIMED[name] = str(make_new(Path(name)))
    return CLAIMED[name]


class Status(str, Enum):
    """Where a run stands; ``summary.json`` holds the value."""

    RUNNING = "running"  # training, or killed without a chance to say so (kill -9, power loss)
    COMPLETED = "completed"
    FAILED = "failed"  # an error stopped it
    INTERRUPTED = "interrupted"  # SIGINT/SIGTERM stopped it after a checkpoint
    PAUSED = "paused"  # waiting at a step boundary (SIGUSR1) for SIGUSR2/SIGCONT; its process holds the run

    @property
    def alive(self) -> bool:
        """Running or paused: a process holds the run (unless it was killed without a chance to say so)."""
        return self in (Status.RUNNING, Status.PAUSED)


@dataclass
class RunSummary:
    """The record of a run, written to ``summary.json`` when it starts and whenever its status changes."""

    status: Status = Status.RUNNING
    run_name: str = ""
    algo: str = ""
    env: str = ""
    env_id: str = ""
    seed: int = 0
    gamma: float = 0.99
    n_envs: int = 1
    total_timesteps: int = 0  # the budget
    planned_timesteps: int | None = None  # the step training ends at: the budget to whole rollouts (budget_rounding)
    overrides: list[str] = field(default_factory=list)  # the job's command-line overrides
    wandb_run_id: str | None = None
    resumed_at: list[int] = field(default_factory=list)  # the checkpoint steps each resume started from
    tracked_to: int = 0  # the trackers (W&B) hold every row up to this step: their last attempt finished them
    timesteps: int = 0  # env steps done
    error: str | None = None  # what stopped a failed or interrupted run
    wall_seconds: float | None = None
    train_seconds: float | None = None  # model.learn, periodic evaluations included
    train_cpu_seconds: float | None = None  # this process's CPU time in model.learn
    eval_seconds: float | None = None
    steps_per_second: float | None = None
    train_steps_per_second: float | None = None  # evaluations left out
    final_eval_mean: float | None = None
    final_eval_sem: float | None = None
    final_eval_std: float | None = None
    final_eval_success_rate: float | None = None
    best_eval_mean: float | None = None
    first_timestep_reaching_threshold: int | None = None
    stopped_early: str | None = None  # why training stopped before the budget
    peak_rss_mb: float | None = None
    gpu: str | None = None  # the CUDA device's name, where the model was on one
    gpu_peak_memory_mb: float | None = None  # the most torch allocated on it at once
    video: dict[str, Any] | None = None  # seed, return and frames of video.mp4

    @classmethod
    def from_dict(cls, data: Any, where: str = "summary.json") -> RunSummary:
        """A summary from ``summary.json``'s object (keys it does not know, from other versions, are dropped).

        :raises RunFileError: not an object, a value not of its key's type, or a status lander does not write
        """
        if not isinstance(data, dict):
            raise RunFileError(f"{where}: a JSON {type(data).__name__}, not the object a run writes")
        types = typing.get_type_hints(cls)
        for key, value in data.items():
            if key in types and not _fits(value, types[key]):
                raise RunFileError(f"{where}: {key}={value!r}, where a run writes {_type_name(types[key])}")
        summary = cls(**{k: v for k, v in data.items() if k in types})
        try:
            summary.status = Status(summary.status)
        except ValueError:
            raise RunFileError(f"{where}: status={summary.status!r} is not a status lander writes") from None
        return summary

    @classmethod
    def load(cls, paths: RunPaths) -> RunSummary | None:
        """The run's summary, or None if it has none (it never started training).

        :raises RunFileError: a ``summary.json`` that is not a run's (not JSON, not an object, wrong types)
        """
        if not paths.summary.is_file():
            return None
        try:
            data = read_json(paths.summary)
        except (ValueError, OSError) as exc:
            raise RunFileError(f"{paths.summary}: not readable JSON ({exc})") from exc
        return cls.from_dict(data, str(paths.summary))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"status": self.status.value}

    def save(self, paths: RunPaths) -> None:
        """Write ``summary.json`` atomically; on a full disk, over the old file's own blocks, so the status
        of a run stopped by the full disk is still recorded."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        try:
            write_text(paths.summary, text)
        except OSError as exc:
            if exc.errno != errno.ENOSPC or not paths.summary.is_file():
                raise
            with paths.summary.open("r+") as handle:  # no new block needed for a summary of about 1 kB
                handle.write(text)
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())

    def update(self, **values: Any) -> RunSummary:
        """Set fields by name (an unknown name is an error); return ``self``."""
        for key, value in values.items():
            if not hasattr(self, key):
                raise AttributeError(f"RunSummary has no field {key!r}")
            setattr(self, key, value)
        return self


CHECKPOINT = re.compile(r"model_(\d+)_steps\.zip")


def check_regular(path: Path) -> None:
    """``path`` must be a regular file of its own, not a symlink (to ``/dev/zero``, another run's file, ...), a FIFO
    (opening it would wait forever) or a device: lander reads only files it could have written.

    :raises RunFileError: naming the file and what it is
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        raise RunFileError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(mode):
        kind = "a symlink" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise RunFileError(f"{path} is {kind}: lander reads only the regular files a run writes")


def _fits(value: Any, hint: Any) -> bool:
    """``value`` (from JSON) is of the annotated type: ``int | None``, ``list[str]``, ``float``, ``Status``, ..."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    for option in options:
        base = typing.get_origin(option) or option
        if option is type(None) and value is None:
            return True
        if base is float and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if base is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if base in (str, Status) and isinstance(value, str):
            return True
        if base in (list, dict) and isinstance(value, base):
            return True
    return False


def _type_name(hint: Any) -> str:
    """``int | None`` -> ``"int or null"``, as a message says it."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    names = {type(None): "null", Status: "str", float: "number"}
    return " or ".join(names.get(o, getattr(typing.get_origin(o) or o, "__name__", str(o))) for o in options)


def config_facts(cfg: Any) -> dict[str, Any]:
    """What a run's saved config (``.hydra/config.yaml`` as plain data) says it trains, under ``summary.json``'s names:
    ``algo``, ``env``, ``env_id``, ``seed``, ``gamma`` (the algorithm's where the run gives none) and
    ``total_timesteps``; each only where it is a plain number or string. What the service's list and the run's
    report show of a run without a summary yet (starting, or killed before its first)."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("algo"), dict) or not isinstance(cfg.get("env"), dict):
        return {}
    algo, env = cfg["algo"], cfg["env"]
    model = algo.get("model") if isinstance(algo.get("model"), dict) else {}
    found = {
        "algo": algo.get("name"),
        "env": env.get("name"),
        "env_id": env.get("id"),
        "seed": cfg.get("seed"),
        "gamma": cfg.get("gamma") if cfg.get("gamma") is not None else model.get("gamma"),
        "total_timesteps": cfg.get("total_timesteps") or algo.get("total_timesteps"),
    }
    return {k: v for k, v in found.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}


def find_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """``(timesteps, path)`` of the checkpoints (``model_<steps>_steps.zip``) in ``directory``, newest first."""
    found = [(int(m.group(1)), p) for p in directory.glob("model_*_steps.zip") if (m := CHECKPOINT.fullmatch(p.name))]
    return sorted(found, reverse=True)


def evaluated_model(paths: RunPaths, name: str) -> Path:
    """The model ``name`` of a run (``model.zip``, ``best_model.zip``, ``checkpoints/...``) to evaluate:
    ``<run>/<name>``; for ``model.zip`` of a run stopped before its end (it wrote none), its newest checkpoint."""
    path = paths.root / name
    if path.is_file() or name != "model.zip" or not (found := find_checkpoints(paths.checkpoints)):
        return path
    return found[0][1]


def model_shown(paths: RunPaths, model: Path) -> str:
    """How an evaluation names the model file it evaluated: relative to the run where it is in it (``model.zip``,
    ``checkpoints/...``), else its absolute path."""
    resolved, root = model.resolve(), paths.root.resolve()
    return str(resolved.relative_to(root) if resolved.is_relative_to(root) else resolved)


def evaluation_file(
    paths: RunPaths, model: Path, episodes: int, deterministic: bool, seed: int, name: str | None
) -> Path:
    """``<run>/evaluations/<name>.json``, ``name`` by default ``<model>_<n>ep_<mode>_seed-<seed>``
    (``python -m lander.evaluate``)."""
    mode = "deterministic" if deterministic else "stochastic"
    return paths.evaluations / f"{name or f'{model.stem}_{episodes}ep_{mode}_seed-{seed}'}.json"


def evaluated_before(path: Path) -> str | None:
    """The model an evaluation file (:func:`evaluation_file`) says it evaluated; None where there is none."""
    try:
        found = json.loads(path.read_text()).get("model")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def _natural(path: Path) -> list[tuple[int, int, str]]:
    """Sort key that puts job 2 before job 10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in path.parts]


REPRODUCTION = re.compile(r"\.reproduce-\d+$")  # lander.reproduce's directory beside a run


def not_a_run(path: Path, advice: str, given: str = "") -> str:
    """Why ``path`` (given as ``given``: ``resume=``, or nothing) is no run directory, in one line; for a sweep's
    directory, its runs and ``advice`` (what to do with one of them)."""
    message = f"{given}{str(path)!r} is not a lander run directory (no .hydra/config.yaml)"
    if not SweepPaths(path).is_sweep():
        return message
    jobs = sorted((p for p in path.iterdir() if RunPaths(p).is_run()), key=_natural)  # its jobs, not a walk below
    shown = ", ".join(str(p) for p in jobs[:2]) + (", ..." if len(jobs) > 2 else "")
    return f"{message}: it is a sweep's, of {len(jobs)} run(s){f' ({shown})' if jobs else ''}; {advice}"


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Every run directory at or below ``paths`` (sweep directories, run directories, or a mix), each once,
    in the order of the paths given and, below each, of job number (job 2 before job 10); the sweep's
    ``comparison/``, the earlier attempts of re-run jobs (``attempts/``) and the reproductions of runs
    (``<run>.reproduce-N``, :mod:`lander.reproduce`: a check, not another seed) left out, unless named."""
    found: dict[Path, None] = {}
    for root in paths:
        for config in sorted(Path(root).glob("**/.hydra/config.yaml"), key=_natural):
            run_dir = config.parent.parent
            parts = run_dir.relative_to(root).parts
            if not {"comparison", "attempts"} & set(parts) and not any(REPRODUCTION.search(p) for p in parts):
                found.setdefault(run_dir)
    return list(found)
