"""What every run directory must look like after any fault: complete files, true status, no step twice."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from pathlib import Path

COLUMNS = {
    "train_episodes.csv": ["timesteps", "episode", "return", "length", "wall_time"],
    "eval.csv": [
        "timesteps",
        "mean",
        "std",
        "sem",
        "n",
        "median",
        "min",
        "max",
        "success_rate",
        "mean_length",
        "wall_time",
        "eval_seconds",
    ],
    "eval_episodes.csv": ["timesteps", "seed", "return", "length"],
    "resources.csv": [
        "timesteps",
        "steps_per_second",
        "episodes_per_minute",
        "rss_mb",
        "peak_rss_mb",
        "cpu_percent",
        "wall_time",
    ],
}
TEMPORARY = re.compile(r"\..+\.\d+\.tmp(\.\w+)?")


def rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV file, a last row cut short by a kill left out (resume drops it too)."""
    text = path.read_text()
    reader = csv.DictReader(io.StringIO(text[: text.rfind("\n") + 1], newline=""))
    return list(reader.fieldnames or []), list(reader)


def assert_consistent(run_dir: Path, status: str | None = None, budget: int | None = None) -> dict:
    """Check the whole run directory; return its summary.

    JSON files parse; zips open; CSV files have their header, complete rows (a killed run's last row may be
    cut short: resume drops it), no timestep recorded twice
    (an evaluation's episodes once per seed), episodes numbered 1..n; ``status`` and, for a completed run,
    the budget reached exactly, with a final evaluation at the budget recorded once.
    """
    summary = json.loads((run_dir / "summary.json").read_text())
    for path in [*run_dir.glob("*.json"), *run_dir.glob("environment/*.json")]:
        json.loads(path.read_text())
    for path in [*run_dir.glob("*.zip"), *run_dir.glob("checkpoints/*.zip")]:
        assert zipfile.ZipFile(path).testzip() is None, path
    metrics = run_dir / "metrics"
    for name, columns in COLUMNS.items():
        if (metrics / name).is_file():
            text = (metrics / name).read_text()
            if summary["status"] != "running":  # a kill -9 may leave a row cut short; nothing else may
                assert text.endswith("\n"), f"{name}: last row cut short or no header"
            fields, found = rows(metrics / name)
            assert fields == columns, f"{name}: header {fields}"
            assert all(None not in r.values() for r in found), f"{name}: incomplete row"
    if (metrics / "eval.csv").is_file():
        evals = [int(r["timesteps"]) for r in rows(metrics / "eval.csv")[1]]
        assert evals == sorted(set(evals)), f"eval.csv timesteps {evals}"
        episodes = [(r["timesteps"], r["seed"]) for r in rows(metrics / "eval_episodes.csv")[1]]
        assert len(episodes) == len(set(episodes)), "eval_episodes.csv: an episode twice"
        if summary["status"] != "running":  # an evaluation is recorded by its row, written after its episodes
            assert {int(t) for t, _ in episodes} <= set(evals), "eval_episodes.csv: episodes of an unrecorded eval"
    if (metrics / "resources.csv").is_file():
        steps = [int(r["timesteps"]) for r in rows(metrics / "resources.csv")[1]]
        assert steps == sorted(set(steps)), f"resources.csv timesteps {steps}"
    if (metrics / "train_episodes.csv").is_file():
        numbers = [int(r["episode"]) for r in rows(metrics / "train_episodes.csv")[1]]
        assert numbers == list(range(1, len(numbers) + 1)), "train_episodes.csv: episodes renumbered or repeated"
    if (metrics / "sb3_progress.csv").is_file() and (metrics / "sb3_progress.csv").stat().st_size:
        steps = [r["time/total_timesteps"] for r in rows(metrics / "sb3_progress.csv")[1]]
        assert len(steps) == len(set(steps)), "sb3_progress.csv: a timestep twice"
    if status is not None:
        assert summary["status"] == status, summary
    if summary["status"] == "completed" and budget is not None:
        assert summary["timesteps"] == budget
        assert json.loads((run_dir / "eval.json").read_text())["timesteps"] == budget
        assert evals[-1] == budget and evals.count(budget) == 1
    return summary


def temporaries(run_dir: Path) -> list[Path]:
    """Temporary files of atomic writes left under ``run_dir``."""
    return [p for p in run_dir.rglob(".*") if TEMPORARY.fullmatch(p.name)]
