"""``python -m lander.report <run or sweep dirs...>``: write the HTML reports anew from the files there.

A run directory gets its ``report.html`` (also a run killed by ``kill -9``, which could not write its own); a
sweep directory gets ``comparison/report.html`` (with the rest of ``python -m lander.compare``'s output) and
every job its ``report.html``; runs that cannot be compared (of several envs, none finished: a killed sweep) get
their reports and one line says why there is no comparison, exit 1. Nothing is trained and no other file is changed.
"""

from __future__ import annotations

from lander.process.signals import exit_on_signals, said_on_exit

if __name__ == "__main__":
    exit_on_signals()  # Ctrl-C: exit 130 and one line (said_on_exit), the files written whole

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from lander.analysis.comparison import analyse
from lander.errors import RunSetError
from lander.reports.run_report import write_run_report
from lander.reports.sweep_report import files_in, interrupted, write_comparison
from lander.storage.rundir import RunPaths, SweepPaths, find_run_dirs, not_a_comparisons

log = logging.getLogger(__name__)


def write_reports(
    path: Path,
    band: str | None,
    x: str | None,
    each: Callable[[Path], object],
    comparing: Callable[[Path | None], object],
) -> str | None:
    """Write the reports of one run directory, or of every run under ``path`` and their comparison; return why
    there is no comparison where the runs cannot be compared (of several envs, none finished: a killed sweep's runs
    still get their reports).

    :param each: called with each report's path once it is written (the console lists it then: a sweep's reports
        were listed once all of them were, so a Ctrl-C listed none of those already whole)
    :param comparing: called with the comparison's directory as its writing begins, and with None once it is written
        (a Ctrl-C in between says which of its files are new, as ``lander.compare`` does)
    """
    if RunPaths(path).is_run():
        each(write_run_report(path))
        return None
    runs = find_run_dirs([path])
    if not runs:
        raise RunSetError(f"no run directories (with .hydra/config.yaml) under {path}")
    try:
        found, problem = analyse([path]), None
    except RunSetError as exc:
        found, problem = None, str(exc)
    out = SweepPaths(path).comparison
    if found is not None and (foreign := not_a_comparisons(out)) is not None:  # a folder of one's own there
        found = None
        problem = (
            f"{out} {foreign}, which report.md and the rest would replace: python -m lander.compare {path} --out "
            "<a new or empty directory> writes it"
        )
    for run in runs:  # before the comparison, whose report links to them
        each(write_run_report(run))
    if found is not None:
        comparing(out)
        write_comparison(found, out, band=band, x=x)
        comparing(None)
        for page in (p for p in found.files if p.suffix == ".html"):
            each(page)
    return problem


class Comparing:
    """The comparison being written, if one is (its directory, :func:`files_in` of it as it began, the directory if
    it was made for it), for the line a Ctrl-C ends on."""

    def __init__(self) -> None:
        self.now: tuple[Path, dict[str, int], list[Path]] | None = None

    def __call__(self, out: Path | None) -> None:
        self.now = None if out is None else (out, files_in(out), [] if out.exists() else [out])

    def said(self) -> str:
        listed = "the reports listed above are written, each whole"
        if self.now is None:
            return f"lander.report: interrupted: {listed}"
        return f"{interrupted(*self.now, prog='lander.report')}; {listed}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lander.report",
        description="Write the HTML reports of runs and sweeps anew from the files there.",
    )
    parser.add_argument("paths", nargs="+", type=Path, help="run directories and/or sweep directories")
    parser.add_argument(
        "--band", choices=("seeds", "episodes"), help="band of a sweep's curves (default: its comparison_band)"
    )
    parser.add_argument(
        "--x-axis", choices=("timesteps", "episodes"), help="x axis of a sweep's curves (default: its x_axis)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    missing = [str(p) for p in args.paths if not p.is_dir()]
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    uncompared, comparison = 0, Comparing()
    try:
        with said_on_exit(comparison.said):
            for path in args.paths:
                problem = write_reports(path, args.band, args.x_axis, lambda page: print(page, flush=True), comparison)
                if problem:
                    log.error("lander.report: %s: its runs' reports are written, no comparison: %s", path, problem)
                    uncompared += 1
    except RunSetError as exc:
        log.error("lander.report: %s", exc)
        return 2
    return 1 if uncompared else 0


if __name__ == "__main__":
    sys.exit(main())
