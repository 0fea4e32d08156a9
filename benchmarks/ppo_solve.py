"""Benchmark: default PPO on LunarLander-v3, time to "solved" and training throughput against plain SB3.

Part 1: ``python -m lander.run algo=ppo seed=S`` with the defaults for each seed: timesteps and wall time
until the evaluation mean first reaches 200, and the final 20-episode evaluation.
Part 2: the plain SB3 script (``plain_sb3_ppo.py``: rl-zoo settings, SB3's EvalCallback with 20 sequential
episodes every 50k steps, torch's default threads) on the same seeds, stopped once solved. Each seed's
lander run and plain run are started together, one per core, so both see the same machine load.
Part 3: training throughput, evaluation off: lander (W&B offline, its defaults) and the plain script with
the same torch threads, run at the same time on the same core ``--reps`` times, after ``--controls`` pairs
of the plain script against itself; steps per CPU second of each, the median of the paired ratios.

    python benchmarks/ppo_solve.py --seeds 0 1 2 --plain-seeds 0 1 2 --reps 5 --controls 2
    python benchmarks/ppo_solve.py --collect --reps 0   # the table again, from the runs already there
Results: benchmarks/results/ppo_solve.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil

HERE = Path(__file__).resolve().parent
REPO, OUT = HERE.parent, HERE / "results"


def lander_cmd(run_dir: Path, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "lander.run",
        "algo=ppo",
        "progress_bar=false",
        *overrides,
        f"hydra.run.dir={run_dir}",
    ]


def plain_cmd(*args: str) -> list[str]:
    return [sys.executable, str(HERE / "plain_sb3_ppo.py"), *args]


def solve_side_by_side(seed: int, with_plain: bool) -> tuple[dict, dict | None]:
    """The default lander run and (optionally) the plain script on the same seed, started together."""
    run_dir = OUT / f"lander_ppo_seed-{seed}"
    procs = [
        subprocess.Popen(
            lander_cmd(run_dir, f"seed={seed}"), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    ]
    if with_plain:
        procs.append(
            subprocess.Popen(
                plain_cmd("--seed", str(seed), "--stop-when-solved"),
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        )
    plain_out = procs[1].communicate()[0] if with_plain else None
    if procs[0].wait() != 0:
        raise RuntimeError(f"lander seed {seed} failed; see {run_dir}/run.log")
    plain_result = json.loads(plain_out.strip().splitlines()[-1]) if plain_out else None
    if plain_result:
        (OUT / f"plain_seed-{seed}.json").write_text(json.dumps(plain_result))
    return solve_time(seed, run_dir), plain_result


def solve_time(seed: int, run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    evals = pd.read_csv(run_dir / "metrics" / "eval.csv")
    solved = evals[evals["mean"] >= 200].head(1)
    return {
        "seed": seed,
        "solved_timesteps": int(solved["timesteps"].iloc[0]) if len(solved) else None,
        "solved_wall_seconds": float(solved["wall_time"].iloc[0]) if len(solved) else None,
        "final_eval_mean": summary["final_eval_mean"],
        "final_eval_sem": summary["final_eval_sem"],
        "wall_seconds": summary["wall_seconds"],
        "eval_seconds": summary["eval_seconds"],
        "timesteps": summary["timesteps"],
    }


def on_core(cmd: list[str], core: int, stdout: int) -> subprocess.Popen:
    """Start ``cmd`` pinned to one CPU core; its child processes (W&B's service) inherit the pin."""
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )


def service_cpu_seconds(proc: subprocess.Popen) -> float:
    """Wait for ``proc``; the CPU seconds its child processes (W&B's service) used, sampled twice a second."""
    last: dict[int, float] = {}
    parent = psutil.Process(proc.pid)
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            for child in parent.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    times = child.cpu_times()
                    last[child.pid] = times.user + times.system
        time.sleep(0.5)
    return sum(last.values())


def pair_on_one_core(
    first: list[str], second: list[str], first_stdout: int = subprocess.PIPE
) -> tuple[str, str, float]:
    """Run two commands at the same time on core 0; their stdout, and the first one's service CPU seconds."""
    procs = on_core(first, 0, first_stdout), on_core(second, 0, subprocess.PIPE)
    service = service_cpu_seconds(procs[0])
    outs = [proc.communicate()[0] or "" for proc in procs]
    for cmd, proc in zip((first, second), procs, strict=False):
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:3])} ... failed with exit code {proc.returncode}")
    return outs[0], outs[1], service


def steps_per_cpu_second(plain_stdout: str) -> float:
    """The plain script's training steps per CPU second, from its JSON line."""
    result = json.loads(plain_stdout.strip().splitlines()[-1])
    return result["timesteps"] / result["cpu_seconds"]


