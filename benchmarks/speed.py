"""Benchmark: a full default PPO run against older lander, a plain SB3 script and rl-baselines3-zoo, side by side.

For each seed, four programs start at the same moment, pinned to the same CPU core, so CPU steal, caches
and clock speed hit them alike (the method of ``ppo_solve.py`` part 3); each one's CPU seconds are its own
cost. The programs, each a full 1M-step run of the zoo's PPO settings for LunarLander-v3:

- ``lander``: ``python -m lander.run algo=ppo seed=S`` from this checkout (its defaults: W&B offline,
  evaluation every 25k steps, checkpoints, plot, video);
- ``old``: the same command at ``--old-commit`` (a git worktree under ``benchmarks/results/``);
- ``plain``: ``plain_sb3_ppo.py``, written as a user writes it (``make_vec_env`` defaults, SB3's ``EvalCallback``);
- ``zoo``: ``python -m rl_zoo3.train --algo ppo --env LunarLander-v3 --seed S`` (its defaults: evaluation
  every 25k steps, 5 episodes), from a separate venv (``--zoo-python``) so its optuna does not replace lander's:

    python -m venv --system-site-packages .zoo && .zoo/bin/pip install rl_zoo3==2.9.2
    python benchmarks/speed.py --seeds 0 1 2 --core 0 --zoo-python .zoo/bin/python

Per program: wall and CPU seconds (its process tree) at its first evaluation with mean >= 200 and at the
end, its training CPU seconds where it reports them, its peak resident memory and final evaluation.
Results: ``benchmarks/results/speed_seed-S.json``; ``--collect`` prints the Markdown tables from them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
REPO, OUT = HERE.parent, HERE / "results"
EVAL_LINE = re.compile(r"(?:eval at (\d+) steps: mean|Eval num_timesteps=(\d+), episode_reward=)\s*([-\d.e+]+)")


def commands(seed: int, old: Path, zoo_python: str, tag: str = "") -> dict[str, tuple[list[str], Path, dict]]:
    """(command, working directory, extra environment) of each program for ``seed``; ``tag`` marks fillers' dirs."""
    lander = ["-m", "lander.run", "algo=ppo", f"seed={seed}", "progress_bar=false"]
    return {
        "lander": ([sys.executable, *lander, f"hydra.run.dir={OUT / f'lander{tag}_seed-{seed}'}"], REPO, {}),
        "old": (
            [sys.executable, *lander, f"hydra.run.dir={OUT / f'old{tag}_seed-{seed}'}"],
            old,
            {"PYTHONPATH": str(old)},
        ),
        "plain": ([sys.executable, str(HERE / "plain_sb3_ppo.py"), "--seed", str(seed), "--verbose"], REPO, {}),
        "zoo": (
            [
                zoo_python,
                "-m",
                "rl_zoo3.train",
                "--algo",
                "ppo",
                "--env",
                "LunarLander-v3",
                "--seed",
                str(seed),
                "-f",
                str(OUT / f"zoo{tag}_seed-{seed}"),
            ],
            REPO,
            {},
        ),
    }


