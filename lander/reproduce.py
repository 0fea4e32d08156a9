"""Entry point: ``python -m lander.reproduce <run dir> [--steps N] [--allow-target PREFIX ...]``: does this run
reproduce here?

The run is trained again from its own saved config (``.hydra/config.yaml``: algorithm, env, seed, budget, every
key) into a new directory beside it (``<run>.reproduce-1``, then ``-2``, ...), and the two are compared: every
metrics CSV row by row (the wall-clock columns aside; ``resources.csv``, which measures the machine, left out),
the final evaluation episode by episode, and every weight of the final model. One verdict is printed: identical;
or the first divergence (file, row, step, key, both values), with what differs in the environment snapshots
(``environment/versions.json``: Python, packages, CPU, torch threads) that could explain it. ``--steps N`` trains
and compares only the first N steps (rounded up to whole rollouts as any budget is): a cheap check, whose weights
are compared with the original's checkpoint at that step where it kept one. A run resumed once is replayed: stopped
where it was stopped, then resumed to its final budget (:func:`stages`).

The reproduction records its metrics only: no tracker (W&B, TensorBoard), video or report, which never change a
result (they are neutral keys). A config that imports anything but lander's own targets is refused, as the
service refuses it, unless ``--allow-target`` names it: a run directory from elsewhere runs no code of its own by
being reproduced.

Exit codes: 0 identical, 1 diverged (or the reproduction failed), 2 bad input (nothing written).
"""

from __future__ import annotations

from lander.process.signals import Interrupted, exit_on_signals

if __name__ == "__main__":
    exit_on_signals()

import argparse
import contextlib
import csv
import io
import json
import logging
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from lander.config.checks import checked
from lander.config.schema import budget, load_saved
from lander.config.trust import INTERRUPT_AT, STOP_AT, check_trusted
from lander.errors import ConfigError, RunFileError
from lander.storage.lock import RunLock
from lander.storage.rundir import RunPaths, RunSummary, Status, make_new, not_a_run, write_json

log = logging.getLogger("lander.reproduce")

METRICS = ("train_episodes.csv", "eval.csv", "eval_episodes.csv", "sb3_progress.csv")
CLOCK = {"wall_time", "eval_seconds", "time/fps", "time/time_elapsed"}  # what measures the clock, not the run
STEP_KEYS = ("timesteps", "time/total_timesteps")
RESUMED = (
    "the run was resumed at step %d (summary.json's resumed_at), where a resume re-seeds its envs and generators: "
    "it is compared up to there"
)
REPLAYED = "the run was resumed at step %d (summary.json's resumed_at): trained again to there, then resumed to %d"
SNAPSHOT_KEYS = ("python", "platform", "machine", "cpu_model", "torch_cpu_capability", "torch_threads")


@dataclass
class Divergence:
    """Where a reproduction first differs from its original: ``file``, ``row`` (1-based, after the header),
    ``step`` (its timesteps, where the file has them), ``key``, and both values."""

    file: str
    row: int | None
    step: str | None
    key: str
    original: Any
    reproduced: Any

    def __str__(self) -> str:
        where = self.file + (f" row {self.row}" if self.row is not None else "")
        where += f" (timesteps {self.step})" if self.step is not None else ""
        return f"{where}, {self.key}: {self.original!r} in the original, {self.reproduced!r} here"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lander.reproduce",
        description="Does this run reproduce here? Train it again beside it and compare every metric.",
    )
    parser.add_argument("run", help="the run directory to reproduce")
    parser.add_argument("--steps", type=int, default=None, help="train and compare only the first N steps")
    parser.add_argument(
        "--allow-target", action="append", default=[], metavar="PREFIX", help="a target the config may import"
    )
    return parser.parse_args(argv)


@dataclass
class Plan:
    """What :func:`plan` decided: the config to train again, the new directory beside the run, the steps to compare
    (None: the whole run), the seeds the run trained beside (``seeds_per_process``: 1, or a group, reproduced alone
    on the same engine), the step of the run's first resume (None: never resumed), where the comparison ends unless
    the run is replayed, and for a run replayed the budget its resume trained to."""

    cfg: DictConfig
    copy: Path
    steps: int | None
    grouped: int
    resumed: int | None
    replay: int | None = None  # a run resumed once, replayed: the budget its resume trained to


