"""``comparison/report.html`` of a sweep (or of any runs ``python -m lander.compare`` was given): per env the
budget compared, the table with intervals, the interactive figures; then every run with a link to its own report,
and the runs left out (failed, unfinished, duplicates). One self-contained file (:mod:`lander.reports.html`)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from lander.analysis.comparison import Comparison, analyse
from lander.analysis.runset import Run
from lander.analysis.sequential import decision_matrix, seeds_table
from lander.reports.figures import sweep_figures
from lander.reports.html import esc, figure, number, table, write_page
from lander.reports.markdown import (
    budget_lines,
    left_out_line,
    left_out_names,
    markdown_table,
    readable_rows,
    report_lines,
    sequential_lines,
)
from lander.reports.plots import plot_curves, plot_final_scores, plot_profile
from lander.storage.rundir import atomic_write, write_json, write_text

log = logging.getLogger(__name__)


def inline_markdown(line: str) -> str:
    """A line of ``report.md`` as HTML: escaped, with its **bold** and `code`."""
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", esc(line))
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", text)


def link(run: Run, report: Path) -> str:
    """A link to the run's ``report.html`` (relative to the sweep report), or its directory if it has none."""
    target = run.paths.report if run.paths.report.is_file() else run.path
    return f'<a href="{esc(Path(os.path.relpath(target, report.parent)).as_posix())}">{esc(run.path.name)}</a>'


def runs_table(runs: list[Run], report: Path) -> str:
    """Every run: its report, status, configuration, seed, steps and final evaluation; errors in full."""
    rows = [
        f"<tr><td>{link(r, report)}</td><td>{esc(r.status)}</td><td>{esc(' '.join(r.overrides))}</td>"
        f"<td>{esc(r.seed)}</td><td>{esc(r.summary.get('timesteps', ''))}</td>"
        f"<td>{esc(number(r.summary.get('final_eval_mean', '')))}</td>"
        f"<td>{esc(r.summary.get('error') or '')}</td></tr>"
        for r in runs
    ]
    head = (
        "<tr><th>run</th><th>status</th><th>overrides</th><th>seed</th><th>timesteps</th><th>final eval</th>"
        "<th>error</th></tr>"
    )
    return f'<table class="text">{head}{"".join(rows)}</table>' if rows else "<p><em>none</em></p>"


def env_section(found: Comparison, env: str, band: str, x: str) -> str:
    """One env: where it is compared, the table, the figures (curves against ``x``)."""
    by_label, rows = found.groups[env], found.tables[env]
    figures = sweep_figures(by_label, env, band, found.budgets(env), x)
    lines = "".join(f"<p>{inline_markdown(line)}</p>" for line in budget_lines(by_label, found.at_timesteps))
    return (
        f"<h3>{esc(env)}</h3>{lines}<p>Baseline: <code>{esc(rows['baseline'].iloc[0])}</code>. Every statistic "
        "is over runs (one score per seed: its evaluation mean at the compared timestep); intervals are 95% "
        "percentile bootstrap intervals over seeds.</p>"
        + table(pd.DataFrame(readable_rows(rows)))
        + "".join(figure(fig, f"{name}_{env}") for name, fig in figures.items())
    )


def left_out(found: Comparison, report: Path) -> str:
    """The runs not compared, by why."""
    parts = []
    unfinished = left_out_names(found.at_timesteps)["unfinished"].capitalize()
    for key, title in (("failed", "Failed"), ("unfinished", unfinished), ("unevaluated", "Not evaluated by then")):
        if found.left_out.get(key):
            parts.append(f"<h3>{title}</h3>" + runs_table(found.left_out[key], report))
    duplicates = found.left_out.get("duplicates") or []
    if duplicates:
        items = "".join(
            f"<li>{link(r, report)} (seed {esc(r.seed)}): same as {link(kept, report)}</li>" for r, kept in duplicates
        )
        parts.append(f"<h3>Duplicates not counted (the newest is kept)</h3><ul>{items}</ul>")
    return "".join(parts) or "<p>Every run was compared.</p>"


def sequential(record: dict[str, Any]) -> str:
    """The HTML of a sequential test's decisions (:func:`lander.reports.markdown.sequential_lines`, the same words):
    its text, the decision matrix and the seeds used against the fixed design."""
    lines = sequential_lines(record)
    text = "".join(f"<p>{inline_markdown(line)}</p>" for line in lines[2:] if line and not line.startswith("|"))
    matrix = decision_matrix(record)
    return text + (table(matrix.reset_index()) if len(matrix) else "") + table(seeds_table(record))


def write_sweep_report(found: Comparison, path: Path, band: str = "seeds", x: str = "timesteps") -> Path:
    """Write the comparison's ``report.html`` to ``path`` (curves against ``x``); return it."""
    compared = "".join(env_section(found, env, band, x) for env in found.groups)
    if len(found.spanning):
        compared += "<h3>Across envs</h3><p>P(improvement) over the baseline averaged over envs.</p>" + table(
            found.spanning
        )
    counts = {key: len(items) for key, items in found.left_out.items()}
    names = left_out_names(found.at_timesteps)
    summary = (
        f"<p>Runs: {len(found.runs)}; compared: {found.compared}; failed: {counts.get('failed', 0)}; "
        f"{names['unfinished']}: {counts.get('unfinished', 0)}; not evaluated by then: "
        f"{counts.get('unevaluated', 0)}; duplicates: {counts.get('duplicates', 0)}.</p>"
    )
    if any(found.left_out.values()):
        warning = inline_markdown(left_out_line(found.left_out, len(found.runs), found.at_timesteps))
        summary = f'<div class="error">{warning}</div>' + summary
    sections = [
        ("comparison", "Comparison", summary + compared),
        *([("sequential", "Sequential test (AdaStop)", sequential(found.sequential))] if found.sequential else []),
        ("runs", "Runs", runs_table(found.runs, path)),
        ("left-out", "Runs left out", left_out(found, path)),
    ]
    out = path.parent.resolve()  # a sweep's (<sweep dir>/comparison), the service's (comparisons/<date>/<time>), --out
    named = out.parent if out.name == "comparison" else out
    title = f"lander comparison: {named.parent.name}/{named.name}"
    return write_page(path, title, sections)


