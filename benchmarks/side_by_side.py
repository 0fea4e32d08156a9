"""Benchmark: seeds side by side (``seeds_per_process``) against one seed per process, and rl-zoo3, on the default
PPO experiment, or A2C's (``--algo a2c``) (LunarLander-v3, 1M steps, all lander defaults: W&B offline, evaluations,
checkpoints, video, report).

    python benchmarks/side_by_side.py [--algo ppo] [--seeds 10] [--first-seed 0] [--per-process 5] [--steps 1000000]
        [--zoo-seeds 5] [--zoo-python .zoo/bin/python] [--out benchmark-side-by-side] [--arms one side batched zoo]
        [--also EARLIER_OUT ...]

Arms, one after the other on this machine (nothing else running) in the order ``--arms`` gives, each a whole
experiment that ends with its comparison:

1. ``one per process``: ``python -m lander.run --multirun seed=0..N-1 hydra/launcher=joblib
   hydra.launcher.n_jobs=2``: today's way, two runs at a time;
2. ``side by side``: the same with ``seeds_per_process=K`` (lander's launcher, two processes at a time);
   ``batched``: arm 1 with ``batched_engine=true`` (each seed alone on the batched engine, two at a time);
3. ``rl-zoo3``: ``python -m rl_zoo3.train --algo ppo --env LunarLander-v3 --seed S --num-threads 1`` for
   ``--zoo-seeds`` seeds, two at a time (its own defaults but one torch thread, as lander's ``torch_threads``: with
   its default threads two zoo runs on two cores oversubscribe them; in its own venv, see benchmarks/speed.py).

Prints, per arm: wall seconds to the end (lander: the comparison written), CPU seconds per seed (every process
of the arm, waited for: ``RUSAGE_CHILDREN``), peak RSS per process; and the equivalence of arms 1 and 2: each
arm's final evaluation means (20 fixed episodes, the same for both), the difference of the means with its 90%
confidence interval (Welch), TOST at the margin ``--margin``, the IQM of each with a 95% bootstrap interval,
the mean learning curves (eval.csv) side by side, and each run's area under its curve (the mean of its evaluations)
and the step of its first evaluation of 200 or more, compared the same way. ``--also`` adds the run directories of
earlier outputs (another ``--first-seed``) to the equivalence: more seeds, same arms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lander.analysis.statistics import aggregate_iqm, interval  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(commands: list[list[str]], at_once: int, cwd: Path) -> tuple[float, float, float]:
    """Run ``commands``, ``at_once`` at a time: (wall seconds, CPU seconds of every process they started, the
    peak RSS in MB of the largest command's process tree: ``wait4``'s ``ru_maxrss``)."""
    start, cpu, peak = time.perf_counter(), children_cpu(), 0.0
    pending = list(commands)
    running: list[tuple[subprocess.Popen[bytes], Any]] = []
    while pending or running:
        while pending and len(running) < at_once:
            # stderr to a file: a pipe read only at the end fills (64 kB: W&B's lines of ~17 runs) and blocks the runs
            log = tempfile.TemporaryFile()  # noqa: SIM115  # closed when its command ends
            running.append((subprocess.Popen(pending.pop(0), cwd=cwd, stdout=subprocess.DEVNULL, stderr=log), log))
        for process, log in list(running):
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                running.remove((process, log))
                peak = max(peak, usage.ru_maxrss / 1024)
                log.seek(0)
                if os.waitstatus_to_exitcode(status):
                    raise SystemExit(f"{process.args!r} failed: {log.read().decode()[-2000:]}")
                log.close()
        time.sleep(0.5)
    return time.perf_counter() - start, children_cpu() - cpu, peak


def lander_arm(sweep: Path, seeds: range, steps: int, extra: list[str]) -> tuple[float, float, float]:
    """``python -m lander.run --multirun`` of ``seeds`` at ``steps``, two processes at a time, with ``extra``."""
    seed_list = ",".join(str(s) for s in seeds)
    command = [sys.executable, "-m", "lander.run", "--multirun", f"seed={seed_list}", f"total_timesteps={steps}",
               "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", *extra]  # fmt: skip
    return timed([command], 1, REPO)


def finals(sweeps: list[Path]) -> dict[int, float]:
    found = {}
    for path in (p for sweep in sweeps for p in sweep.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        found[int(summary["seed"])] = float(summary["final_eval_mean"])
    return dict(sorted(found.items()))


def peak_rss(sweep: Path) -> float:
    return max(float(json.loads(p.read_text()).get("peak_rss_mb") or 0) for p in sweep.glob("*/summary.json"))


def run_curves(sweeps: list[Path]) -> dict[int, list[tuple[int, float]]]:
    """Each run's learning curve (eval.csv): seed -> [(timesteps, mean return)]."""
    found = {}
    for directory in (d for sweep in sweeps for d in sweep.iterdir() if (d / "metrics" / "eval.csv").is_file()):
        lines = (directory / "metrics" / "eval.csv").read_text().splitlines()
        header = lines[0].split(",")
        step, mean = header.index("timesteps"), header.index("mean")
        seed = int(json.loads((directory / "summary.json").read_text())["seed"])
        found[seed] = [(int(cells[step]), float(cells[mean])) for cells in (line.split(",") for line in lines[1:])]
    return dict(sorted(found.items()))


