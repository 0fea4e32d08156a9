"""Re-evaluating saved models (``python -m lander.evaluate``): each run's model loaded safely
(:mod:`lander.evaluation.loading`) with the run's own config, evaluated on fixed seeds (``seed + i`` for episode i, the
run's ``eval.seed`` by default) and written to ``<run>/evaluations/<name>.json`` (and ``.mp4``), leaving the run's own
results untouched. A sweep directory evaluates every job in it.
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lander.config.schema import load_saved
from lander.envs import make_env, make_train_env
from lander.errors import ConfigError, RunFileError
from lander.evaluation.loading import safe_load
from lander.evaluation.policy import evaluate
from lander.evaluation.video import write_video
from lander.numbers import significant
from lander.storage.normalization import read_stats, stats_path
from lander.storage.rundir import (
    CHECKPOINT,
    RunPaths,
    evaluated_model,
    evaluation_file,
    find_run_dirs,
    model_shown,
    write_json,
)

log = logging.getLogger(__name__)


def run_dirs(path: Path) -> list[Path]:
    """``path`` itself if it is a run directory, else every run directory below it (a sweep), job 2 before 10."""
    found = find_run_dirs([path])
    if not found:
        raise ConfigError(f"run={str(path)!r} holds no lander run (no .hydra/config.yaml)")
    return found


def model_file(paths: RunPaths, name: str) -> Path:
    """``<run>/<name>``; for a run stopped before its end (no ``model.zip``), its newest checkpoint, said so
    (:func:`lander.storage.rundir.evaluated_model`)."""
    path = evaluated_model(paths, name)
    if path != paths.root / name:
        steps = int(CHECKPOINT.fullmatch(path.name).group(1))  # type: ignore[union-attr]  # find_checkpoints' own
        log.warning(
            "%s has no model.zip (the run stopped before its end): evaluating its newest checkpoint, %s (%d timesteps)",
            paths.root,
            path.relative_to(paths.root),
            steps,
        )
    return path


def evaluate_run(run_dir: Path, args: DictConfig) -> Path:
    """Evaluate one run's model as ``args`` say; return the JSON file written."""
    paths = RunPaths(run_dir)
    try:
        cfg = load_saved(paths.config)
    except ConfigError as exc:
        raise RunFileError(str(exc)) from None
    seed = cfg.eval.seed if args.seed is None else args.seed
    source = model_file(paths, args.model)
    mode = "deterministic" if args.deterministic else "stochastic"
    shown = model_shown(paths, source)
    log.info("evaluating %s: %s, %d episodes from seed %d (%s)", run_dir, shown, args.n_episodes, seed, mode)
    env = make_train_env(cfg.env, 1, seed)
    try:
        model = safe_load(cfg, source, env)
        shape = tuple(env.observation_space.shape or ())
    finally:
        env.close()
    normalizer = None
    if cfg.env.normalize.enabled:
        stats = read_stats(stats_path(source), shape)
        stats.check_pair(stats_path(source), model.num_timesteps)
        normalizer = stats.normalize_obs
    result = evaluate(
        model,
        partial(make_env, cfg.env),
        args.n_episodes,
        seed,
        args.n_envs,
        args.deterministic,
        cfg.env.get("reward_threshold"),
        obs_transform=normalizer,  # the training statistics, frozen; the rewards reported are the env's own
    )
    output = evaluation_file(paths, source, args.n_episodes, args.deterministic, seed, args.name)
    paths.evaluations.mkdir(exist_ok=True)
    record = result.to_dict() | {
        "model": shown,
        "timesteps": int(model.num_timesteps),
        "deterministic": args.deterministic,
        "env_id": cfg.env.id,
    }
    if args.video:
        video_cfg = OmegaConf.create({"seed": seed, "fps": cfg.video.fps, "max_steps": cfg.video.max_steps})
        record["video"] = write_video(model, cfg.env, video_cfg, output.with_suffix(".mp4"), False, normalizer)
    path = write_json(output, record)
    log.info(
        "%s: %s mean %s +- %s (sem) over %d episodes -> %s",
        run_dir,
        record["model"],
        significant(record["mean"]),
        significant(record["sem"], 2),
        record["n"],
        path,
    )
    return path


def evaluate_runs(args: DictConfig) -> int:
    """Evaluate every run ``args.run`` holds as ``args`` say (:class:`lander.config.schema.EvaluateConfig`).

    :return: the exit code: 0, or 1 if a run's model could not be evaluated (each named in the log)
    """
    failed = []
    for run_dir in run_dirs(Path(args.run)):
        try:
            evaluate_run(run_dir, args)
        except (RunFileError, FileNotFoundError, OmegaConfBaseException) as exc:  # a config without its keys too
            log.error("%s: %s", run_dir, exc)
            failed.append(run_dir)
    return 1 if failed else 0
