"""Peak resident memory of a lander run, the training process and every process it starts (W&B's service).

    python benchmarks/peak_memory.py [lander overrides...]     # default: the default PPO run, seed 0

Samples the RSS of the process tree twice a second; prints one JSON line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    overrides = sys.argv[1:] or ["algo=ppo", "seed=0"]
    run_dir = REPO / "benchmarks" / "results" / "peak_memory"
    cmd = [sys.executable, "-m", "lander.run", *overrides, "progress_bar=false", f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root, peak_total, peak_main, start = psutil.Process(proc.pid), 0, 0, time.perf_counter()
    while proc.poll() is None:
        try:
            processes = [root, *root.children(recursive=True)]
            rss = [p.memory_info().rss for p in processes]
        except psutil.Error:
            continue
        peak_total, peak_main = max(peak_total, sum(rss)), max(peak_main, rss[0])
        time.sleep(0.5)
    print(
        json.dumps(
            {
                "overrides": overrides,
                "returncode": proc.returncode,
                "wall_seconds": round(time.perf_counter() - start, 1),
                "peak_rss_mb_all_processes": round(peak_total / 2**20, 1),
                "peak_rss_mb_training_process": round(peak_main / 2**20, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