def curves(sweeps: list[Path]) -> dict[int, list[float]]:
    """Mean over seeds of each evaluation's mean return, by timestep."""
    by_step: dict[int, list[float]] = {}
    for curve in run_curves(sweeps).values():
        for step, mean in curve:
            by_step.setdefault(step, []).append(mean)
    return dict(sorted(by_step.items()))


def take_off(curve: list[tuple[int, float]], solved: float = 200.0) -> float:
    """The timesteps of a run's first evaluation of ``solved`` or more (its last step + 1 if none)."""
    return float(next((step for step, mean in curve if mean >= solved), curve[-1][0] + 1))


def tost(a: np.ndarray, b: np.ndarray, margin: float) -> tuple[float, float, float, float]:
    """Welch's TOST of ``mean(b) - mean(a)`` within ``[-margin, margin]``: (difference, 90% CI low, high, p)."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = np.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    diff = b.mean() - a.mean()
    p = max(stats.t.sf((diff + margin) / se, dof), stats.t.cdf((diff - margin) / se, dof))
    half = stats.t.ppf(0.95, dof) * se
    return float(diff), float(diff - half), float(diff + half), float(p)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--algo", default="ppo", choices=["ppo", "a2c"], help="the experiment's algo= (default ppo)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--per-process", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--zoo-seeds", type=int, default=5)
    parser.add_argument("--zoo-python", default=str(REPO / ".zoo" / "bin" / "python"))
    parser.add_argument("--margin", type=float, default=20.0)
    parser.add_argument("--out", default=str(REPO / "benchmark-side-by-side"))
    parser.add_argument("--arms", nargs="*", default=["one", "side", "zoo"], choices=["one", "side", "batched", "zoo"])
    parser.add_argument("--also", nargs="*", default=[], help="earlier --out folders whose runs join the equivalence")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    algo = [f"algo={args.algo}"]
    for arm in args.arms:  # in the order given: "side one" measures the drift of the VM's speed the other way
        if arm == "one":
            wall, cpu, _ = lander_arm(out / "one", seeds, args.steps, ["hydra/launcher=joblib", *algo])
            results["one per process"] = (wall, cpu, peak_rss(out / "one"), args.seeds)
            print(f"one per process: {wall:.0f} s wall, {cpu / args.seeds:.1f} CPU s per seed", flush=True)
        elif arm == "side":
            wall, cpu, _ = lander_arm(out / "side", seeds, args.steps, [f"seeds_per_process={args.per_process}", *algo])
            results["side by side"] = (wall, cpu, peak_rss(out / "side"), args.seeds)
            print(f"side by side: {wall:.0f} s wall, {cpu / args.seeds:.1f} CPU s per seed", flush=True)
        elif arm == "batched":
            extra = ["hydra/launcher=joblib", "batched_engine=true", *algo]
            wall, cpu, _ = lander_arm(out / "batched", seeds, args.steps, extra)
            results["batched engine alone"] = (wall, cpu, peak_rss(out / "batched"), args.seeds)
            print(f"batched engine alone: {wall:.0f} s wall, {cpu / args.seeds:.1f} CPU s per seed", flush=True)
        elif arm == "zoo" and Path(args.zoo_python).exists():
            zoo = [args.zoo_python, "-m", "rl_zoo3.train", "--algo", args.algo, "--env", "LunarLander-v3"]
            commands = [[*zoo, "--num-threads", "1", "--seed", str(s), "-f", str(out / "zoo")]
                        for s in seeds[: args.zoo_seeds]]  # fmt: skip
            wall, cpu, peak = timed(commands, 2, out)
            results["rl-zoo3"] = (wall, cpu, peak, args.zoo_seeds)
            print(f"rl-zoo3: {wall:.0f} s wall, {cpu / args.zoo_seeds:.1f} CPU s per seed", flush=True)

    report(results, [out, *(Path(also).resolve() for also in args.also)], args.margin)


ARMS = {"one": "one per process", "side": "side by side", "batched": "batched engine alone"}


def report(results: dict[str, tuple[float, float, float, int]], outs: list[Path], margin: float) -> None:
    """The table of the arms and the equivalence of each lander arm to one per process (their run directories
    under ``outs``)."""
    print("\n| arm | seeds | wall s to the end | CPU s per seed | peak RSS MB (largest process) |")
    print("|---|---|---|---|---|")
    for name, (wall, cpu, rss, n) in results.items():
        print(f"| {name} | {n} | {wall:.0f} | {cpu / n:.1f} | {rss:.0f} |")
    for arm in ("side", "batched"):
        label = ARMS[arm]
        if "one per process" in results and label in results:
            one, other = results["one per process"], results[label]
            print(f"\nCPU per seed {label} / one per process: {other[1] / other[3] / (one[1] / one[3]):.3f}; "
                  f"wall: {other[0] / one[0]:.3f}")  # fmt: skip
        ones, others = [out / "one" for out in outs], [out / arm for out in outs]
        if any(d.is_dir() for d in ones) and any(d.is_dir() for d in others):
            equivalence([d for d in ones if d.is_dir()], [d for d in others if d.is_dir()], label, margin)


def equivalence(ones: list[Path], others: list[Path], label: str, margin: float) -> None:
    """Final evaluations, TOST, IQMs, mean learning curves, areas and take-off steps of the runs in ``others``
    against those of one seed per process in ``ones``."""
    a, b = finals(ones), finals(others)
    xa, xb = np.array(list(a.values())), np.array([b[seed] for seed in a if seed in b])
    print(f"\nfinal evaluation means (20 fixed episodes), by seed:\n| seed | one per process | {label} |")
    print("|---|---|---|")
    for seed in a:
        print(f"| {seed} | {a[seed]:.1f} | {b.get(seed, float('nan')):.1f} |")
    print(f"| mean (std) | {xa.mean():.1f} ({xa.std(ddof=1):.1f}) | {xb.mean():.1f} ({xb.std(ddof=1):.1f}) |")
    diff, low, high, p = tost(xa, xb, margin)
    verdict = "equivalent" if p < 0.05 else "not shown equivalent"
    print(f"\ndifference {label} - one per process: {diff:+.1f}, 90% CI [{low:+.1f}, {high:+.1f}]; ")
    print(f"TOST margin +-{margin:g}: p = {p:.4f} ({verdict})")
    print(f"Welch t-test of a difference: p = {stats.ttest_ind(xa, xb, equal_var=False).pvalue:.3f}")
    for name, x in (("one per process", xa), (label, xb)):
        point, low_i, high_i = interval(x[:, None], aggregate_iqm)
        print(f"IQM {name}: {float(point):.1f} [{float(low_i):.1f}, {float(high_i):.1f}] (95% bootstrap)")
    ca, cb = curves(ones), curves(others)
    print(f"\nlearning curves, mean over seeds of each evaluation:\n| timesteps | one per process | {label} |")
    print("|---|---|---|")
    shown = list(ca)[:: max(1, len(ca) // 10)]
    for step in shown if shown[-1] == list(ca)[-1] else [*shown, list(ca)[-1]]:
        print(f"| {step:,} | {np.mean(ca[step]):.1f} | {np.mean(cb.get(step, [np.nan])):.1f} |")
    ra, rb = run_curves(ones), run_curves(others)
    measures = {"area under the curve (mean of a run's evaluations)": lambda c: float(np.mean([m for _, m in c])),
                "timesteps to the first evaluation of 200 or more": take_off}  # fmt: skip
    for name, measure in measures.items():
        xa, xb = np.array([measure(c) for c in ra.values()]), np.array([measure(c) for c in rb.values()])
        if np.ptp(np.concatenate([xa, xb])) == 0:  # e.g. no run reached 200: nothing to test (a t-test: NaN)
            print(f"\n{name}: {xa[0]:,.1f} for every run of both arms (nothing to compare)")
            continue
        diff, low, high, _ = tost(xa, xb, 0.0)
        print(f"\n{name}: one per process {xa.mean():,.1f} ({xa.std(ddof=1):,.1f}), {label} {xb.mean():,.1f} "
              f"({xb.std(ddof=1):,.1f}); difference {diff:+,.1f}, 90% CI [{low:+,.1f}, {high:+,.1f}]; "
              f"Welch p = {stats.ttest_ind(xa, xb, equal_var=False).pvalue:.3f}, "
              f"Mann-Whitney p = {stats.mannwhitneyu(xa, xb).pvalue:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