def plan(run: Path, steps: int | None, allowed: list[str]) -> Plan:
    """What to train again and compare (:class:`Plan`); :class:`ConfigError` for bad input, before anything is
    written.

    A run resumed (``summary.json``'s ``resumed_at``) parts from an uninterrupted run at its resume: a resume
    re-seeds the envs and the generators at its checkpoint (docs/run-directory.md). A run resumed once is replayed
    (``replay``): trained to that checkpoint (stopped there as the original was, :class:`InterruptAtTimesteps`, or
    to the end of the budget it first had, for a run trained further), then resumed to the budget its resume
    had, and compared whole. A run resumed more than once, or with ``--steps``, is compared up to its first resume
    (the budgets of the resumes between are not recorded)."""
    paths = RunPaths(run)
    if not run.is_dir():
        raise ConfigError(f"{str(run)!r} is not a directory")
    if not paths.is_run():
        raise ConfigError(not_a_run(run, "reproduce one of them"))
    if steps is not None and steps < 1:
        raise ConfigError(f"--steps {steps}: the number of steps to reproduce, an integer >= 1")
    cfg = load_saved(paths.config)
    check_trusted(cfg, allowed, where=str(paths.config))
    summary = RunSummary.load(paths)
    if summary is None or (summary.status != Status.COMPLETED and summary.timesteps == 0):
        raise ConfigError(
            f"{str(run)!r} recorded no training step (no summary.json, or 0 timesteps): nothing to compare"
        )
    steps, resumed, replay = stages(cfg, summary, steps)
    OmegaConf.set_struct(cfg, False)
    cfg.resume = None
    grouped = int(cfg.get("seeds_per_process") or 1)
    if grouped > 1:  # a seed side by side draws from its own streams only: alone on the same engine it trains as it
        cfg.seeds_per_process, cfg.batched_engine = 1, True  # did beside the others (tests/unit/test_side_by_side.py)
    if replay is not None and steps is not None:  # interrupted where the original was (a rollout's start)
        stop = {"_target_": INTERRUPT_AT, "timesteps": steps}
        cfg.callbacks["lander_reproduce_interrupt"] = stop
    elif steps is not None and not (resumed is not None and steps >= budget(cfg)[0]):
        # the whole budget, whose schedules (learning rate, exploration) it shapes, stopped there; a run trained
        # further from the end of its first budget is trained to that end, as it was
        stop = {"_target_": STOP_AT, "timesteps": steps}
        cfg.callbacks["lander_reproduce_steps"] = stop
    # nothing that changes a result (neutral keys): no tracker, video, report or progress bar
    cfg.logger, cfg.video.enabled, cfg.report, cfg.progress_bar = {}, False, False, False
    checked(cfg)
    taken = paths.reproductions()
    copy = run.with_name(f"{run.name}.reproduce-{int(taken[-1].name.rsplit('-', 1)[1]) + 1 if taken else 1}")
    if replay is not None:
        return Plan(cfg, copy, None, grouped, resumed, replay)
    return Plan(cfg, copy, steps, grouped, resumed)


def stages(cfg: DictConfig, summary: RunSummary, steps: int | None) -> tuple[int | None, int | None, int | None]:
    """What :func:`plan` trains of a run: ``(steps, resumed, replay)``, the steps to train again and compare (None:
    the whole run), the step of its first resume (None: none to say), and for a run replayed the budget its resume
    trained to."""
    resumed = int(summary.resumed_at[0]) if summary.resumed_at else None
    once = resumed is not None and len(summary.resumed_at) == 1 and steps is None and summary.status == Status.COMPLETED
    if once:  # stopped where the original was, or trained to the end of its first budget; then resumed
        assert resumed is not None
        return (None if resumed >= budget(cfg)[0] else resumed), resumed, int(summary.total_timesteps)
    end = resumed if resumed is not None else None if summary.status == Status.COMPLETED else summary.timesteps
    if end is not None:  # a stopped run: what it recorded; a resumed one: up to its first resume
        return min(steps or end, end), resumed, None
    if steps is not None and steps >= summary.timesteps > 0:  # as many steps as the run took, or more: the whole run
        return None, resumed, None
    return steps, resumed, None


def read_rows(path: Path) -> list[dict[str, str]]:
    """A metrics CSV's complete rows (none if it is missing)."""
    if not path.is_file():
        return []
    text = path.read_text()
    return list(csv.DictReader(io.StringIO(text[: text.rfind("\n") + 1])))


def step_of(row: dict[str, str]) -> str | None:
    return next((row[key] for key in STEP_KEYS if key in row), None)


def kept(step: str | None, upto: int, common: set[str | None] | None, final: bool) -> bool:
    """Whether a row at ``step`` is compared when only the first ``upto`` steps were trained again: at or before
    ``upto`` (before it, for an evaluation: ``final``), and at a step both runs recorded where ``common`` is given."""
    at = int(float(step or 0))
    return (at < upto if final else at <= upto) and (common is None or step in common)