class Program:
    """One program pinned to ``core``: its output lines with their times, its tree's CPU over time, its rusage."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str], core: int) -> None:
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=os.environ | {"WANDB_SILENT": "true"} | env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: os.sched_setaffinity(0, {core}),
        )
        self.lines: list[tuple[float, str]] = []
        self.cpu: list[tuple[float, float]] = [(0.0, 0.0)]  # (wall, CPU seconds of the process tree)
        self.end: tuple[float, int, object] | None = None  # (wall, exit status, rusage)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.perf_counter() - self.start, line.rstrip()))

    def sample(self) -> None:
        total = 0.0
        with contextlib.suppress(psutil.Error):
            parent = psutil.Process(self.proc.pid)
            for proc in (parent, *parent.children(recursive=True)):
                with contextlib.suppress(psutil.Error):
                    times = proc.cpu_times()
                    total += times.user + times.system
        if total >= self.cpu[-1][1]:
            self.cpu.append((time.perf_counter() - self.start, total))

    def reap(self) -> bool:
        """Collect the exit status and rusage once the process has ended (``wait4``: exact CPU and peak RSS)."""
        if self.end is None:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.end = (time.perf_counter() - self.start, status, usage)
                self.proc.returncode = os.waitstatus_to_exitcode(status)
        return self.end is not None

    def cpu_at(self, wall: float) -> float:
        """The tree's CPU seconds at ``wall`` (the last sample before it; samples every 0.5 s)."""
        return max(cpu for t, cpu in self.cpu if t <= wall)

    def result(self) -> dict:
        assert self.end is not None
        wall, _, usage = self.end
        evals = [
            (t, int(m.group(1) or m.group(2)), float(m.group(3)))
            for t, line in self.lines
            if (m := EVAL_LINE.search(line))
        ]
        solved = next(((t, steps) for t, steps, mean in evals if mean >= 200), None)
        return {
            "exit_code": self.proc.returncode,
            "wall_seconds": round(wall, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),  # type: ignore[attr-defined]
            "tree_cpu_seconds": round(self.cpu[-1][1], 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # type: ignore[attr-defined]
            "solved_timesteps": solved[1] if solved else None,
            "solved_wall_seconds": round(solved[0], 1) if solved else None,
            "solved_cpu_seconds": round(self.cpu_at(solved[0]), 1) if solved else None,
            "evaluations": len(evals),
            "last_eval": evals[-1][2] if evals else None,
            "tail": [line for _, line in self.lines[-5:]],
        }


def side_by_side(seed: int, names: list[str], old: Path, zoo_python: str, core: int, filler: bool) -> dict:
    """Run ``names`` together on ``core``; with ``filler``, a program that ends is started again (its output
    thrown away) until all have ended, so each one shares the core with the same number of others throughout."""
    cmds = commands(seed, old, zoo_python)
    programs = {name: Program(*cmds[name], core=core) for name in names}
    fillers: dict[str, Program] = {}
    started = 0
    while not all(p.reap() for p in programs.values()):  # a list: reap every program, every time
        for name, program in programs.items():
            if program.end is None:
                program.sample()
            elif filler and (name not in fillers or fillers[name].reap()):
                started += 1
                fillers[name] = Program(*commands(seed, old, zoo_python, tag=f"_filler{started}")[name], core=core)
        time.sleep(0.5)
    for program in fillers.values():
        program.proc.kill()
        program.proc.wait()
    results = {name: p.result() for name, p in programs.items()}
    for name in ("lander", "old"):
        if name in results and results[name]["exit_code"] == 0:
            results[name] |= own_record(OUT / f"{name}_seed-{seed}")
    if "plain" in results and results["plain"]["exit_code"] == 0:
        plain = json.loads(results["plain"]["tail"][-1])
        results["plain"] |= {"train_cpu_seconds": plain["cpu_seconds"], "final_eval": plain["last_eval_mean"]}
    return results


def own_record(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        "train_cpu_seconds": summary["train_cpu_seconds"],
        "final_eval": summary["final_eval_mean"],
        "final_eval_sem": summary["final_eval_sem"],
        "first_timestep_reaching_200": summary["first_timestep_reaching_threshold"],
        "own_peak_rss_mb": summary["peak_rss_mb"],
    }


def old_worktree(commit: str) -> Path:
    path = OUT / f"lander-{commit}"
    if not path.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), commit], cwd=REPO, check=True)
    return path


def table(results: dict[int, dict]) -> str:
    head = (
        "| seed | program | wall s to 200 | CPU s to 200 | steps to 200 | wall s to end | CPU s (process) | "
        "training CPU s | peak RSS MB | final eval |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = []
    for seed, res in sorted(results.items()):
        for name, r in res.items():
            final = f"{r['final_eval']:.1f}" if r.get("final_eval") is not None else f"({r['last_eval']})"
            rows.append(
                f"| {seed} | {name} | {r['solved_wall_seconds']} | {r['solved_cpu_seconds']} | "
                f"{r['solved_timesteps']} | {r['wall_seconds']} | {r['cpu_seconds']} | "
                f"{r.get('train_cpu_seconds', '')} | {r['peak_rss_mb']} | {final} |"
            )
    ratios = []
    for seed, res in sorted(results.items()):
        mine = res.get("lander")
        for name in ("old", "plain", "zoo"):
            if mine and name in res:
                key = "train_cpu_seconds" if name != "zoo" else "cpu_seconds"
                ratios.append(f"- seed {seed}: lander / {name} = {mine[key] / res[name][key]:.3f} ({key})")
    return "\n".join([head, *rows, "", *ratios])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--programs", nargs="*", default=["lander", "old", "plain", "zoo"])
    parser.add_argument("--old-commit", default="23e7f34")
    parser.add_argument("--zoo-python", default=str(REPO / ".zoo" / "bin" / "python"))
    parser.add_argument("--core", type=int, default=0)
    parser.add_argument("--filler", action="store_true", help="restart programs that end until all have ended")
    parser.add_argument("--tag", default="", help="suffix of the result files (speed_seed-S<tag>.json)")
    parser.add_argument("--collect", action="store_true", help="only print the tables of the results there")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    if not args.collect:
        old = old_worktree(args.old_commit) if "old" in args.programs else REPO
        for seed in args.seeds:
            res = side_by_side(seed, args.programs, old, args.zoo_python, args.core, args.filler)
            (OUT / f"speed_seed-{seed}{args.tag}.json").write_text(json.dumps(res, indent=2))
            print(json.dumps(res), flush=True)
    results = {
        seed: json.loads((OUT / f"speed_seed-{seed}{args.tag}.json").read_text())
        for seed in args.seeds
        if (OUT / f"speed_seed-{seed}{args.tag}.json").is_file()
    }
    print(table(results))


if __name__ == "__main__":
    main()
