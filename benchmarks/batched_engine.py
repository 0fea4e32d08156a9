"""Benchmark: one PPO seed on the batched engine (``batched_engine=true``) against SB3's own PPO (the default), on
the default run (LunarLander-v3, 1M steps, every lander default: W&B offline, evaluations, checkpoints, video,
report). For each seed the two runs go at the same time, each pinned to a core of its own (the cores swapped from
one seed to the next), so that both arms meet the same machine at the same moment.

    python benchmarks/batched_engine.py [--seeds 0 1] [--steps 1000000] [--out benchmark-batched-engine]

Prints, per seed and arm: the CPU seconds of the run's process and what it waited for (``wait4``: W&B's service
included), its training CPU (``train_cpu_seconds`` of ``summary.json``) and its final evaluation; then the ratio
batched / SB3 of the sums.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARMS = {"sb3": "batched_engine=false", "batched": "batched_engine=true"}


def run_pair(seed: int, steps: int, out: Path, cores: tuple[int, int]) -> dict[str, tuple[float, float, float]]:
    """The two arms of ``seed`` at once, arm i on core ``cores[i]``: arm -> (CPU s, training CPU s, final eval)."""
    running = {}
    for (arm, switch), core in zip(ARMS.items(), cores, strict=True):
        cmd = ["taskset", "-c", str(core), sys.executable, "-m", "lander.run", f"seed={seed}", switch,
               f"total_timesteps={steps}", f"hydra.run.dir={out / f'{arm}-{seed}'}"]  # fmt: skip
        log = out / f"{arm}-{seed}.stderr.log"  # a file, not a pipe that fills while the run waits on it
        running[arm] = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    found = {}
    for arm, process in running.items():
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{arm} seed {seed} failed: {(out / f'{arm}-{seed}.stderr.log').read_text()[-2000:]}")
        summary = json.loads((out / f"{arm}-{seed}" / "summary.json").read_text())
        found[arm] = (usage.ru_utime + usage.ru_stime, summary["train_cpu_seconds"], summary["final_eval_mean"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--out", default=str(REPO / "benchmark-batched-engine"))
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cores = sorted(os.sched_getaffinity(0))[:2]
    totals = {arm: [0.0, 0.0] for arm in ARMS}
    print("| seed | arm | core | CPU s | training CPU s | final evaluation |\n|---|---|---|---|---|---|")
    for i, seed in enumerate(args.seeds):
        pair = (cores[i % 2], cores[(i + 1) % 2])
        for (arm, (cpu, train, final)), core in zip(run_pair(seed, args.steps, out, pair).items(), pair, strict=True):
            totals[arm][0] += cpu
            totals[arm][1] += train
            print(f"| {seed} | {arm} | {core} | {cpu:.1f} | {train:.1f} | {final:.2f} |", flush=True)
    (sb3_cpu, sb3_train), (batched_cpu, batched_train) = totals["sb3"], totals["batched"]
    print(f"\nbatched / SB3: CPU {batched_cpu / sb3_cpu:.3f}, training CPU {batched_train / sb3_train:.3f}")


if __name__ == "__main__":
    main()