def compare_metrics(original: RunPaths, copy: RunPaths, upto: int | None) -> tuple[Divergence | None, int]:
    """The first differing cell of the metrics CSVs (rows at or before step ``upto`` only, where given), and the
    number of rows compared."""
    compared = 0
    for name in METRICS:
        rows_a = read_rows(original.metrics / name)
        rows_b = read_rows(copy.metrics / name)
        if upto is not None:  # the first steps only; evaluations only where both evaluated, before the copy's last
            # step: a shorter budget moves the evaluation at the budget (after the last update, where a periodic one
            # at that step comes before it), and evaluating changes no training step
            common = {step_of(r) for r in rows_a} & {step_of(r) for r in rows_b} if name.startswith("eval") else None
            rows_a, rows_b = (
                [r for r in rows if kept(step_of(r), upto, common, final=name.startswith("eval"))]
                for rows in (rows_a, rows_b)
            )
        for index, (a, b) in enumerate(zip(rows_a, rows_b, strict=False), start=1):
            for key in sorted((set(a) | set(b)) - CLOCK):  # a key SB3 added later is empty in earlier rows
                if (a.get(key) or "") != (b.get(key) or ""):
                    return Divergence(f"metrics/{name}", index, step_of(a), key, a.get(key), b.get(key)), compared
            compared += 1
        if len(rows_a) != len(rows_b):
            row = min(len(rows_a), len(rows_b)) + 1
            return Divergence(f"metrics/{name}", row, None, "number of rows", len(rows_a), len(rows_b)), compared
    return None, compared


def weights(model_zip: Path) -> dict[str, Any]:
    """The policy's tensors of an SB3 ``model.zip``, read without unpickling (``weights_only``)."""
    import torch  # on use: the arguments are checked, and bad input refused, without torch's 2 s

    with zipfile.ZipFile(model_zip) as archive:
        return dict(torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True, map_location="cpu"))


def compare_weights(original_zip: Path, copy_zip: Path) -> Divergence | None:
    a, b = weights(original_zip), weights(copy_zip)
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b or not bool((a[key] == b[key]).all()):
            first = None if key not in a or key not in b else (a[key] != b[key]).nonzero()[0].tolist()
            value_a = None if key not in a or first is None else float(a[key][tuple(first)])
            value_b = None if key not in b or first is None else float(b[key][tuple(first)])
            return Divergence(copy_zip.name, None, None, f"{key}{first or ''}", value_a, value_b)
    return None


def compare_evaluation(original: RunPaths, copy: RunPaths) -> Divergence | None:
    a = json.loads(original.eval_json.read_text()).get("episodes", [])
    b = json.loads(copy.eval_json.read_text()).get("episodes", [])
    for index, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        for key in ("seed", "return", "length"):
            if x.get(key) != y.get(key):
                return Divergence("eval.json", index, None, f"episodes[{index - 1}].{key}", x.get(key), y.get(key))
    if len(a) != len(b):
        return Divergence("eval.json", None, None, "episodes", len(a), len(b))
    return None


def snapshot_differences(original: RunPaths, copy: RunPaths) -> list[str]:
    """What differs between the two runs' environment snapshots that could change a number: Python, platform,
    CPU, torch's CPU code path and threads, and the packages lander records."""
    try:
        a = json.loads((original.environment / "versions.json").read_text())
        b = json.loads((copy.environment / "versions.json").read_text())
    except (OSError, ValueError):
        return ["the original's environment snapshot (environment/versions.json) is missing or unreadable"]
    found = [f"{key}: {a.get(key)!r} then, {b.get(key)!r} now" for key in SNAPSHOT_KEYS if a.get(key) != b.get(key)]
    packages_a, packages_b = a.get("packages") or {}, b.get("packages") or {}
    for name in sorted(set(packages_a) | set(packages_b)):
        if packages_a.get(name) != packages_b.get(name) and name != "lander":
            found.append(f"{name}: {packages_a.get(name)} then, {packages_b.get(name)} now")
    commit_a, commit_b = (a.get("git") or {}).get("commit"), (b.get("git") or {}).get("commit")
    if packages_a.get("lander") != packages_b.get("lander") or commit_a != commit_b:
        found.append(f"lander: commit {commit_a} then, {commit_b} now")
    return found


def verdict(original: RunPaths, copy: RunPaths, steps: int | None, trained: int) -> tuple[Divergence | None, str]:
    """The first divergence (None: identical) and what was compared; ``trained``: the step the reproduction's
    weights stand at (with ``steps``, the update it stopped after)."""
    divergence, rows = compare_metrics(original, copy, trained if steps is not None else None)
    compared = [f"{rows} metric rows"]
    if divergence is None and steps is None:
        divergence = compare_evaluation(original, copy)
        compared.append("the final evaluation's episodes")
    if divergence is None:
        checkpoint = original.checkpoints / f"model_{trained}_steps.zip"
        target = original.model if steps is None else checkpoint
        if target.is_file():
            divergence = compare_weights(target, copy.model)
            compared.append(f"every weight of {target.relative_to(original.root)}")
        else:
            compared.append(f"no weights (the original kept no checkpoint at {trained:,} steps)")
    return divergence, ", ".join(compared)


