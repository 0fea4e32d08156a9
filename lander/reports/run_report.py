"""``report.html`` of one run: status, results, interactive figures, the final evaluation's episodes, the video,
the resolved config and the environment snapshot, in one self-contained file (:mod:`lander.reports.html`).

Written at the end of every run, completed or not (from what it recorded), and by ``python -m lander.report``.
"""

from __future__ import annotations

import errno
import logging
import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from omegaconf import OmegaConf

from lander.analysis.runset import settings_of
from lander.config.trust import resolve_trusted
from lander.errors import RunFileError
from lander.reports.figures import missing_columns, run_figures
from lander.reports.html import esc, figure, number, pairs, pre, table, video, write_page
from lander.storage.csvlog import read_complete
from lander.storage.lock import RunLock
from lander.storage.rundir import RunPaths, RunSummary, atomic_write, config_facts, read_json, shown_status
from lander.storage.yamlfile import safe_yaml

log = logging.getLogger(__name__)
RESULTS = {  # summary.json field: its name in the report
    "final_eval_mean": "final evaluation mean",
    "final_eval_sem": "its standard error",
    "final_eval_success_rate": "success rate",
    "best_eval_mean": "best evaluation mean",
    "first_timestep_reaching_threshold": "first timestep reaching the threshold",
    "timesteps": "timesteps trained",
    "total_timesteps": "budget",
    "stopped_early": "stopped early",
    "wall_seconds": "wall time (s)",
    "steps_per_second": "steps per second",
    "peak_rss_mb": "peak memory (MB)",
    "gpu": "GPU",
    "gpu_peak_memory_mb": "peak GPU memory allocated (MB)",
    "resumed_at": "resumed at",
}


def read_text(path: Path, limit: int = 2_000_000) -> str:
    """A text file of the run (at most ``limit`` characters); '' if missing, unreadable bytes replaced."""
    if not path.is_file():
        return ""
    with path.open(errors="replace") as handle:
        return handle.read(limit)


def resolved_config(paths: RunPaths, config: dict[str, Any], problem: str | None) -> str:
    """The run's config with its interpolations resolved (as it trained) where they call no resolver but ``now``
    (:func:`lander.config.trust.resolve_trusted`, as the service shows a config: the report is a file to share, and
    a copied run's ``${oc.env:...}`` would write this machine's environment into it); as written otherwise.

    :param config: the config as :func:`saved_config` read it, with what is wrong with it (``problem``)
    """
    if problem is not None or not config:
        text = read_text(paths.config)
        return f"# not read ({problem}); as written:\n{text}" if problem else text or "(no .hydra/config.yaml)"
    resolved = resolve_trusted(config)
    if resolved is config:
        text = read_text(paths.config)
        return f"# not resolved (an interpolation calls a resolver, or does not resolve); as written:\n{text}"
    return OmegaConf.to_yaml(resolved)


def header(summary: dict[str, Any], paths: RunPaths, held: bool) -> str:
    """Status, what was trained, and for a run that did not complete, what stopped it and how to continue.

    :param held: a process of this machine trains the run (the lock is its own to its end), as it was before
        ``summary`` was read (a run that ended between the two reads is not "killed")
    """
    status = shown_status(str(summary.get("status", "unknown")), held, lambda: False)  # as the dashboard shows it
    what = (
        f"{summary.get('algo', '?')} on {summary.get('env_id', '?')}, seed {summary.get('seed', '?')}, "
        f"gamma {summary.get('gamma', '?')}"
    )
    badge = f'<span class="status {esc(status)}">{esc(status)}</span>'
    out = f"<p>{badge} {esc(what)} &middot; <code>{esc(paths.root)}</code></p>"
    if status == "completed":
        return out
    killed = (
        "<strong>Not finished:</strong> still training (its process holds the run)"
        if held
        else "<strong>Not finished:</strong> killed without a chance to record it (kill -9, power loss): no "
        "process holds the run"
    )
    stopped = f"<strong>Stopped by</strong> <code>{esc(summary['error'])}</code>" if summary.get("error") else killed
    resume = f"continue: <code>python -m lander.run {esc(shlex.quote(f'resume={paths.root}'))}</code>"
    return out + f'<div class="error">{stopped}<br>{resume}</div>'


