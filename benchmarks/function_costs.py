"""Benchmark: what chosen functions cost in a real run of seeds side by side, each call timed by this thread's CPU
clock (outermost calls only: a function that calls itself counts once), to the end of the lockstep.

    python benchmarks/function_costs.py [--out function-costs.json] -- LANDER_RUN_ARGUMENTS...

e.g. ``python benchmarks/function_costs.py -- --multirun algo=a2c seed=0,1,2,3 seeds_per_process=4
total_timesteps=200000 hydra.launcher.n_jobs=1 progress_bar=false``. Runs ``lander.run`` in this process (its
sweep's job forked from it, as lander's launcher forks), with a timer around each function of ``FUNCTIONS``, and
prints, when the side-by-side job ends: each function's thread CPU seconds, calls, microseconds a call, and share
of the job process's CPU.

Why not a sampling profiler alone: py-spy counts a system call's time (the lockstep reads the thread's CPU clock at
every switch) about twice over, and a function's cost in a whole run is 2-4x what a loop of it alone measures (the
env steps between two calls leave little of its code and data in the caches), so both the shares and the
microbenchmarks mislead. A function that switches greenlets (the evaluation's ``play``, ``SideBySide.train``) is
left out: its time would include the other seeds'. Each timer adds about half a microsecond a call.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import runpy
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's lander, not an installed one

FUNCTIONS = [  # "module:Class.method" or "module:function"
    "lander.envs:LunarLanderVecEnv.step_wait",  # the training envs' steps
    "lander.envs:LeanLunarLander.step",  # the evaluations' and the video's env steps
    "lander.algorithms.batched.model:SeedStack.act",
    "lander.algorithms.batched.model:SeedStack.predict",
    "lander.algorithms.batched.model:SeedStack.train",
    "lander.algorithms.batched.model:SeedStack.rollouts",
    "lander.algorithms.batched.model:SeedStack.finish",
    "lander.algorithms.batched.model:SideBySide._values",
    "lander.algorithms.batched.model:SideBySide._store",
    "lander.algorithms.batched.model:SideBySide._bootstrap_timeouts",
    "lander.algorithms.batched.model:returns_and_advantages",
    "lander.algorithms.batched.model:explained_variance",
    "lander.execution.lockstep:Lockstep.charge",
    "lander.execution.lockstep:Lockstep.swap",
    "stable_baselines3.common.callbacks:BaseCallback.update_locals",
    "lander.training.callbacks:EpisodeLogger._on_step",
    "lander.training.callbacks:ResourceMonitor._on_step",
    "lander.tracking.wandb_tracker:WandbTracker.log",
    "lander.training.finish:record_results",
]

totals: dict[str, list[float]] = {}  # name -> [seconds, calls]
running: set[str] = set()


def timed(name: str, function: Any) -> Any:
    @functools.wraps(function)
    def inner(*args: Any, **kwargs: Any) -> Any:
        if name in running:  # an inner call: counted in the outer one
            return function(*args, **kwargs)
        running.add(name)
        start = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            total = totals.setdefault(name, [0.0, 0])
            total[0] += time.thread_time() - start
            total[1] += 1
            running.discard(name)

    return inner


def wrap(spec: str) -> None:
    module_name, _, path = spec.partition(":")
    owner: Any = importlib.import_module(module_name)
    *classes, attribute = path.split(".")
    for name in classes:
        owner = getattr(owner, name)
    setattr(owner, attribute, timed(spec, getattr(owner, attribute)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="function-costs.json")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="-- then lander.run's arguments")
    args = parser.parse_args()
    for spec in FUNCTIONS:
        wrap(spec)
    from lander.execution.lockstep import Lockstep

    run = Lockstep.run

    def measured(self: Lockstep, *run_args: Any, **run_kwargs: Any) -> Any:
        start = time.process_time()
        codes = run(self, *run_args, **run_kwargs)
        process = time.process_time() - start
        print(f"\nthe side-by-side job: {process:.2f} CPU s (every thread of its process)\n")
        print("| function | CPU s | calls | us a call | share |\n|---|---|---|---|---|")
        for name, (seconds, calls) in sorted(totals.items(), key=lambda item: -item[1][0]):
            print(f"| `{name}` | {seconds:.2f} | {calls:.0f} | {1e6 * seconds / calls:.1f} | {seconds / process:.1%} |")
        Path(args.out).write_text(json.dumps({"process_cpu": process, "functions": totals}, indent=1))
        return codes

    Lockstep.run = measured  # type: ignore[method-assign]
    sys.argv = ["lander.run", *[a for a in args.arguments if a != "--"]]
    runpy.run_module("lander.run", run_name="__main__")


if __name__ == "__main__":
    main()
