"""Replay buffers on disk as arrays only: an ``.npz`` of the filled part of each array plus JSON of the
positions, loaded with ``allow_pickle=False`` into the model's own buffer (shapes and dtypes checked).

SB3's ``save_replay_buffer``/``load_replay_buffer`` pickle the whole buffer object, so a planted file
would run code on load; this format cannot.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.buffers import ReplayBuffer

from lander.errors import RunFileError
from lander.storage.rundir import check_regular

ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def _arrays(buffer: ReplayBuffer) -> dict[str, np.ndarray]:
    """The buffer's arrays by name (``observations/<key>`` for a dict observation space)."""
    out: dict[str, np.ndarray] = {}
    for name in ARRAYS:
        value: Any = getattr(buffer, name, None)
        if isinstance(value, dict):
            out |= {f"{name}/{key}": array for key, array in value.items()}
        elif isinstance(value, np.ndarray):
            out[name] = value
    return out


def save_buffer(buffer: ReplayBuffer, path: Path) -> None:
    """Write the filled part of ``buffer`` and its position to ``path`` (an ``.npz``)."""
    size = buffer.buffer_size if buffer.full else buffer.pos
    meta = {"pos": int(buffer.pos), "full": bool(buffer.full), "size": int(size), "class": type(buffer).__name__}
    arrays = {name: array[:size] for name, array in _arrays(buffer).items()}
    with path.open("wb") as handle:
        np.savez(handle, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)  # type: ignore[arg-type]


def load_buffer(buffer: ReplayBuffer, path: Path) -> None:
    """Fill ``buffer`` (a fresh one of the run's model) from ``path``; nothing is unpickled.

    :raises RunFileError: a file that is not such an archive, or whose arrays do not fit the buffer
    """
    expected = _arrays(buffer)
    check_regular(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
            size, pos, full = int(meta["size"]), int(meta["pos"]), bool(meta["full"])
            if not 0 <= pos <= buffer.buffer_size or size != (buffer.buffer_size if full else pos):
                raise ValueError(f"positions {meta} do not fit a buffer of {buffer.buffer_size}")
            if set(archive.files) != {"meta", *expected}:
                raise ValueError(f"arrays {sorted(archive.files)}, expected {sorted(['meta', *expected])}")
            for name, target in expected.items():
                _check_size(archive.zip, name, target[:size].nbytes)
                array = archive[name]
                if array.shape != target[:size].shape or array.dtype != target.dtype:
                    raise ValueError(
                        f"{name} is {array.dtype}{array.shape}, expected {target.dtype}{target[:size].shape}"
                    )
                target[:size] = array
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise RunFileError(f"{path} is not a replay buffer of this run ({type(exc).__name__}: {exc})") from exc
    buffer.pos, buffer.full = pos % buffer.buffer_size, full


def _check_size(archive: zipfile.ZipFile, name: str, nbytes: int) -> None:
    """Refuse an entry that would inflate to more than its array needs (a zip bomb)."""
    size = archive.getinfo(f"{name}.npy").file_size
    if size > nbytes + 4096:
        raise ValueError(f"{name} would inflate to {size} bytes, more than its {nbytes}")
