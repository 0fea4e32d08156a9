"""``comparison/report.html`` of a sweep (or of any runs ``python -m lander.compare`` was given): per env the
budget compared, the table with intervals, the interactive figures; then every run with a link to its own report,
and the runs left out (failed, unfinished, duplicates). One self-contained file (:mod:`lander.htmlpage`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from lander.figures_sweep import sweep_figures
from lander.htmlpage import esc, figure, number, table, write_page
from lander.report_md import budget_lines, readable_rows

if TYPE_CHECKING:
    from lander.compare import Comparison
    from lander.runset import Run


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
    rows = [f"<tr><td>{link(r, report)}</td><td>{esc(r.status)}</td><td>{esc(' '.join(r.overrides))}</td>"
            f"<td>{esc(r.seed)}</td><td>{esc(r.summary.get('timesteps', ''))}</td>"
            f"<td>{esc(number(r.summary.get('final_eval_mean', '')))}</td>"
            f"<td>{esc(r.summary.get('error') or '')}</td></tr>"
            for r in runs]  # fmt: skip
    head = "<tr><th>run</th><th>status</th><th>overrides</th><th>seed</th><th>timesteps</th><th>final eval</th>" \
           "<th>error</th></tr>"  # fmt: skip
    return f'<table class="text">{head}{"".join(rows)}</table>' if rows else "<p><em>none</em></p>"


def env_section(found: Comparison, env: str, band: str) -> str:
    """One env: where it is compared, the table, the figures."""
    by_label, rows = found.groups[env], found.tables[env]
    figures = sweep_figures(by_label, env, band, found.budget(env))
    lines = "".join(f"<p>{inline_markdown(line)}</p>" for line in budget_lines(by_label, found.at_timesteps))
    return (f"<h3>{esc(env)}</h3>{lines}<p>Baseline: <code>{esc(rows['baseline'].iloc[0])}</code>. Every statistic "
            "is over runs (one score per seed: its evaluation mean at the compared timestep); intervals are 95% "
            "percentile bootstrap intervals over seeds.</p>"
            + table(pd.DataFrame(readable_rows(rows)))
            + "".join(figure(fig, f"{name}_{env}") for name, fig in figures.items()))  # fmt: skip


def left_out(found: Comparison, report: Path) -> str:
    """The runs not compared, by why."""
    parts = []
    for key, title in (("failed", "Failed"), ("unfinished", "Not finished"), ("unevaluated", "Not evaluated by then")):
        if found.left_out.get(key):
            parts.append(f"<h3>{title}</h3>" + runs_table(found.left_out[key], report))
    duplicates = found.left_out.get("duplicates") or []
    if duplicates:
        items = "".join(f"<li>{link(r, report)} (seed {esc(r.seed)}): same as {link(kept, report)}</li>"
                        for r, kept in duplicates)  # fmt: skip
        parts.append(f"<h3>Duplicates not counted (the newest is kept)</h3><ul>{items}</ul>")
    return "".join(parts) or "<p>Every run was compared.</p>"


def write_sweep_report(found: Comparison, path: Path, band: str = "seeds") -> Path:
    """Write the comparison's ``report.html`` to ``path``; return it."""
    compared = "".join(env_section(found, env, band) for env in found.groups)
    if len(found.spanning):
        compared += "<h3>Across envs</h3><p>P(improvement) over the baseline averaged over envs.</p>" + table(
            found.spanning
        )
    counts = {key: len(items) for key, items in found.left_out.items()}
    summary = (f"<p>Runs: {len(found.runs)}; compared: {found.compared}; failed: {counts.get('failed', 0)}; not "
               f"finished: {counts.get('unfinished', 0)}; duplicates: {counts.get('duplicates', 0)}.</p>")  # fmt: skip
    sections = [
        ("comparison", "Comparison", summary + compared),
        ("runs", "Runs", runs_table(found.runs, path)),
        ("left-out", "Runs left out", left_out(found, path)),
    ]
    sweep = path.parent.parent  # <sweep dir>/comparison/report.html
    title = f"lander comparison: {sweep.parent.name}/{sweep.name}"
    return write_page(path, title, sections)
