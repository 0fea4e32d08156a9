"""The environment snapshot a run leaves behind: packages, versions, platform, git state, command line."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from lander.faults import fault
from lander.storage.rundir import write_json, write_text

SOURCE_DIR = Path(__file__).resolve().parent.parent
PACKAGES = (
    "lander",
    "stable-baselines3",
    "gymnasium",
    "torch",
    "numpy",
    "hydra-core",
    "omegaconf",
    "wandb",
    "box2d",
    "matplotlib",
    "imageio",
    "imageio-ffmpeg",
)


def _git(directory: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(directory: Path = SOURCE_DIR) -> dict[str, Any]:
    """Commit and dirty flag of the git checkout holding ``directory`` (None outside one; lander's own
    source by default, None when lander is installed from a wheel)."""
    commit = _git(directory, "rev-parse", "HEAD")
    status = _git(directory, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


NOT_FROZEN = {"pip", "setuptools", "wheel", "distribute"}  # what `pip freeze` leaves out by default


def name_and_version(dist: metadata.Distribution) -> tuple[str | None, str | None]:
    """A distribution's ``Name`` and ``Version`` from the header of its ``METADATA`` (``PKG-INFO``): what
    ``dist.metadata`` gives, without parsing the whole file as an e-mail twice (a third of a run's snapshot time)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version") and key not in found:
            found[key] = value.strip()
    return found.get("Name"), found.get("Version")


def freeze() -> str:
    """The installed distributions as ``pip freeze`` lists them (``name==version``, ``-e <dir>`` for an editable
    install, ``name @ <url>`` for one installed from a URL, with the archive's hash and the subdirectory as pip writes
    them: ``#sha256=...&subdirectory=...``), read from their metadata in this process: the same lines as ``python -m
    pip freeze`` without the ~0.9 s its own start-up costs every run."""
    lines: dict[str, str] = {}
    for dist in metadata.distributions():
        name, version = name_and_version(dist)
        if not name or name.lower() in lines or name.lower() in NOT_FROZEN:
            continue  # the first of a name on sys.path is the one imported, as pip says
        lines[name.lower()] = f"{name}=={version}"
        try:
            direct = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            continue
        url = str(direct.get("url", ""))
        fragments = []  # pip's: an archive's hash (its legacy "hash" key only), then the subdirectory
        if archive_hash := direct.get("archive_info", {}).get("hash"):
            fragments.append(str(archive_hash))
        if subdirectory := direct.get("subdirectory"):
            fragments.append(f"subdirectory={subdirectory}")
        suffix = "#" + "&".join(fragments) if fragments else ""
        if direct.get("dir_info", {}).get("editable"):
            lines[name.lower()] = f"# Editable install ({name}=={version})\n-e {url.removeprefix('file://')}"
        elif "vcs_info" in direct:
            vcs = direct["vcs_info"]
            lines[name.lower()] = f"{name} @ {vcs.get('vcs', 'git')}+{url}@{vcs.get('commit_id', '')}{suffix}"
        elif url:
            lines[name.lower()] = f"{name} @ {url}{suffix}"
    return "".join(line + "\n" for _, line in sorted(lines.items()))


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what ``platform`` says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def write_snapshot(run_dir: Path) -> Path:
    """Write ``environment/pip_freeze.txt`` and ``environment/versions.json`` under ``run_dir``."""
    out_dir = run_dir / "environment"
    out_dir.mkdir(parents=True, exist_ok=True)
    fault("start:snapshot")
    write_text(out_dir / "pip_freeze.txt", freeze())

    info = {
        "python": sys.version,
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        # torch's CPU kernels pick their code path by instruction set, and the last bits of float results
        # follow: the same seed gives identical runs on one machine, not across CPUs (BENCHMARKS.md)
        "cpu_model": cpu_model(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "cuda_available": torch.cuda.is_available(),
        "packages": versions(),
        "git": git_state(),
        "cwd": str(Path.cwd()),  # where the run was started: the user's project, with its own configs and code
        "cwd_git": git_state(Path.cwd()),
        "command": [sys.executable, *sys.argv],
    }
    write_json(out_dir / "versions.json", info)
    return out_dir
