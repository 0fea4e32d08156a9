"""Benchmark: the experiment people run first, PPO against A2C on LunarLander-v3 over 5 seeds each, to its
comparison on this machine's cores, one seed per process (today's way) against seeds side by side.

    python benchmarks/two_algorithms.py [--seeds 5] [--per-process 5 3] [--out benchmark-two-algorithms] [OVERRIDE ...]

Arms, one after the other (nothing else running), each ``python -m lander.run --multirun algo=ppo,a2c
seed=0,...,N-1`` with every default (each algorithm's own budget: PPO 1M steps, A2C 200k; W&B offline,
evaluations, checkpoints, video, report; lander's ``parallel`` launcher, one process per core):

1. ``one per process``: as is;
2. ``side by side K``: with ``seeds_per_process=K``, for each K of ``--per-process``.

Prints, per arm: wall seconds to the end (the comparison written), CPU seconds of every process of the arm
(``RUSAGE_CHILDREN``) per seed, the largest run's ``peak_rss_mb`` and that per seed of its process (a process
of K seeds holds K), and each arm's wall time and CPU over the first arm's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from side_by_side import timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--per-process", type=int, nargs="*", default=[5, 3])
    parser.add_argument("--out", default=str(REPO / "benchmark-two-algorithms"))
    parser.add_argument("overrides", nargs="*", help="more overrides for every arm (a quick check: total_timesteps=N)")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    seeds = ",".join(str(s) for s in range(args.seeds))
    arms = {"one per process": (out / "one", 1)}
    arms |= {f"side by side, {k} a process": (out / f"side{k}", k) for k in args.per_process}
    rows = []
    for name, (sweep, k) in arms.items():
        extra = [f"seeds_per_process={k}"] if k > 1 else []
        command = [sys.executable, "-m", "lander.run", "--multirun", "algo=ppo,a2c", f"seed={seeds}",
                   f"hydra.sweep.dir={sweep}", *extra, *args.overrides]  # fmt: skip
        wall, cpu, _ = timed([command], 1, REPO)
        if not (sweep / "comparison").is_dir():
            raise SystemExit(f"{name}: no comparison in {sweep}")
        peak = max(json.loads(p.read_text())["peak_rss_mb"] for p in sweep.glob("*/summary.json"))
        rows.append((name, wall, cpu / (2 * args.seeds), peak, peak / min(k, args.seeds)))
        print(f"{name}: {wall:.0f} s wall, {rows[-1][2]:.1f} CPU s per seed, peak RSS {peak:.0f} MB", flush=True)
    print("\n| arm | wall s to the comparison | CPU s per seed | peak RSS MB (a process) | per seed | wall / first | "
          "CPU / first |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for name, wall, cpu, peak, per_seed in rows:
        print(f"| {name} | {wall:.0f} | {cpu:.1f} | {peak:.0f} | {per_seed:.0f} | {wall / rows[0][1]:.3f} | "
              f"{cpu / rows[0][2]:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
