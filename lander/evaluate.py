"""Re-evaluate saved models: ``python -m lander.evaluate run=<run or sweep dir> n_episodes=20 video=true``.

Each run's model is loaded safely (:mod:`lander.loading`) with the run's own config, evaluated on fixed
seeds (``seed + i`` for episode i, the run's ``eval.seed`` by default) and written to
``<run>/evaluations/<name>.json`` (and ``.mp4``), leaving the run's own results untouched. A sweep
directory evaluates every job in it.
"""

from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lander.rundir import RunPaths, find_checkpoints, find_run_dirs, write_json

log = logging.getLogger("lander.evaluate")


@dataclass
class EvaluateConfig:
    run: str = "???"  # a run directory or a sweep directory (every job in it)
    model: str = "model.zip"  # the file in the run directory: model.zip, best_model.zip, checkpoints/...
    n_episodes: int = 20  # episodes, on seeds seed, seed + 1, ...
    seed: int | None = None  # first episode's seed; null: the run's eval.seed (the episodes it was scored on)
    deterministic: bool = True  # greedy/mean actions; false samples from the policy
    n_envs: int = 10  # episodes run side by side
    video: bool = False  # also write one episode (seed) as mp4
    name: str | None = None  # output file name without suffix; default from model, episodes, mode, seed


def usage() -> str:
    """The ``--help`` text: the command line and every key with its default and comment."""
    import inspect

    lines = ["usage: python -m lander.evaluate run=DIR [key=value ...]", "",
             "Evaluates a run's saved model (every job's, for a sweep directory) on fixed seeds and writes",
             "<run>/evaluations/<name>.json (and .mp4); the run's own results stay as they are.",
             "", "keys:"]  # fmt: skip
    for line in inspect.getsource(EvaluateConfig).splitlines()[2:]:
        name, _, rest = line.strip().partition(":")
        default, _, comment = rest.partition("#")
        default = default.split("=", 1)[-1].strip().replace('"???"', "(required)")
        lines.append(f"  {name + '=' + default:<28} {comment.strip()}")
    return "\n".join(lines)


def parse(argv: list[str]) -> DictConfig:
    """``key=value`` arguments checked against :class:`EvaluateConfig` (unknown keys and bad types rejected)."""
    from lander.keys import did_you_mean

    schema = OmegaConf.structured(EvaluateConfig)
    keys = list(EvaluateConfig.__dataclass_fields__)
    for arg in argv:
        key = arg.split("=", 1)[0]
        if key not in keys:
            raise ValueError(f"unknown key {key!r}.{did_you_mean(key, keys)} Keys: {', '.join(keys)}")
    cfg = OmegaConf.merge(schema, OmegaConf.from_dotlist(argv))
    if cfg.n_episodes < 1 or cfg.n_envs < 1:
        raise ValueError(f"n_episodes={cfg.n_episodes}, n_envs={cfg.n_envs}: both must be integers >= 1")
    if cfg.name is not None and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", cfg.name):
        raise ValueError(f"name={cfg.name!r}: a file name of letters, digits and _ . + - (written as "
                         "<run>/evaluations/<name>.json), not a path")  # fmt: skip
    return cfg  # type: ignore[return-value]


def run_dirs(path: Path) -> list[Path]:
    """``path`` itself if it is a run directory, else every run directory below it (a sweep), job 2 before 10."""
    found = find_run_dirs([path])
    if not found:
        raise ValueError(f"run={str(path)!r} holds no lander run (no .hydra/config.yaml)")
    return found


def model_file(paths: RunPaths, name: str) -> Path:
    """``<run>/<name>``; for a run stopped before its end (no ``model.zip``), its newest checkpoint, said so."""
    path = paths.root / name
    if path.is_file() or name != "model.zip" or not find_checkpoints(paths.checkpoints):
        return path
    steps, newest = find_checkpoints(paths.checkpoints)[0]
    log.warning("%s has no model.zip (the run stopped before its end): evaluating its newest checkpoint, "
                "%s (%d timesteps)", paths.root, newest.relative_to(paths.root), steps)  # fmt: skip
    return newest


def evaluate_run(run_dir: Path, args: DictConfig) -> Path:
    """Evaluate one run's model as ``args`` say; return the JSON file written."""
    from lander.envs import make_env, make_train_env
    from lander.evaluation import evaluate
    from lander.loading import safe_load
    from lander.video import write_video

    paths = RunPaths(run_dir)
    cfg = OmegaConf.load(paths.config)
    seed = cfg.eval.seed if args.seed is None else args.seed
    source = model_file(paths, args.model)
    env = make_train_env(cfg.env, 1, seed)
    try:
        model = safe_load(cfg, source, env)  # type: ignore[arg-type]
    finally:
        env.close()
    result = evaluate(
        model,
        partial(make_env, cfg.env),
        args.n_episodes,
        seed,
        args.n_envs,
        args.deterministic,
        cfg.env.get("reward_threshold"),
    )
    mode = "deterministic" if args.deterministic else "stochastic"
    name = args.name or f"{source.stem}_{args.n_episodes}ep_{mode}_seed-{seed}"
    paths.evaluations.mkdir(exist_ok=True)
    shown = source.relative_to(paths.root) if source.is_relative_to(paths.root) else source
    record = result.to_dict() | {"model": str(shown), "timesteps": int(model.num_timesteps),
                                 "deterministic": args.deterministic, "env_id": cfg.env.id}  # fmt: skip
    if args.video:
        video_cfg = OmegaConf.create({"seed": seed, "fps": cfg.video.fps, "max_steps": cfg.video.max_steps})
        record["video"] = write_video(model, cfg.env, video_cfg, paths.evaluations / f"{name}.mp4")
    path = write_json(paths.evaluations / f"{name}.json", record)
    log.info("%s: %s mean %.4g +- %.2g (sem) over %d episodes -> %s", run_dir, record["model"], record["mean"],
             record["sem"], record["n"], path)  # fmt: skip
    return path


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        argv = sys.argv[1:] if argv is None else argv
        if {"-h", "--help"} & set(argv):
            print(usage())
            return 0
        args = parse(argv)
        if OmegaConf.is_missing(args, "run"):
            raise ValueError("run=<run dir or sweep dir> is required")
        runs = run_dirs(Path(args.run))
    except (ValueError, OmegaConfBaseException) as exc:
        print(f"lander.evaluate: {exc}\n{usage().splitlines()[0]}", file=sys.stderr)
        return 2
    from lander.loading import ModelLoadError

    failed = []
    for run_dir in runs:
        try:
            evaluate_run(run_dir, args)
        except (ModelLoadError, FileNotFoundError) as exc:
            log.error("%s: %s", run_dir, exc)
            failed.append(run_dir)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
