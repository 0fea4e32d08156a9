"""``python -m lander.compare <sweep dir or run dirs...> [--baseline LABEL] [--out DIR] [--at-timesteps N] [--band
seeds|episodes] [--x-axis timesteps|episodes]``: write the comparison a sweep writes at its end
(:func:`lander.reports.sweep_report.compare`) into ``<sweep>/comparison`` (or ``--out``; of run directories, or
of more than one path, ``comparisons/<date>/<time>``): ``table.csv``, ``table.md``, ``report.md``, ``report.html``
and per env ``learning_curves_<env>.png``, ``final_scores_<env>.png`` and ``performance_profile_<env>.png``. Every
run of an env is compared at the largest evaluated timestep all of them reached (each budget's runs at their own,
where the configurations differ in the budget an override sets); with ``--at-timesteps N``, every run that got N
steps far, as it stood at its last evaluation up to N. A run a stop rule ended early (``early_stop``,
``max_episodes``) is compared at its last evaluation wherever the others are.
"""

from __future__ import annotations

from lander.process.signals import exit_on_signals, said_on_exit

if __name__ == "__main__":
    exit_on_signals()  # Ctrl-C: exit 130 and one line (said_on_exit), the files written whole

import argparse
import json
import logging
import sys
from itertools import takewhile
from pathlib import Path

from lander.errors import RunSetError
from lander.reports.sweep_report import compare, files_in, interrupted, remove_empty
from lander.storage.rundir import RunPaths, SweepPaths, enclosing_run, new_directory, not_a_comparisons

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lander.compare",
        description="Write the comparison a sweep writes at its end (table, report, plots) for a sweep or runs.",
    )
    parser.add_argument("paths", nargs="+", type=Path, help="a sweep directory and/or run directories")
    parser.add_argument(
        "--out",
        type=Path,
        help="output directory (default: <path>/comparison for one sweep or folder of runs; "
        "comparisons/<date>/<time> for run directories or several paths, as the service names its comparisons)",
    )
    parser.add_argument(
        "--baseline",
        help="configuration label to test the others against (default: the runs' own baseline=, as their sweep "
        "was configured, else the first)",
    )
    parser.add_argument(
        "--at-timesteps",
        type=int,
        metavar="N",
        help="compare every run as it stood at N steps (its last evaluation up to N), finished or not",
    )
    parser.add_argument(
        "--band",
        choices=("seeds", "episodes"),
        help="band of the curves: 95%% bootstrap interval of the mean over seeds (seeds), or the standard error "
        "over all evaluation episodes of all seeds (episodes); default: the runs' comparison_band, else seeds",
    )
    parser.add_argument(
        "--x-axis",
        choices=("timesteps", "episodes"),
        help="x axis of the curves: env steps (timesteps), or the training episodes each run had ended by each "
        "evaluation (episodes); default: the runs' x_axis, else timesteps",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if (refused := argument_error(args)) is not None:
        parser.error(refused)
    beside = args.out is None and apart(args.paths)  # compared into comparisons/
    try:  # a new directory of its own (made: another comparison started in the same second takes the next name)
        out = args.out or (new_directory(Path("comparisons")) if beside else SweepPaths(args.paths[0]).comparison)
    except OSError as exc:
        log.error("lander.compare: %s", cannot_write(Path("comparisons"), exc))
        return 2
    sweep = SweepPaths(out.parent)
    if (
        out.resolve() == sweep.comparison.resolve()
        and sweep.is_sweep()
        and not any(p.resolve().is_relative_to(sweep.root.resolve()) for p in args.paths)
    ):
        parser.error(
            f"--out {out} is the comparison of the sweep {sweep.root}, which is not among the paths compared: it "
            "would be replaced by this one; give --out <a new or empty directory>"
        )
    if (foreign := not_a_comparisons(out)) is not None:  # a run's directory, a sweep's, a project
        parser.error(
            f"--out {out} {foreign}: the comparison would write report.html, report.md, table.csv and its plots "
            "among them; give --out <a new or empty directory>"
        )
    # the directories made for it, removed where it writes nothing: new_directory's and its date's, or --out's new ones
    made = (
        [out, out.parent, out.parent.parent] if beside else [*takewhile(lambda p: not p.exists(), [out, *out.parents])]
    )
    before = files_in(out)
    try:
        with said_on_exit(lambda: interrupted(out, before, made)):
            compare(args.paths, out, args.baseline, args.at_timesteps, args.band, args.x_axis)
    except (RunSetError, OSError) as exc:  # OSError: an --out that cannot be made (under a file, a read-only
        # place), a full disk
        log.error("lander.compare: %s", exc if isinstance(exc, RunSetError) else cannot_write(out, exc))
        remove_empty(made)
        return 2
    if beside:  # its inputs.json, as the service writes its own: the dashboard of a service rooted here lists it
        (out / "inputs.json").write_text(json.dumps([str(listed_path(p)) for p in args.paths]))
    print((out / "report.md").read_text())
    return 0


def argument_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments before anything is read: a path that is no directory, ``--at-timesteps``
    below 1, or a comparison that would go into a run's directory (``--out``, or the default ``comparisons/`` of
    runs compared from inside one), which holds that run's files only; None if nothing."""
    missing = [str(p) for p in args.paths if not p.is_dir()]
    if missing:
        return f"not a directory: {', '.join(missing)}"
    if args.at_timesteps is not None and args.at_timesteps < 1:
        return f"--at-timesteps={args.at_timesteps}: must be a number of timesteps >= 1"
    out = args.out if args.out is not None else Path("comparisons") if apart(args.paths) else None
    if out is not None and (run := enclosing_run(out)) is not None:
        given = f"--out {out}" if args.out is not None else "comparisons/ (the default --out)"
        return (
            f"{given} is inside the run {run}: a run's directory holds that run's files only; give --out <a "
            "directory outside it>"
        )
    return None


def apart(paths: list[Path]) -> bool:
    """Whether the comparison of ``paths`` goes to a directory of its own by default (``comparisons/<date>/<time>``):
    run directories (it never writes into one), or several paths (two sweeps: not into the first one's
    ``comparison/``, which is that sweep's own); else into the one sweep's or folder's ``comparison/``."""
    return len(paths) > 1 or RunPaths(paths[0]).is_run()


def cannot_write(out: Path, exc: OSError) -> str:
    return f"cannot write the comparison in {out}: {exc.strerror or exc}"


def listed_path(path: Path) -> Path:
    """``path`` under the working directory (a service's root there lists the comparison with it), else in full."""
    found = path.resolve()
    return found.relative_to(Path.cwd()) if found.is_relative_to(Path.cwd()) else found


if __name__ == "__main__":
    sys.exit(main())
