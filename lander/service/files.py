"""Reading the files of runs that may come from anywhere (copied from a colleague, downloaded): every file is
read by its real path, which must be a regular file under the service's root (no symlink out of it, no FIFO
or device), opened without following a link or blocking, and of at most a given size; anything else is
:class:`Unreadable`, with a message that names the file (relative to the root) and says why."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lander.storage.rundir import escaping_entry


class Unreadable(OSError):
    """A file the service does not read: outside the root (by its real path), not a regular file, too large, or
    not what it should hold; the message names it (relative to the root) and says why."""


def shown(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def real_file(root: Path, path: Path) -> Path:
    """The real path of ``path`` if it is a regular file under ``root``; :class:`Unreadable` otherwise."""
    try:
        real = path.resolve(strict=True)
        mode = real.stat().st_mode
    except (OSError, RuntimeError, ValueError) as exc:  # missing, a symlink loop, a NUL in the name
        raise Unreadable(f"{shown(root, path)}: no such file") from exc
    if not real.is_relative_to(root.resolve()):
        raise Unreadable(f"{shown(root, path)}: links out of the service's root")
    if not stat.S_ISREG(mode):
        raise Unreadable(f"{shown(root, path)}: not a regular file")
    return real


def read_bytes(root: Path, path: Path, limit: int, part: str = "all") -> bytes:
    """The bytes of a regular file under ``root``, opened without following a link or blocking: all of it, of at
    most ``limit`` bytes (``part="all"``), or its first or last ``limit`` bytes however large it is (``"head"``,
    ``"tail"``); :class:`Unreadable` otherwise."""
    real = real_file(root, path)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Unreadable(f"{shown(root, path)}: cannot be opened ({exc.strerror})") from exc
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if part == "all" and size > limit:
            raise Unreadable(f"{shown(root, path)}: {size:,} bytes, more than the {limit:,} the service reads")
        if part == "tail" and size > limit:
            handle.seek(size - limit)
        return handle.read(limit)


def read_text(root: Path, path: Path, limit: int) -> str:
    """:func:`read_bytes` as UTF-8 text."""
    try:
        return read_bytes(root, path, limit).decode()
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{shown(root, path)}: not UTF-8 text") from exc


def servable(root: Path, path: Path) -> bool:
    """True if ``path`` is a regular file under ``root`` by its real path."""
    try:
        real_file(root, path)
    except Unreadable:
        return False
    return True


def check_contained(root: Path, directory: Path) -> None:
    """Before a process writes into ``directory`` (a resume): no entry below it links out of it or is a FIFO
    (:func:`lander.storage.rundir.escaping_entry`); :class:`Unreadable` otherwise, naming it."""
    found = escaping_entry(directory, called="its run directory")
    if found is not None:
        raise Unreadable(f"{shown(root, found[0])}: {found[1]}")


def append_only(path: Path) -> int:
    """A file descriptor appending to ``path`` (created if missing), never through a link or to a FIFO."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path}: not a regular file")
    return fd
