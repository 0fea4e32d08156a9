"""Benchmark: the CPU of one command at two commits, both at once, each pinned to a core of its own, the cores swapped
from one repeat to the next, so that both commits meet the same machine at the same moment (a shared 2-core VM
drifts by 10-30% between runs an hour apart: BENCHMARKS.md).

    python benchmarks/two_commits.py OLD NEW [--repeats 2] [--new-extra ARGUMENT ...] -- LANDER_RUN_ARGUMENTS...

e.g. ``python benchmarks/two_commits.py e3e5041 HEAD -- seed=0 batched_engine=true``. ``--new-extra`` adds
arguments to NEW's command alone: two arms of one experiment at one commit, met as two commits are (``HEAD HEAD
--new-extra seeds_per_process=4 -- --multirun seed=0,1,2,3 hydra.launcher.n_jobs=1``: four seeds side by side in
one process against the four one after the other in a process each). Each commit is checked out in
a worktree of its own (under a temporary folder); ``python -m lander.run ARGUMENTS`` runs there with
``progress_bar=false`` and its output folder under that folder. Prints, per repeat and commit: the core, the CPU
seconds of the command and every process it waited for (``wait4``: W&B's service, ffmpeg, a sweep's jobs), and
the final evaluations its runs wrote; then the ratio NEW / OLD of the summed CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def start(tree: Path, out: Path, core: int, arguments: list[str]) -> subprocess.Popen[bytes]:
    """``python -m lander.run ARGUMENTS`` at ``tree`` on ``core``, its runs under ``out`` (not waited for)."""
    folder = "hydra.sweep.dir" if "--multirun" in arguments or "-m" in arguments else "hydra.run.dir"
    command = ["taskset", "-c", str(core), sys.executable, "-m", "lander.run", *arguments, "progress_bar=false",
               f"{folder}={out}"]  # fmt: skip
    env = dict(os.environ) | {"PYTHONPATH": str(tree), "WANDB_MODE": "offline"}
    log = (out.parent / f"{out.name}.log").open("wb")
    return subprocess.Popen(command, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)


def finals(out: Path) -> list[float]:
    """The final evaluation means of the runs under ``out``, in the order of their folders."""
    return [round(float(json.loads(path.read_text())["mean"]), 2) for path in sorted(out.rglob("eval.json"))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--new-extra", nargs="*", default=[], help="arguments added to NEW's command alone")
    split = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
    args, arguments = parser.parse_args(sys.argv[1:split]), sys.argv[split + 1 :]
    totals = {"old": 0.0, "new": 0.0}
    with tempfile.TemporaryDirectory(prefix="two-commits-") as folder:
        base, trees = Path(folder), {}
        try:
            for name, commit in (("old", args.old), ("new", args.new)):
                trees[name] = base / name
                subprocess.run(["git", "worktree", "add", "--detach", "-q", str(trees[name]), commit], cwd=REPO,
                               check=True)  # fmt: skip
            extra = {"old": [], "new": args.new_extra}
            print(f"python -m lander.run {' '.join(arguments)}: old {args.old}, new {args.new}", *extra["new"])
            print("| repeat | commit | core | CPU s | final evaluations |\n|---|---|---|---|---|")
            for repeat in range(args.repeats):
                running = {}
                for name, core in zip(("old", "new"), (repeat % 2, 1 - repeat % 2), strict=True):
                    out = base / f"{name}-{repeat}"
                    running[name] = (start(trees[name], out, core, [*arguments, *extra[name]]), core, out)
                for name, (process, core, out) in running.items():
                    _, status, usage = os.wait4(process.pid, 0)
                    if status:
                        raise SystemExit(f"{name} failed: see {out}.log (kept in {folder} until this ends)")
                    cpu = usage.ru_utime + usage.ru_stime
                    totals[name] += cpu
                    print(f"| {repeat} | {name} | {core} | {cpu:.1f} | {finals(out)} |", flush=True)
            print(f"CPU new / old: {totals['new'] / totals['old']:.3f}")
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)


if __name__ == "__main__":
    main()