def reproduce(run: Path, steps: int | None, allowed: list[str]) -> int:
    """Train ``run`` again beside it and print the verdict; the exit code (0 identical, 1 diverged)."""
    planned = plan(run, steps, allowed)
    stem, number = planned.copy.name.rsplit("-", 1)  # <run>.reproduce-N, or the next N another one left free
    planned.copy = make_new(planned.copy.with_name(stem), int(number))
    cfg, copy, steps = planned.cfg, planned.copy, planned.steps
    (copy / ".hydra").mkdir()
    OmegaConf.save(cfg, copy / ".hydra" / "config.yaml")
    handler = logging.FileHandler(copy / "run.log")
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    logging.getLogger().addHandler(handler)
    log.info("reproducing %s in %s%s", run, copy, f" (its first {steps:,} steps)" if steps else "")
    if planned.replay is not None:
        log.info(REPLAYED, planned.resumed, planned.replay)
    elif planned.resumed is not None:
        log.info(RESUMED, planned.resumed)
    if planned.grouped > 1:
        log.info("it trained side by side (seeds_per_process=%d): reproduced alone on the same engine", planned.grouped)
    RunLock(copy).acquire()
    try:
        cfg, summary = train_again(planned)
    except Interrupted as stop:  # Ctrl-C, or a kill's SIGTERM: the copy recorded where it stopped (interrupted)
        recorded = RunSummary.load(RunPaths(copy))
        at = f"{recorded.timesteps:,}" if recorded is not None else "0"
        print(
            f"lander.reproduce: interrupted ({stop}) at step {at}: {copy} is left unfinished, without a verdict",
            file=sys.stderr,
        )
        return stop.exit_code
    # stopped one step of its envs past the update it was to reach (StopAtTimesteps), where it was stopped
    trained = int(summary.timesteps) - (budget(cfg)[1] if "lander_reproduce_steps" in cfg.callbacks else 0)
    found, lines = said(RunPaths(run), RunPaths(copy), steps, summary, trained)
    if planned.replay is not None:
        lines.insert(1, "  " + REPLAYED % (planned.resumed, planned.replay))
    elif planned.resumed is not None:
        lines.insert(1, "  " + RESUMED % planned.resumed)
    write_json(RunPaths(copy).reproduction, {"original": str(run), "verdict": found, "lines": lines})
    print("\n".join(lines))
    return 0 if found == "identical" else 1


def train_again(planned: Plan) -> tuple[DictConfig, RunSummary]:
    """Train the reproduction as :func:`plan` planned it; its config as it last trained, and its summary.

    :raises lander.process.signals.Interrupted: a signal stopped it (the copy recorded where)
    """
    # torch, SB3 (~2 s): after the checks, so bad input fails at once
    from lander.training.callbacks import Interruption
    from lander.training.resume import resume_config
    from lander.training.train import train

    cfg, copy, summary = planned.cfg, planned.copy, None
    if planned.replay is not None:
        with contextlib.suppress(Interruption):  # stopped where the original was (or trained to its first budget)
            summary = train(cfg, copy)
        if summary is None or summary.timesteps < planned.replay:  # (one that ended otherwise is compared as it is)
            cfg = resume_config(copy, planned.replay)  # then resumed as the original was: its checkpoint, that budget
            cfg.callbacks.pop("lander_reproduce_interrupt", None)  # (none where it was trained to its first budget)
            summary = None
    return cfg, summary or train(cfg, copy)


def said(
    original: RunPaths, copy: RunPaths, steps: int | None, summary: RunSummary, trained: int
) -> tuple[str, list[str]]:
    """The verdict (``identical``, ``diverged`` or ``failed``) and the lines that say it, the first one whole."""
    if summary.status != Status.COMPLETED:
        return "failed", [f"failed: the reproduction in {copy.root} ended {summary.status}: {summary.error}"]
    divergence, compared = verdict(original, copy, steps, trained)
    if divergence is None:
        return "identical", [f"identical: {copy.root} reproduces {original.root} to its step {trained:,} ({compared})"]
    lines = [f"diverged: {divergence}", f"  compared up to there: {compared}; the reproduction is in {copy.root}"]
    if differences := snapshot_differences(original, copy):
        lines += ["  what differs in the environment snapshot:", *(f"    {line}" for line in differences)]
    else:
        lines.append(
            "  the environment snapshots agree (Python, platform, CPU, torch threads, packages, lander's commit)"
        )
    return "diverged", lines


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        return reproduce(Path(args.run), args.steps, args.allow_target)
    except (ConfigError, RunFileError) as exc:
        print(f"lander.reproduce: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
