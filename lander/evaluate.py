"""Entry point: ``python -m lander.evaluate run=<run or sweep dir> n_episodes=20 video=true`` re-evaluates saved
models (:mod:`lander.evaluation.saved`), a Hydra app configured by ``lander/conf/evaluate.yaml``.

The command line is composed and checked before Hydra runs (:func:`check_command`): a wrong key, type or value is
one line on stderr and exit 2, with nothing loaded or written.
"""

from __future__ import annotations

from lander.process.signals import exit_on_signals, said_on_exit

if __name__ == "__main__":
    exit_on_signals()  # from the first line on, as lander.run: Ctrl-C ends it with 130, no traceback (main says so)

import logging
import re
import sys
from pathlib import Path

import hydra
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from lander.config.checks import (
    EPISODE_BYTES,
    MEMORY_SHARE,
    NAME_BYTES,
    available_memory,
    check_env_id,
    check_renders,
)
from lander.config.keys import did_you_mean
from lander.config.precheck import hydra_message
from lander.config.schema import CONF_DIR, EvaluateConfig, load_saved, register_configs
from lander.config.trust import check_trusted
from lander.errors import ConfigError
from lander.storage.rundir import (
    RunPaths,
    evaluated_before,
    evaluated_model,
    evaluation_file,
    find_checkpoints,
    find_run_dirs,
    model_shown,
)

register_configs()
NOT_BUILT = ("callbacks", "logger")  # what an evaluation does not build: a run's own need no allow_target
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")  # name=: a file name under <run>/evaluations/, not a path


def check(cfg: DictConfig) -> None:
    """The values a type cannot check: required ``run``, counts >= 1 (the episodes' records within memory), ``seed``
    null or >= 0, ``name`` a file name, runs to evaluate."""
    if OmegaConf.is_missing(cfg, "run"):
        raise ConfigError("run=<run dir or sweep dir> is required")
    for key in ("n_episodes", "n_envs"):
        if cfg[key] < 1:
            raise ConfigError(f"{key}={cfg[key]}: must be an integer >= 1")
    available, where = available_memory()
    if cfg.n_episodes * EPISODE_BYTES > MEMORY_SHARE * available:
        raise ConfigError(
            f"n_episodes={cfg.n_episodes}: their records need about {cfg.n_episodes * EPISODE_BYTES / 1e9:,.1f} GB "
            f"of memory and {where} {available / 1e9:,.1f} GB available: at most "
            f"{int(MEMORY_SHARE * available / EPISODE_BYTES):,} episodes"
        )
    if cfg.seed is not None and cfg.seed < 0:
        raise ConfigError(f"seed={cfg.seed}: must be null (the run's eval.seed) or an integer >= 0")
    if cfg.name is not None and not (NAME.fullmatch(cfg.name) and len(cfg.name) <= NAME_BYTES):
        raise ConfigError(
            f"name={cfg.name!r}: a file name of letters, digits and _ . + - (written as "
            f"<run>/evaluations/<name>.json), not a path, at most {NAME_BYTES} characters"
        )
    runs = find_run_dirs([Path(cfg.run)])
    if not runs:
        raise ConfigError(f"run={cfg.run!r} holds no lander run (no .hydra/config.yaml)")
    check_envs(runs, cfg.video, list(cfg.allow_target))
    check_outputs(runs, cfg)
    if not any(evaluated_model(RunPaths(run), cfg.model).is_file() for run in runs):
        kept = sorted(p.name for p in runs[0].glob("*.zip")) + [
            str(p.relative_to(runs[0])) for _, p in find_checkpoints(RunPaths(runs[0]).checkpoints)
        ]
        which = f"no run under {cfg.run!r} has" if len(runs) > 1 else "the run has no"
        raise ConfigError(
            f"model={cfg.model!r}: {which} such file; {runs[0]} has: {', '.join(kept) or 'no model (it saved none)'}"
        )


