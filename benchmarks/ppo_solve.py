"""Benchmark: default PPO on LunarLander-v3, time to "solved" and training throughput against plain SB3.

Part 1: ``python -m lander.run algo=ppo seed=S`` with the defaults for each seed: timesteps and wall time
until the evaluation mean first reaches 200, and the final 20-episode evaluation.
Part 2: the plain SB3 script (``plain_sb3_ppo.py``: rl-zoo settings, SB3's EvalCallback with 20 sequential
episodes every 50k steps, torch's default threads) on the same seeds, stopped once solved. Each seed's
lander run and plain run are started together, one per core, so both see the same machine load.
Part 3: training throughput, evaluation off, lander vs the plain script with the same torch threads,
alternated ``--reps`` times in this one run; the ratio of medians.

    python benchmarks/ppo_solve.py --seeds 0 1 2 --plain-seeds 0 1 2 --reps 3
    python benchmarks/ppo_solve.py --collect --reps 0   # the table again, from the runs already there
Results: benchmarks/results/ppo_solve.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
from functools import partial
import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
REPO, OUT = HERE.parent, HERE / "results"


def lander_cmd(run_dir: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "lander.run", "algo=ppo", "progress_bar=false", *overrides, f"hydra.run.dir={run_dir}"]


def plain_cmd(*args: str) -> list[str]:
    return [sys.executable, str(HERE / "plain_sb3_ppo.py"), *args]


def lander(run_dir: Path, *overrides: str) -> dict:
    subprocess.run(lander_cmd(run_dir, *overrides), cwd=REPO, check=True, capture_output=True)
    return json.loads((run_dir / "summary.json").read_text())


def plain(*args: str) -> dict:
    out = subprocess.run(plain_cmd(*args), cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def solve_side_by_side(seed: int, with_plain: bool) -> tuple[dict, dict | None]:
    """The default lander run and (optionally) the plain script on the same seed, started together."""
    run_dir = OUT / f"lander_ppo_seed-{seed}"
    procs = [subprocess.Popen(lander_cmd(run_dir, f"seed={seed}"), cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    if with_plain:
        procs.append(subprocess.Popen(plain_cmd("--seed", str(seed), "--stop-when-solved"), cwd=REPO,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
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
    return {"seed": seed, "solved_timesteps": int(solved["timesteps"].iloc[0]) if len(solved) else None,
            "solved_wall_seconds": float(solved["wall_time"].iloc[0]) if len(solved) else None,
            "final_eval_mean": summary["final_eval_mean"], "final_eval_sem": summary["final_eval_sem"],
            "wall_seconds": summary["wall_seconds"], "eval_seconds": summary["eval_seconds"],
            "timesteps": summary["timesteps"]}


def throughput(reps: int, steps: int) -> dict:
    """Training steps per wall second and per CPU second of the training process, alternating the two programs.

    The order alternates between repetitions, so neither program always runs on a machine the other
    has just warmed or cooled. CPU time is the steadier measure on a VM whose CPU is stolen by neighbours (steal is not counted);
    it leaves out W&B's service process, whose cost shows in the wall-clock figure.
    """
    runs: dict[str, list[float]] = {"lander": [], "plain": [], "lander_cpu": [], "plain_cpu": []}
    for rep in range(reps):
        run_lander = partial(lander, OUT / f"throughput_{rep}", f"total_timesteps={steps}", "eval.freq=0",
                             "final_eval=false", "video.enabled=false", "checkpoint_freq=0")
        run_plain = partial(plain, "--timesteps", str(steps), "--eval-freq", "0", "--threads", "1")
        if rep % 2 == 0:  # alternate which program goes first: A B, B A, ...
            summary, result = run_lander(), run_plain()
        else:
            result, summary = run_plain(), run_lander()
        runs["lander"].append(summary["train_steps_per_second"])
        runs["lander_cpu"].append(round(summary["timesteps"] / summary["train_cpu_seconds"], 1))
        runs["plain"].append(result["steps_per_second"])
        runs["plain_cpu"].append(round(result["timesteps"] / result["cpu_seconds"], 1))
        print(rep, {k: v[-1] for k, v in runs.items()}, flush=True)
    medians = {k: statistics.median(v) for k, v in runs.items()}
    return {"steps": steps, "runs": runs, "medians": medians,
            "ratio": round(medians["lander"] / medians["plain"], 3),
            "cpu_ratio": round(medians["lander_cpu"] / medians["plain_cpu"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--plain-seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--throughput-steps", type=int, default=16384 * 4)
    parser.add_argument("--collect", action="store_true",
                        help="run no solve-time runs; collect those already in benchmarks/results")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict = {"lander": [], "plain": []}
    if args.collect:
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
        results["throughput"] = throughput(args.reps, args.throughput_steps)
        print("throughput", results["throughput"], flush=True)
    (OUT / "ppo_solve.json").write_text(json.dumps(results, indent=2))

    print("\n| run | seed | steps to eval mean 200 | wall s to 200 | final eval (mean ± s.e.) |")
    print("|---|---|---|---|---|")
    for r in results["lander"]:
        print(f"| lander | {r['seed']} | {r['solved_timesteps']} | {r['solved_wall_seconds']} | "
              f"{r['final_eval_mean']:.1f} ± {r['final_eval_sem']:.1f} |")
    for r in results["plain"]:
        print(f"| plain SB3 | {r['seed']} | {r['solved_timesteps']} | {r['solved_wall_seconds']} | "
              f"(stopped when solved; last eval {r['last_eval_mean']:.1f}) |")


if __name__ == "__main__":
    main()
