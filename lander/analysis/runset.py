"""The runs a comparison reads, and which of them it compares at which budget.

A run is one job directory. Runs are grouped into configurations by their overrides (the seed and keys that do
not change training left out). By default every run of an env is compared at one budget: the largest evaluated
timestep that all of them reached (:func:`common_budget`), each run as it stood there: its evaluation at that
budget, also where whole steps of its envs carried it a few steps past (:func:`at_budget`), else its last one
before. Where the configurations differ in the budget itself (``total_timesteps=100000,400000``: the budget is
what they compare), each budget's runs are compared at their own common budget (:func:`budget_groups`). A run
that a stop rule ended before its budget (``early_stop``, ``max_episodes``, a callback of the user's:
``summary.json``'s ``stopped_early``) stands at its last evaluation, the one it stopped at, for any later budget:
it sets no budget for the others. A (configuration, seed) found twice counts once (:func:`drop_duplicates`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import yaml
from omegaconf import DictConfig

from lander.config.checks import CHOICES
from lander.config.schema import configuration_key, labels
from lander.errors import RunFileError, RunSetError
from lander.storage.csvlog import read_complete
from lander.storage.rundir import RunPaths, RunSummary, Status, find_run_dirs
from lander.storage.yamlfile import read_yaml

EVAL_COLUMNS = ("timesteps", "mean", "n", "success_rate")


@dataclass
class Run:
    """One run directory as the comparison sees it; ``final_mean``/``timesteps`` are at its compared budget."""

    path: Path
    overrides: list[str]
    seed: int
    env: str
    status: str
    summary: dict[str, Any] = field(default_factory=dict)
    eval: pd.DataFrame | None = None
    final_returns: list[float] = field(default_factory=list)
    threshold: float | None = None
    final_mean: float = float("nan")
    final_success: float = float("nan")
    timesteps: int = 0  # the evaluation compared (its step count)
    reached: int = 0  # the last evaluated timestep
    step: int = 1  # env steps per step of its envs (n_envs): how far whole steps carry it past a budget
    settings: dict[str, str] = field(default_factory=dict)  # its comparison's keys, as its config gives them

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.path)

    @property
    def stopped_early(self) -> bool:
        """Completed before its budget by a stop rule (``summary.json``'s ``stopped_early``): it will not be
        evaluated further, so its last evaluation is its result at any later budget."""
        return self.status == Status.COMPLETED and bool(self.summary.get("stopped_early"))

    def stopped_before(self, timesteps: int) -> bool:
        """Stopped early by its rule (:attr:`stopped_early`) short of ``timesteps``: compared there at its last
        evaluation."""
        return self.stopped_early and self.reached < timesteps

    @property
    def key(self) -> tuple[str, ...]:
        """The configuration: every override except the seed and those that do not change training."""
        return configuration_key(self.overrides)


SETTINGS = {  # the keys of a run's config that set its sweep's comparison, and the values each takes
    "baseline": None,  # any configuration's label
    "comparison_band": CHOICES["comparison_band"],
    "x_axis": CHOICES["x_axis"],
}


def settings_of(cfg: Mapping[str, Any] | DictConfig) -> dict[str, str]:
    """The comparison's keys (:data:`SETTINGS`) a run's saved config sets, those of the values they take."""
    return {
        key: value
        for key, allowed in SETTINGS.items()
        if isinstance(value := cfg.get(key), str) and (allowed is None or value in allowed)
    }


def read_evals(path: Path, strict: bool = True) -> pd.DataFrame | None:
    """``metrics/eval.csv`` sorted by timesteps (None if missing or empty).

    :param strict: a completed run's file must be whole (else :class:`RunSetError` naming the file); for a run
        killed or still running, a row cut short is left out and an unreadable file reads as no evaluations
    """
    if not path.is_file() or not path.stat().st_size:
        return None
    if not strict:
        fields, rows = read_complete(path)
        evals = pd.DataFrame(rows, columns=fields)
        if any(c not in fields for c in EVAL_COLUMNS):
            return None
        evals[list(EVAL_COLUMNS)] = evals[list(EVAL_COLUMNS)].apply(pd.to_numeric, errors="coerce")
        evals = evals.dropna(subset=list(EVAL_COLUMNS[:3]))
        return evals.sort_values("timesteps", kind="stable").drop_duplicates("timesteps", keep="last")
    try:
        evals = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise RunSetError(f"{path} is not a readable CSV file ({exc})") from None
    missing = [c for c in EVAL_COLUMNS if c not in evals.columns]
    if missing:
        raise RunSetError(f"{path} lacks the column(s) {', '.join(missing)}; it has {', '.join(evals.columns)}")
    for column in EVAL_COLUMNS[:3]:
        if not pd.api.types.is_numeric_dtype(evals[column]) or evals[column].isna().any():
            raise RunSetError(f"{path}: column {column!r} holds values that are not numbers")
    return evals.sort_values("timesteps", kind="stable").drop_duplicates("timesteps", keep="last")


def episodes_at(train_episodes: Path, timesteps: np.ndarray) -> np.ndarray:
    """The training episodes a run had finished by each of ``timesteps`` (``metrics/train_episodes.csv``: the
    highest ``episode`` number ended at or before it; 0 where none, or where the file cannot be read).

    :param timesteps: shape ``(n,)``, env steps
    :return: shape ``(n,)``, episode counts
    """
    none = np.zeros(len(timesteps), dtype=np.int64)
    try:
        train = pd.read_csv(train_episodes, usecols=["timesteps", "episode"]).dropna()
    except (OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError):
        return none
    if not len(train):
        return none
    train = train.sort_values("timesteps", kind="stable")
    ended = np.maximum.accumulate(train["episode"].to_numpy(dtype=np.int64))  # shape (n_episodes,)
    index = np.searchsorted(train["timesteps"].to_numpy(), timesteps, side="right")  # episodes ended by each
    return np.where(index > 0, ended[np.maximum(index - 1, 0)], 0)


def with_episodes(train: pd.DataFrame, evals: pd.DataFrame, paths: RunPaths) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run's training episodes (rows of ``train_episodes.csv``) and evaluations (of ``eval.csv``), each with an
    ``episodes`` column to draw them against: a training episode's own number; the training episodes ended by an
    evaluation (:func:`episodes_at`). Empty frames stay empty."""
    if len(train):
        train = train.assign(episodes=train["episode"])
    if len(evals):
        evals = evals.assign(episodes=episodes_at(paths.train_episodes, evals["timesteps"].to_numpy()))
    return train, evals


def read_run(path: Path) -> Run:
    """Read a run directory (``.hydra/``, ``summary.json``, ``metrics/eval.csv``)."""
    paths = RunPaths(path)
    try:
        cfg = read_yaml(paths.config)
        overrides = read_yaml(paths.overrides) if paths.overrides.is_file() else []
        seed, env = int(cfg["seed"]), str(cfg["env"]["name"])
        step = int(cfg.get("n_envs") or (cfg.get("algo") or {}).get("n_envs") or 1)
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise RunSetError(f"{paths.config} cannot be read as a run's config ({type(exc).__name__}: {exc})") from None
    try:
        summary = RunSummary.load(paths)
    except RunFileError as exc:
        raise RunSetError(str(exc)) from None
    evals = read_evals(paths.eval_csv, strict=summary is not None and summary.status == Status.COMPLETED)
    return Run(
        path=path,
        overrides=with_budget([str(o) for o in overrides or []], cfg, summary),
        seed=seed,
        env=env,
        status=summary.status.value if summary else "failed before training",
        summary=summary.to_dict() if summary else {},
        eval=evals,
        threshold=cfg["env"].get("reward_threshold"),
        reached=int(evals["timesteps"].max()) if evals is not None and len(evals) else 0,
        step=step,
        settings=settings_of(cfg),
    )


def with_budget(overrides: list[str], cfg: dict[str, Any], summary: RunSummary | None) -> list[str]:
    """A run's overrides with the budget it was trained to: a run trained further (``resume=<run>
    total_timesteps=N``) keeps its first command's overrides, so its label would name the first budget."""
    budget = summary.total_timesteps if summary is not None else 0
    first = cfg.get("total_timesteps") or (cfg.get("algo") or {}).get("total_timesteps")
    if not budget or budget == first:
        return overrides
    return [o for o in overrides if not o.startswith("total_timesteps=")] + [f"total_timesteps={budget}"]


def find_runs(paths: list[Path]) -> list[Run]:
    """Every run at or below ``paths`` (a sweep directory, run directories, or a mix), job 2 before job 10."""
    return [read_run(run_dir) for run_dir in find_run_dirs(paths)]


def at_budget(run: Run, timesteps: int) -> Run | None:
    """The run as it stood at ``timesteps``: its evaluation at the budget where whole steps of its envs carried it
    past (the first one at or after ``timesteps`` within one step of its ``n_envs`` envs: 16-env PPO is evaluated
    at 3,008 for a budget of 3,000), else its last evaluation before; a run stopped early (:attr:`Run.stopped_early`)
    short of ``timesteps``, its last evaluation; None for any other run short of ``timesteps``.

    Per-episode returns come from ``metrics/eval_episodes.csv`` (runs older than that file have none).
    """
    if run.stopped_before(timesteps):
        timesteps = run.reached
    if run.eval is None or run.reached < timesteps:
        return None
    steps = run.eval["timesteps"]
    at = steps[(steps >= timesteps) & (steps < timesteps + run.step)]
    evals = run.eval[steps <= (int(at.iloc[0]) if len(at) else timesteps)]
    if not len(evals):
        return None
    last = evals.iloc[-1]
    returns: list[float] = []
    if run.paths.eval_episodes.is_file():
        episodes = pd.read_csv(run.paths.eval_episodes)
        returns = episodes.loc[episodes["timesteps"] == last["timesteps"], "return"].tolist()[-int(last["n"]) :]
    reached = [] if run.threshold is None else evals.loc[evals["mean"] >= run.threshold, "timesteps"].tolist()
    return replace(
        run,
        eval=evals,
        final_returns=returns,
        summary=run.summary | {"first_timestep_reaching_threshold": int(reached[0]) if reached else None},
        final_mean=float(last["mean"]),
        final_success=float(last["success_rate"]),
        timesteps=int(last["timesteps"]),
    )


def common_budget(runs: list[Run]) -> int:
    """The largest evaluated timestep that every one of ``runs`` reached, those stopped early by their rule
    left out (each stands at its last evaluation); where every run stopped early, the last of their evaluations."""
    going = [r.reached for r in runs if not r.stopped_early]
    return min(going) if going else max(r.reached for r in runs)


BUDGET_KEYS = ("total_timesteps", "algo.total_timesteps")  # the overrides that set a run's budget, the first first


def budget_of(run: Run) -> str | None:
    """The override of a run's configuration that sets its budget (:data:`BUDGET_KEYS`: ``total_timesteps=400000``
    as its :attr:`Run.key` writes it; a run trained further has its new one, :func:`with_budget`), None where
    none does."""
    given = {o.split("=", 1)[0]: o for o in run.key if "=" in o}
    return next((given[key] for key in BUDGET_KEYS if key in given), None)


def budget_groups(runs: list[Run]) -> list[list[Run]]:
    """``runs`` (one env's) by the budget they are compared at: one group, unless their configurations differ in the
    budget an override sets (:func:`budget_of`: a budget sweep, ``total_timesteps=100000,400000``, or a run trained
    further), where the budget is what is compared: a group per budget, each compared at its own
    :func:`common_budget` (not every run at the smallest, where the longer ones would be cut short or left out).
    The configurations within a group are still compared at one budget.

    :return: the groups, the smallest budget first
    """
    groups: dict[str | None, list[Run]] = {}
    for run in runs:
        groups.setdefault(budget_of(run), []).append(run)
    if len(groups) == 1:
        return [runs]
    return sorted(groups.values(), key=lambda group: max(r.reached for r in group))


def by_budget(
    by_label: dict[str, list[Run]], at_timesteps: int | None = None
) -> list[tuple[int, dict[str, list[Run]]]]:
    """One env's compared configurations (label -> runs) by the timestep they are compared at: split as
    :func:`budget_groups` splits their runs (a configuration's runs share its budget), one group unless the
    configurations differ in their budget; one group where ``at_timesteps`` put every run at one budget.

    :return: ``[(timestep, {label: runs})]``, the smallest budget first
    """
    if at_timesteps is None:
        firsts = {id(runs[0]): label for label, runs in by_label.items() if runs}
        groups = budget_groups([runs[0] for runs in by_label.values() if runs])
        split = [{firsts[id(run)]: by_label[firsts[id(run)]] for run in group} for group in groups]
    else:
        split = [by_label]
    return [(max(r.timesteps for runs in group.values() for r in runs), group) for group in split]


class Selection(NamedTuple):
    """What :func:`select` found: the runs compared (as they stood at their budget) and the others."""

    compared: list[Run]
    failed: list[Run]
    unfinished: list[Run]  # running; with ``at_timesteps``, also runs short of it
    unevaluated: list[Run]  # past the compared timestep (their env's common budget, or ``at_timesteps``), with no
    # evaluation at or before it


ALIVE = (Status.RUNNING, Status.PAUSED)  # a process holds the run: it is not finished


def select(runs: list[Run], at_timesteps: int | None) -> Selection:
    """Without ``at_timesteps`` the completed runs are compared, each env's at its :func:`common_budget` (each
    budget's, where the configurations differ in it: :func:`budget_groups`);
    with it, every run (finished or not) that reached ``at_timesteps``, as it stood there; a run stopped early
    (:attr:`Run.stopped_early`) short of either, at its last evaluation."""
    failed = [r for r in runs if r.status not in (Status.COMPLETED, *ALIVE)]
    if at_timesteps is not None:
        standing = {r.path: (r, at_budget(r, at_timesteps)) for r in runs if r.status in (Status.COMPLETED, *ALIVE)}
        reached = [b for _, b in standing.values() if b is not None]
        left = [r for r, b in standing.values() if b is None]
        past = {r.path for r in left if r.eval is not None and r.reached >= at_timesteps}  # not evaluated by then
        unfinished = [r for r in left if r.path not in past]
        unevaluated = [replace(r, timesteps=at_timesteps) for r in left if r.path in past]
        return Selection(reached, failed, unfinished, unevaluated)
    done = [r for r in runs if r.status == Status.COMPLETED]
    for r in done:
        if r.eval is None:
            raise RunSetError(f"{r.paths.eval_csv} is missing or empty, but {r.path} completed")
    budgets = {  # each run's compared budget: its env's common one, or its budget group's (a budget sweep)
        r.path: common_budget(group)
        for env in {r.env for r in done}
        for group in budget_groups([r for r in done if r.env == env])
        for r in group
    }
    at: dict[Path, Run | None] = {r.path: at_budget(r, budgets[r.path]) for r in done}
    unevaluated = [replace(r, timesteps=budgets[r.path]) for r in done if at[r.path] is None]
    compared = [b for b in at.values() if b is not None]
    return Selection(compared, failed, [r for r in runs if r.status in ALIVE], unevaluated)


def drop_duplicates(runs: list[Run]) -> tuple[list[Run], list[tuple[Run, Run]]]:
    """Keep one run per (env, configuration, seed): the newest (by ``summary.json``'s time).

    :return: the runs kept, and ``(dropped, kept instead)`` pairs
    """
    newest: dict[tuple[Any, ...], Run] = {}
    for run in sorted(runs, key=lambda r: r.paths.summary.stat().st_mtime if r.paths.summary.is_file() else 0):
        newest[(run.env, run.key, run.seed)] = run
    kept = [r for r in runs if newest[(r.env, r.key, r.seed)] is r]
    return kept, [(r, newest[(r.env, r.key, r.seed)]) for r in runs if newest[(r.env, r.key, r.seed)] is not r]


def configurations(runs: list[Run], compared: list[Run], env: str) -> dict[str, list[Run]]:
    """The compared runs of ``env`` by configuration label, in the order configurations first appear, by seed.

    A label leaves out the ``env=`` override (:func:`without_env`): a configuration swept over envs has one name in
    each, even where it is the env's only one (``--multirun env=lunar_lander,cartpole``)."""
    names = labels(list(dict.fromkeys(without_env(r.key) for r in runs if r.env == env)))  # failed runs' count
    groups: dict[str, list[Run]] = {}
    for r in compared:
        if r.env == env:
            groups.setdefault(names[without_env(r.key)], []).append(r)
    for runs_of_config in groups.values():
        runs_of_config.sort(key=lambda r: r.seed)
    return groups


def without_env(key: tuple[str, ...]) -> tuple[str, ...]:
    """A configuration's overrides (:attr:`Run.key`) but its ``env=`` (or ``+env=``): what it is in every env."""
    return tuple(o for o in key if not o.lstrip("+").startswith("env="))


def label_lines(label: str) -> list[str]:
    """A configuration's label (:func:`labels`) one override a line, for figures."""
    return re.split(r" (?=[^\s=]+=)", label)


def short_labels(names: list[str]) -> list[str]:
    """``names`` (labels, legend entries) with each long number written to 6 significant digits (an Optuna trial's
    ``learning_rate=0.00037861878865426044``: ``learning_rate=0.000378619``) where that leaves them all different;
    else as they are. For figures: the tables keep the labels whole."""

    def short(match: re.Match[str]) -> str:
        return f"={float(match[1]):.6g}"

    shortened = [re.sub(r"=(-?\d+\.\d{7,}(?:e-?\d+)?)(?=[\s,:]|$)", short, name) for name in names]
    return shortened if len(set(shortened)) == len(names) else names