def not_numbers(paths: RunPaths) -> list[str]:
    """What the metrics files hold that is not a number (a file edited or damaged by hand), once a column, in one
    line naming the file: the plots leave those values out, and the report says so."""
    notes = []
    for path in (paths.eval_csv, paths.eval_episodes, paths.train_episodes, paths.resources):
        if not path.is_file() or not path.stat().st_size:
            continue
        fields, rows = read_complete(path)
        if lacking := missing_columns(path, fields):
            notes.append(f"{path.relative_to(paths.root)} lacks the column(s) {', '.join(lacking)}: not plotted")
        cells = pd.DataFrame(rows, columns=fields).astype(str)
        for column in cells.columns:
            bad = pd.to_numeric(cells[column], errors="coerce").isna() & cells[column].str.strip().ne("")
            if bad.any():
                notes.append(
                    f"{path.relative_to(paths.root)}: column {column!r} holds {int(bad.sum())} value(s) that are not "
                    f"numbers (the first on line {int(bad.to_numpy().argmax()) + 2}); the plots leave them out"
                )
    return notes


def final_episodes(paths: RunPaths) -> str:
    """The final evaluation: its statistics and every episode (seed, return, length)."""
    record = read_json(paths.eval_json) if paths.eval_json.is_file() else {}
    if not record:
        return "<p><em>no final evaluation (eval.json) recorded</em></p>"
    stats = {
        k: record.get(k)
        for k in (
            "n",
            "mean",
            "std",
            "sem",
            "median",
            "min",
            "max",
            "success_rate",
            "threshold",
            "timesteps",
            "deterministic",
        )
    }
    return pairs(stats) + table(pd.DataFrame(record.get("episodes", [])))


def environment(paths: RunPaths) -> str:
    """The environment snapshot: versions, git state, platform; ``pip freeze`` folded."""
    versions = read_json(paths.environment / "versions.json") if (paths.environment / "versions.json").is_file() else {}
    flat = {k: v for k, v in versions.items() if not isinstance(v, dict)}
    nested = "".join(f"<h3>{esc(k)}</h3>{pairs(v)}" for k, v in versions.items() if isinstance(v, dict))
    freeze = read_text(paths.environment / "pip_freeze.txt")
    return pairs(flat) + nested + (pre(freeze, "pip freeze") if freeze else "")


def files(paths: RunPaths) -> str:
    """Links to the run's files, relative to the report (they open when the directory is copied whole)."""
    names = [
        "model.zip",
        "best_model.zip",
        "eval.json",
        "summary.json",
        "run.log",
        "learning_curve.png",
        "video.mp4",
        *(f"metrics/{p.name}" for p in sorted(paths.metrics.glob("*.csv"))),
    ]
    links = [f'<li><a href="{esc(n)}">{esc(n)}</a></li>' for n in names if (paths.root / n).is_file()]
    checkpoints = sorted(paths.checkpoints.glob("*.zip")) if paths.checkpoints.is_dir() else []
    if checkpoints:
        links.append(f"<li>checkpoints/: {len(checkpoints)} file(s), newest {esc(checkpoints[-1].name)}</li>")
    return f"<ul>{''.join(links)}</ul>"


def saved_config(paths: RunPaths) -> tuple[dict[str, Any], str | None]:
    """The run's ``.hydra/config.yaml`` as a dict ({} where there is none), and what is wrong with it, in one line,
    where it is not a YAML mapping (binary, hand-edited, an alias bomb): the report is written without it."""
    text = read_text(paths.config)
    try:
        config = safe_yaml(text, ".hydra/config.yaml") if text else {}
    except yaml.YAMLError as exc:
        return {}, f".hydra/config.yaml is not readable YAML: {str(exc).splitlines()[0]}"
    if not isinstance(config, dict | None):
        return {}, f".hydra/config.yaml holds a {type(config).__name__}, not a run's config"
    return config or {}, None