def compare(
    paths: list[Path],
    out_dir: Path,
    baseline: str | None = None,
    at_timesteps: int | None = None,
    band: str | None = None,
    x: str | None = None,
) -> Comparison:
    """Write the comparison of the runs under ``paths`` to ``out_dir``; return what it found.

    Everything is computed before the first file is written, so bad input (:class:`RunSetError`, naming the
    file or value) leaves ``out_dir`` as it was.

    :param paths: a sweep directory, run directories, or both
    :param out_dir: where ``table.csv``, ``table.md``, ``report.md``, ``report.html`` and the plots go
    :param baseline: the configuration label the others are tested against (default: the one the runs were
        configured with, ``baseline=`` of their sweep, else the first)
    :param at_timesteps: compare the runs as they stood at this many steps (default: each env's common budget)
    :param band: the curves' band, ``"seeds"`` (bootstrap over seeds) or ``"episodes"`` (s.e. over episodes);
        default: the runs' ``comparison_band``, else seeds
    :param x: the curves' x axis, ``"timesteps"`` or ``"episodes"`` (training episodes ended by each evaluation);
        default: the runs' ``x_axis``, else timesteps
    :return: what was compared (:class:`Comparison`), with the files written in ``files``
    """
    return write_comparison(analyse(paths, baseline, at_timesteps), out_dir, band, x)


def write_comparison(found: Comparison, out_dir: Path, band: str | None = None, x: str | None = None) -> Comparison:
    """Write what :func:`lander.analysis.comparison.analyse` found (its baseline and budget) to ``out_dir``: the
    tables, plots and reports of :func:`compare` (``band`` and ``x`` as there); return it, with the files written
    in ``files``."""
    band, x = found.curve_settings(band, x)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for env, by_label in found.groups.items():
        for name, plot in (
            ("learning_curves", partial(plot_curves, band=band, budgets=found.budgets(env), x=x)),
            ("final_scores", plot_final_scores),
            ("performance_profile", plot_profile),
        ):
            files.append(out_dir / f"{name}_{env}.png")
            plot(by_label, env, files[-1])
    report = report_lines(
        found.runs, found.groups, found.tables, found.spanning, found.left_out, found.at_timesteps, found.sequential
    )
    files += write_tables(found.table, found.spanning, out_dir, report)
    records = {"runs": len(found.runs), "compared": found.compared, "left_out": found.left_out_records()}
    files.append(write_json(out_dir / "left_out.json", records))
    files.append(write_sweep_report(found, out_dir / "report.html", band, x))
    log.info("comparison of %d run%s written to %s", found.compared, "" if found.compared == 1 else "s", out_dir)
    found.files = files
    return found


def write_tables(result: pd.DataFrame, spanning: pd.DataFrame, out_dir: Path, report: list[str]) -> list[Path]:
    """Write ``table.csv``, ``table.md``, ``report.md`` (and ``across_envs.csv`` when the comparison spans envs)."""
    atomic_write(out_dir / "table.csv", partial(result.to_csv, index=False))
    write_text(out_dir / "table.md", markdown_table(result) + "\n")
    write_text(out_dir / "report.md", "\n".join(report))
    files = [out_dir / "table.csv", out_dir / "table.md", out_dir / "report.md"]
    if len(spanning):
        atomic_write(out_dir / "across_envs.csv", partial(spanning.to_csv, index=False))
        files.append(out_dir / "across_envs.csv")
    return files


def files_in(out: Path) -> dict[str, int]:
    """The files of ``out`` (not its hidden ones: atomic writes' temporary files) and when each was last written
    (``st_mtime_ns``); none where it is no directory."""
    if not out.is_dir():
        return {}
    return {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file() and not p.name.startswith(".")}


def remove_empty(made: list[Path]) -> None:
    """Remove the directories made for a comparison, innermost first, as far as they are empty."""
    with contextlib.suppress(OSError):
        for directory in made:
            directory.rmdir()


def interrupted(out: Path, before: dict[str, int], made: list[Path], prog: str = "lander.compare") -> str:
    """The line ``prog`` ends on where a signal stopped it writing a comparison: the files it wrote in ``out``, each
    whole, and those an earlier comparison left there (``before``: :func:`files_in` as it began), or that it wrote
    none (and the directories ``made`` for it are removed). It said "holds the files written so far" of an ``out``
    it had not made yet, and of an earlier comparison's files beside the new ones."""
    now = files_in(out)
    written = sorted(name for name, stamp in now.items() if before.get(name) != stamp)
    earlier = sorted(name for name in now if name not in written)
    if not written:
        remove_empty(made)
        kept = f"; {out} holds the earlier comparison as it was" if earlier else ""
        return f"{prog}: interrupted before it wrote a file{kept}"
    line = f"{prog}: interrupted: {out} holds the files written so far, each whole ({', '.join(written)})"
    if earlier:
        line += f", beside the earlier comparison's {', '.join(earlier)}: compare again for a whole one"
    return line
