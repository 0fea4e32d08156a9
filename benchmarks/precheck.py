"""Benchmark: how long ``python -m lander.run --multirun seed=range(0,N)`` checks its jobs before the first starts.

    python benchmarks/precheck.py [--seeds 10 200 2000] [--old-commit REV] [--to-launch]

Runs lander's precheck (:func:`lander.config.precheck.check_command`, what ``python -m lander.run`` calls before
Hydra makes a directory) on sweeps of N seeds, in a new process each, and prints the seconds it took; with
``--old-commit``, the same at that commit (a git worktree) in the same run, for the ratio. With ``--to-launch``,
the whole command instead: seconds from its start (imports included) until Hydra's launcher says "launching"
(the sweep is then stopped with SIGINT; its directory is a temporary one).
"""

from __future__ import annotations

import argparse
import os
import signal
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


def to_launch(source: Path, seeds: int) -> float:
    """Wall seconds from starting the whole sweep command to its "launching N job(s)" line."""
    env = os.environ | {"PYTHONPATH": str(source), "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory() as sweep:
        command = [sys.executable, "-m", "lander.run", "--multirun", f"seed=range(0,{seeds})", "logger=none",
                   f"hydra.sweep.dir={sweep}"]  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.Popen(command, cwd=tempfile.gettempdir(), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:  # Hydra logs to stdout
            if "launching" in line:
                elapsed = time.perf_counter() - start
                break
        else:
            raise RuntimeError(f"the sweep of {seeds} seeds ended before it launched (exit {proc.wait()})")
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=120)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[10, 200, 2000])
    parser.add_argument("--old-commit", help="also measure lander at this commit")
    parser.add_argument("--to-launch", action="store_true", help="time the whole command until its jobs launch")
    args = parser.parse_args()
    measure = to_launch if args.to_launch else seconds
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
                row = [f"{measure(src, n):.2f}" for src in sources.values()]
                print(f"| {n:,} | " + " | ".join(row) + f" |  ({time.perf_counter() - start:.0f} s)", flush=True)
        finally:
            if args.old_commit:
                subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=REPO, check=False)


if __name__ == "__main__":
    main()