def check_envs(runs: list[Path], video: bool, allowed: list[str]) -> None:
    """Each run's config imports only lander's own targets and ``allowed`` where an evaluation builds it (its env
    and model, not :data:`NOT_BUILT`; :func:`check_trusted`, as ``lander.reproduce`` checks a whole config: a run
    from elsewhere is evaluated without running code its config names, an env's module or a wrapper's
    ``_target_``, whatever Hydra's own blocklist lets through); its env can be made here
    (its ``module:Id``'s module importable from this directory) and, for ``video``, render frames: each failed in a
    traceback, the second once the run was evaluated."""
    for run in runs:
        try:
            saved = load_saved(RunPaths(run).config)
        except ConfigError:  # a config that is not lander's: evaluate_run says so, run by run
            continue
        try:
            plain = OmegaConf.to_container(saved, resolve=False)
            built = {str(k): v for k, v in plain.items() if k not in NOT_BUILT} if isinstance(plain, dict) else {}
            check_trusted(built, allowed, ".hydra/config.yaml", "allow_target=[{}]")
            env_id = saved.env.id
            check_env_id(env_id)
            if video:
                check_renders(env_id, "video")
        except ConfigError as exc:
            raise ConfigError(f"{run}: {exc}") from None


def check_outputs(runs: list[Path], cfg: DictConfig) -> None:
    """No run's evaluation file (:func:`lander.storage.rundir.evaluation_file`) holds another model's evaluation:
    ``model=<a file outside the run>`` named ``model.zip`` replaced the run's own model's evaluation of the same
    episodes with its own."""
    for run in runs:
        paths = RunPaths(run)
        try:
            seed = load_saved(paths.config).eval.seed if cfg.seed is None else cfg.seed
        except ConfigError:  # evaluate_run says so, run by run
            continue
        model = evaluated_model(paths, cfg.model)
        path = evaluation_file(paths, model, cfg.n_episodes, cfg.deterministic, seed, cfg.name)
        earlier, now = evaluated_before(path), model_shown(paths, model)
        if earlier is not None and earlier != now:
            raise ConfigError(
                f"model={cfg.model!r} would be written to {path}, which holds the evaluation of {earlier}: give "
                "name=<another name> for this one"
            )


def check_command(argv: list[str]) -> None:
    """Compose ``evaluate.yaml`` with the command line's overrides and :func:`check` it, as Hydra would run it.

    :raise ConfigError: an unknown key (with the closest one), a wrong type, a bad value, a sweep (``--multirun``)
    """
    if {"-m", "--multirun"} & set(argv):
        raise ConfigError("lander.evaluate takes one run= (a sweep directory evaluates every job in it): no --multirun")
    if {"-h", "--help", "--hydra-help", "-c", "--cfg", "--info"} & set(argv):
        return  # Hydra prints and exits
    keys = list(EvaluateConfig.__dataclass_fields__)
    for arg in argv:
        key = arg.split("=", 1)[0]
        if key not in keys and not key.startswith("hydra."):
            raise ConfigError(f"unknown key {key!r}.{did_you_mean(key, keys)} Keys: {', '.join(keys)}")
    try:
        swept = [o for o in OverridesParser.create().parse_overrides(argv) if o.is_sweep_override()]
        if swept:  # Hydra's advice was --multirun, which lander.evaluate refuses
            raise ConfigError(
                f"{swept[0].input_line}: lander.evaluate takes one value a key (a sweep directory as run= evaluates "
                "every job in it; other values: one command each)"
            )
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("evaluate", overrides=argv)
    except ConfigError:
        raise
    except Exception as exc:  # Hydra's and OmegaConf's errors: a bad value, a malformed override
        raise ConfigError(hydra_message(exc)) from None
    check(cfg)


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    """Evaluate the run(s) as configured; exit 1 if a model could not be evaluated."""
    from lander.evaluation.saved import evaluate_runs  # torch and SB3 (~2 s): after the checks

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.exit(evaluate_runs(cfg))


if __name__ == "__main__":
    try:
        check_command(sys.argv[1:])
    except ConfigError as error:
        print(f"lander.evaluate: {error}\nusage: python -m lander.evaluate run=DIR [key=value ...]", file=sys.stderr)
        sys.exit(2)
    with said_on_exit(lambda: "lander.evaluate: interrupted: the evaluation under way wrote nothing"):
        main()
