"""Metric CSV files that survive a kill: rows appended and flushed one by one, and repaired on resume
(header restored, a half-written last row dropped, rows after the checkpoint cut)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from lander.faults import fault
from lander.storage.rundir import atomic_write


class CsvLog:
    """Appends rows to a CSV file, flushing each one, so a crash loses nothing already recorded.

    An empty file (a run killed right after creating it) gets its header, like a new one.
    """

    def __init__(self, path: Path, columns: Sequence[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists() or path.stat().st_size == 0
        self.path, self._file = path, path.open("a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=columns)
        if new:
            self._writer.writeheader()
            self._file.flush()

    def write(self, row: dict[str, Any]) -> None:
        fault(f"row:{self.path.name}", partial(self._write_half, row))
        self._writer.writerow(row)
        self._file.flush()

    def _write_half(self, row: dict[str, Any]) -> None:
        """Fault injection: the first half of ``row``, as a kill in the middle of a write leaves it."""
        buffer = io.StringIO()
        csv.DictWriter(buffer, fieldnames=self._writer.fieldnames).writerow(row)
        self._file.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The complete rows of a CSV file (none if there is no file): what a resumed run recorded before."""
    return read_complete(path)[1]


def read_complete(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the complete rows of a CSV file: a last line without its newline (a write cut short)
    and rows with missing fields are left out."""
    if not path.is_file():
        return [], []
    return complete_rows(path.read_text(errors="replace"))


def complete_rows(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """:func:`read_complete` of CSV text already read (the service reads files its own, bounded way)."""
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = list(reader.fieldnames or [])
    rows = [row for row in reader if None not in row.values() and None not in row]
    return fields, rows


def number(value: str | None) -> float | None:
    """A CSV cell as a finite number; None for an empty cell, text or a non-finite value."""
    try:
        number = float(value) if value not in (None, "") else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


def cut_csv(path: Path, column: str, timesteps: int, columns: Sequence[str] = ()) -> None:
    """Keep the complete rows of ``path`` whose ``column`` is at most ``timesteps``, under a header.

    :param columns: the header to write if the file has none (empty, or killed before its header)
    """
    if not path.is_file():
        return
    fields, rows = read_complete(path)
    fields = fields or list(columns)
    kept = [r for r in rows if (step := number(r.get(column))) is not None and step <= timesteps]
    if fields:
        atomic_write(path, partial(write_csv, fields=fields, rows=kept))


def write_csv(path: Path, fields: Sequence[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
