"""Benchmark: how long Ctrl-C takes to end a run, and a sweep, at random moments (the worst case is the figure).

    python benchmarks/ctrl_c.py [--trials 12] [--sweeps 4] [--steps 100000] [--seed 0]

Each trial starts ``python -m lander.run`` (PPO on LunarLander-v3, evaluations every 10,000 steps of 20
episodes, video and report on, W&B offline), sends SIGINT to its process group (what Ctrl-C does) at a moment drawn
uniformly over the run, and measures the seconds from the signal to the process's exit, with the phase the run
was in (the last line of its log before the signal). Each sweep trial does the same to a 2-job ``--multirun``
(lander's launcher) once both jobs train. Prints every trial, then the median and the worst.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN = ["algo=ppo", "eval.freq=10000", "progress_bar=false"]


def stop_at(cmd: list[str], delay: float, log: Path, ready: Path | None = None) -> tuple[float, int, str]:
    """Start ``cmd``, SIGINT its group ``delay`` s after start (after ``ready`` exists, if given); return the
    seconds from the signal to its exit, its exit code and the last log line before the signal."""
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    while ready is not None and not ready.exists() and proc.poll() is None:
        time.sleep(0.05)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    lines = [line for line in log.read_text().splitlines() if line.startswith("[")]
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    code = proc.wait()
    return time.monotonic() - sent, code, (lines[-1][lines[-1].find("] - ") + 4 :][:70] if lines else "start-up")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--sweeps", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    draw = random.Random(args.seed)
    env = {**os.environ, "WANDB_SILENT": "true"}
    os.environ.update(env)
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "full"
        start = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "lander.run", *RUN, f"total_timesteps={args.steps}", f"hydra.run.dir={full}"],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        length = time.monotonic() - start
        print(f"one whole run: {length:.1f} s")
        times = []
        for trial in range(args.trials):
            delay = draw.uniform(0.5, length)
            run = [sys.executable, "-m", "lander.run", *RUN, f"total_timesteps={args.steps}"]
            took, code, phase = stop_at(
                [*run, f"hydra.run.dir={Path(tmp) / f'run{trial}'}"], delay, Path(tmp) / f"run{trial}.log"
            )
            times.append(took)
            print(f"run {trial}: SIGINT at {delay:5.1f} s, exit {code} after {took:.2f} s (during: {phase})")
        sweep_times = []
        for trial in range(args.sweeps):
            sweep = Path(tmp) / f"sweep{trial}"
            cmd = [sys.executable, "-m", "lander.run", "--multirun", "seed=0,1", *RUN, f"total_timesteps={args.steps}"]
            took, code, phase = stop_at(
                [*cmd, f"hydra.sweep.dir={sweep}"],
                draw.uniform(0.5, length / 2),
                Path(tmp) / f"sweep{trial}.log",
                ready=sweep / "1" / "summary.json",
            )
            sweep_times.append(took)
            print(f"sweep {trial}: exit {code} after {took:.2f} s (during: {phase})")
    for name, found in (("run", times), ("sweep", sweep_times)):
        if found:
            print(f"{name}: median {statistics.median(found):.2f} s, worst {max(found):.2f} s over {len(found)}")


if __name__ == "__main__":
    main()
