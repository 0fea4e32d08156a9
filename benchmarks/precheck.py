"""Benchmark: how long ``python -m lander.run --multirun seed=range(0,N)`` checks its jobs before the first starts.

    python benchmarks/precheck.py [--seeds 10 200 2000] [--old-commit REV]

Runs lander's precheck (:func:`lander.config.precheck.check_command`, what ``python -m lander.run`` calls before
Hydra makes a directory) on sweeps of N seeds, in a new process each, and prints the seconds it took; with
``--old-commit``, the same at that commit (a git worktree) in the same run, for the ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIMED = """
import sys, time
from lander.config.precheck import check_command
start = time.perf_counter()
check_command(sys.argv[1:])
print(time.perf_counter() - start)
"""


def seconds(source: Path, seeds: int) -> float:
    """Wall seconds of the precheck of a sweep of ``seeds`` seeds, imports excluded (timed inside the process)."""
    env = os.environ | {"PYTHONPATH": str(source)}
    out = subprocess.run(
        [sys.executable, "-c", TIMED, "--multirun", f"seed=range(0,{seeds})"],
        cwd=tempfile.gettempdir(), env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[10, 200, 2000])
    parser.add_argument("--old-commit", help="also measure lander at this commit")
    args = parser.parse_args()
    sources = {"this checkout": REPO}
    with tempfile.TemporaryDirectory() as tmp:
        if args.old_commit:
            old = Path(tmp) / "old"
            subprocess.run(["git", "worktree", "add", "-f", str(old), args.old_commit], cwd=REPO, check=True)
            sources[args.old_commit] = old
        try:
            print("| seeds | " + " | ".join(f"{name} s" for name in sources) + " |")
            print("|---" * (len(sources) + 1) + "|")
            for n in args.seeds:
                start = time.perf_counter()
                row = [f"{seconds(src, n):.2f}" for src in sources.values()]
                print(f"| {n:,} | " + " | ".join(row) + f" |  ({time.perf_counter() - start:.0f} s)", flush=True)
        finally:
            if args.old_commit:
                subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=REPO, check=False)


if __name__ == "__main__":
    main()