def write_run_report(run_dir: Path) -> Path:
    """Write ``report.html`` into ``run_dir`` from the files there; return its path."""
    paths = RunPaths(run_dir)
    held = RunLock(paths.root).busy()  # before the summary, as the dashboard's listing
    try:  # a summary.json that is not a run's: the report says so instead of its results
        loaded = RunSummary.load(paths)
        summary: dict[str, Any] = loaded.to_dict() if loaded is not None else {}
    except RunFileError as exc:
        summary = {"status": "unreadable", "error": str(exc)}
    config, problem = saved_config(paths)
    threshold = (config.get("env") or {}).get("reward_threshold")
    x = settings_of(config).get("x_axis", "timesteps")  # a saved value, checked
    figures = run_figures(paths, threshold, x)
    results = {name: summary[key] for key, name in RESULTS.items() if summary.get(key) not in (None, [])}
    sections = [
        ("results", "Results", pairs(results)),
        (
            "curves",
            "Learning curves",
            figure(figures["returns"], "returns") + figure(figures["eval_episodes"], "eval_episodes"),
        ),
        ("training", "Training", figure(figures["training"], "training")),
        ("speed", "Speed and memory", figure(figures["speed"], "speed")),
        ("evaluation", "Final evaluation", final_episodes(paths)),
        ("video", "Video", video(paths.video, paths.report)),
        (
            "config",
            "Config",
            pre(resolved_config(paths, config, problem)) + pre(read_text(paths.overrides), "command-line overrides"),
        ),
        ("environment", "Environment", environment(paths)),
        ("files", "Files", files(paths)),
    ]
    title = str(summary.get("run_name") or run_dir.name)
    notes = ([problem] if problem else []) + not_numbers(paths)
    for note in notes:
        log.warning("%s", note)
    warnings = "".join(f'<div class="error">{esc(note)}</div>' for note in notes)
    shown = summary or config_facts(config)  # no summary yet (killed before its first): what its config says
    path = write_page(paths.report, f"lander run: {title}", sections, header(shown, paths, held) + warnings)
    log.info("report.html written (%.1f MB)", path.stat().st_size / 2**20)
    return path


def restate_result(paths: RunPaths, key: str, value: Any) -> None:
    """Put ``value`` in the cell of ``report.html``'s results that shows ``summary.json``'s ``key`` (:data:`RESULTS`):
    the peak memory, which writing the report itself may raise, so that the report and the summary say the same.
    The file is copied a megabyte at a time with the cell replaced (never whole in memory, where a run's memory
    peaks: its Plotly script alone would be a 9 MB string, :func:`lander.reports.html.write_page`)."""
    cell = re.compile(rb"(<th>" + re.escape(esc(RESULTS[key]).encode()) + rb"</th><td>)[^<]{0,256}(</td>)")
    overlap = 1024  # longer than any match: one that spans two reads is whole in the second

    def write(tmp: Path) -> None:
        with paths.report.open("rb") as source, tmp.open("wb") as out:
            tail, found = b"", False
            for chunk in iter(lambda: source.read(2**20), b""):
                block = tail + chunk
                match = None if found else cell.search(block)
                if match is not None:
                    found = True
                    restated = match[1] + esc(number(value)).encode() + match[2]
                    block = block[: match.start()] + restated + block[match.end() :]
                keep = 0 if found else min(overlap, len(block))
                out.write(block[: len(block) - keep])
                tail = block[len(block) - keep :]
            out.write(tail)

    atomic_write(paths.report, write)


def try_run_report(run_dir: Path, full_disk_fails: bool = False) -> Path | None:
    """:func:`write_run_report`, for a run that is finishing: a failure is logged, not raised (the report is a
    convenience; the run's own record is already written).

    :param full_disk_fails: a full disk (``ENOSPC``, ``EDQUOT``) raises its ``OSError`` all the same: a run whose
        files could not all be written did not complete
    """
    try:
        return write_run_report(run_dir)
    except Exception as exc:
        if full_disk_fails and isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        log.warning("no report.html for %s: %s: %s", run_dir, type(exc).__name__, exc)
        return None
