"""Reads the records of an offline W&B run file (``run-<id>.wandb``) back, for tests.

The file is W&B's LevelDB-style log: a 7-byte header, then 32 KiB blocks of records, each
``crc32 (4) | length (2) | type (1) | data``, a protobuf ``Record`` split into FULL or FIRST/MIDDLE/LAST chunks.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2

BLOCK, HEADER = 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list[wandb_internal_pb2.Record]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    out, pos, chunks = [], HEADER, b""
    while pos + HEADER <= len(data):
        left_in_block = BLOCK - pos % BLOCK
        if left_in_block < HEADER:
            pos += left_in_block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 and length == 0:  # zero padding at the end of a block
            pos += left_in_block
            continue
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        chunks = chunk if kind in (FULL, FIRST) else chunks + chunk
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunks)
            out.append(record)
    return out


def read_run(run_dir: Path) -> dict[str, Any]:
    """The run record, config, history rows and summary of the offline run under ``run_dir/wandb``."""
    (path,) = sorted(run_dir.glob("wandb/offline-run-*/run-*.wandb"))
    return read_file(path)


def read_runs(run_dir: Path) -> list[dict[str, Any]]:
    """Every offline run under ``run_dir/wandb``, oldest first (a resumed run has one per part)."""
    return [read_file(p) for p in sorted(run_dir.glob("wandb/offline-run-*/run-*.wandb"))]


def read_file(path: Path) -> dict[str, Any]:
    """The run record, config, history rows and summary of one ``.wandb`` file."""
    run: dict[str, Any] = {"history": [], "summary": {}, "config": {}, "artifacts": [], "exit_code": None}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run |= {
                "id": record.run.run_id,
                "name": record.run.display_name,
                "group": record.run.run_group,
                "job_type": record.run.job_type,
                "tags": list(record.run.tags),
                "project": record.run.project,
            }
            run["config"] |= {i.key: json.loads(i.value_json) for i in record.run.config.update}
        elif kind == "config":
            run["config"] |= {i.key: json.loads(i.value_json) for i in record.config.update}
        elif kind == "history":
            run["history"].append(
                {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
            )
        elif kind == "summary":
            run["summary"] |= {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.summary.update}
        elif kind == "artifact":
            run["artifacts"].append(
                {
                    "name": record.artifact.name,
                    "type": record.artifact.type,
                    "files": [m.path for m in record.artifact.manifest.contents],
                }
            )
        elif kind == "exit":
            run["exit_code"] = record.exit.exit_code
    return run