def throughput(reps: int, controls: int, steps: int) -> dict:
    """Training steps per CPU second, lander and the plain script running at the same time on the same core.

    On a VM whose speed drifts by half within minutes (CPU stolen by neighbours), runs one after the
    other compare different machines. Two processes sharing one core for the whole measurement share
    the same machine: the time-slicing interleaves them every few milliseconds, so steal, cache and
    frequency hit both alike, and each one's CPU time per step is its own cost. ``controls`` pairs of
    the plain script against itself show what this method's noise is. W&B's service process runs on
    the same core; its CPU seconds (start-up and finish included) are reported beside, and the "with
    service" ratio charges all of them to lander's training.
    """
    plain_args = ["--timesteps", str(steps), "--eval-freq", "0", "--threads", "1"]
    out: dict = {"steps": steps, "controls": [], "runs": []}
    for rep in range(controls):
        a, b, _ = pair_on_one_core(plain_cmd(*plain_args), plain_cmd(*plain_args))
        out["controls"].append(round(steps_per_cpu_second(a) / steps_per_cpu_second(b), 4))
        print("control", rep, out["controls"][-1], flush=True)
    for rep in range(reps):
        run_dir = OUT / f"throughput_{rep}"
        overrides = [f"total_timesteps={steps}", "eval.freq=0", "final_eval=false", "video.enabled=false"]
        _, plain_out, service = pair_on_one_core(
            lander_cmd(run_dir, *overrides), plain_cmd(*plain_args), first_stdout=subprocess.DEVNULL
        )
        summary = json.loads((run_dir / "summary.json").read_text())
        row = {
            "lander_cpu": round(summary["timesteps"] / summary["train_cpu_seconds"], 1),
            "plain_cpu": round(steps_per_cpu_second(plain_out), 1),
            "service_cpu_seconds": round(service, 2),
            "lander_with_service": round(summary["timesteps"] / (summary["train_cpu_seconds"] + service), 1),
        }
        row |= {
            "ratio": round(row["lander_cpu"] / row["plain_cpu"], 4),
            "ratio_with_service": round(row["lander_with_service"] / row["plain_cpu"], 4),
        }
        out["runs"].append(row)
        print(rep, row, flush=True)
    for key in ("ratio", "ratio_with_service"):
        out[f"median_{key}"] = statistics.median(r[key] for r in out["runs"]) if out["runs"] else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--plain-seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--reps", type=int, default=5, help="throughput pairs lander / plain")
    parser.add_argument("--controls", type=int, default=2, help="throughput pairs plain / plain (the method's noise)")
    parser.add_argument("--throughput-steps", type=int, default=16384 * 4)
    parser.add_argument(
        "--collect", action="store_true", help="run no solve-time runs; collect those already in benchmarks/results"
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict = {"lander": [], "plain": []}
    if args.collect:
        previous = json.loads((OUT / "ppo_solve.json").read_text()) if (OUT / "ppo_solve.json").is_file() else {}
        if previous.get("throughput") and not args.reps:  # keep the last throughput measurement
            results["throughput"] = previous["throughput"]
        for run_dir in sorted(OUT.glob("lander_ppo_seed-*")):
            results["lander"].append(solve_time(int(run_dir.name.split("-")[-1]), run_dir))
        results["plain"] = [json.loads(p.read_text()) for p in sorted(OUT.glob("plain_seed-*.json"))]
        args.seeds = []
    for seed in args.seeds:
        lander_result, plain_result = solve_side_by_side(seed, seed in args.plain_seeds)
        results["lander"].append(lander_result)
        print("lander", lander_result, flush=True)
        if plain_result:
            results["plain"].append(plain_result)
            print("plain", plain_result, flush=True)
    if args.reps:
        results["throughput"] = throughput(args.reps, args.controls, args.throughput_steps)
        print("throughput", results["throughput"], flush=True)
    (OUT / "ppo_solve.json").write_text(json.dumps(results, indent=2))

    print("\n| run | seed | steps to eval mean 200 | wall s to 200 | final eval (mean ± s.e.) |")
    print("|---|---|---|---|---|")
    for r in results["lander"]:
        print(
            f"| lander | {r['seed']} | {r['solved_timesteps']} | {r['solved_wall_seconds']} | "
            f"{r['final_eval_mean']:.1f} ± {r['final_eval_sem']:.1f} |"
        )
    for r in results["plain"]:
        print(
            f"| plain SB3 | {r['seed']} | {r['solved_timesteps']} | {r['solved_wall_seconds']} | "
            f"(stopped when solved; last eval {r['last_eval_mean']:.1f}) |"
        )
    if results.get("throughput"):
        print("\n| pair | lander steps/CPU-s | plain steps/CPU-s | ratio | W&B service CPU s | ratio with service |")
        print("|---|---|---|---|---|---|")
        for i, r in enumerate(results["throughput"]["runs"], 1):
            print(
                f"| {i} | {r['lander_cpu']:,.0f} | {r['plain_cpu']:,.0f} | {r['ratio']:.3f} | "
                f"{r['service_cpu_seconds']:.1f} | {r['ratio_with_service']:.3f} |"
            )
        t = results["throughput"]
        print(f"| **median** | | | **{t['median_ratio']:.3f}** | | **{t['median_ratio_with_service']:.3f}** |")
        print(f"controls (plain / plain): {t['controls']}")


if __name__ == "__main__":
    main()
