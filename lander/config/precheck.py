"""Checks of a ``python -m lander.run`` command line before Hydra writes anything.

Hydra creates the run directory (and saves ``.hydra/``) before the task function runs, so a command that
validation rejects is checked here first: every job's config is composed as Hydra will compose it and
validated (:func:`lander.config.checks.validate`), a directory another process is writing to is refused, and a
``resume=`` path is quoted for Hydra whatever characters it holds.
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import logging
import math
import os
import re
import shlex
import shutil
import socket
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_dir
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep
from hydra.errors import HydraException, OverrideParseException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from lander.config.checks import (
    check_env_kwargs,
    check_threads,
    check_trackers,
    memory_needed,
    sweep_memory_warning,
    validate,
)
from lander.config.keys import (
    check_callback_keys,
    check_model_keys,
    check_override_keys,
    check_policy_kwargs,
    unknown_key_in_file,
)
from lander.config.schema import CONF_DIR, configuration_key, labels, load_saved, register_configs
from lander.config.trust import allowed_prefixes, check_trusted
from lander.errors import ConfigError, RunFileError
from lander.storage.lock import SweepLock, check_free
from lander.storage.rundir import (
    CLAIM_RESOLVER,
    SWEEP_ENTRIES,
    RunPaths,
    RunSummary,
    Status,
    enclosing_run,
    escaping_entry,
    foreign_entries,
    not_a_run,
)
from lander.storage.yamlfile import YamlBomb, check_aliases, safe_yaml

log = logging.getLogger(__name__)

NO_LOCK = nullcontext()  # a command line composes alone
checked_commands: list[list[str]] = []  # the command lines check_command passed in this process (for the sweeper)
MAX_JOBS_CHECKED = 10_000  # beyond this, each value of each swept key is checked once, not every combination


def hydra_quote(value: str) -> str:
    """``value`` as a quoted Hydra override value: commas, brackets, quotes and emoji kept as they are."""
    value = re.sub(r"(\\+)('|$)", lambda m: m.group(1) * 2 + m.group(2), value)  # backslashes before a quote
    return "'" + value.replace("'", "\\'").replace("${", "\\${") + "'"


def check_run_to_resume(run_dir: Path) -> None:
    """``resume=`` names a lander run directory; where it does not, one line that says so (and for a sweep's, names
    some of its runs and how to complete the sweep)."""
    if not RunPaths(run_dir).is_run():
        advice = f"resume one of them, or complete the sweep: its command again with hydra.sweep.dir={run_dir}"
        raise ConfigError(not_a_run(run_dir, advice, "resume="))


def check_resumable(run_dir: Path, total_timesteps: int | None) -> None:
    """The run in ``run_dir`` can be resumed with this budget: a lander run, not completed unless a budget past what
    it trained is given (``resume=<run> total_timesteps=N`` trains it further).

    :param total_timesteps: the new budget given, or None (the run's own)
    """
    check_run_to_resume(run_dir)
    paths = RunPaths(run_dir)
    try:
        summary = RunSummary.load(paths)
    except (RunFileError, ValueError, TypeError) as exc:  # not JSON, or not a summary's
        raise ConfigError(f"resume={str(run_dir)!r}: {paths.summary} is unreadable ({exc})") from exc
    done = summary.timesteps if summary is not None else 0
    if summary is not None and summary.status == Status.COMPLETED and total_timesteps is None:
        raise ConfigError(
            f"resume={str(run_dir)!r}: that run is already completed (summary.json); to train it further, "
            f"give a larger budget: resume={run_dir} total_timesteps=N (N > {done})"
        )
    if total_timesteps is not None and total_timesteps <= done:
        raise ConfigError(
            f"total_timesteps={total_timesteps}: the run in {run_dir} has trained {done} steps "
            "already; give a larger budget to train it further"
        )


def resume_arguments(argv: list[str], allowed: Sequence[str] = ()) -> list[str]:
    """For ``resume=<run dir>``: Hydra's output goes to that directory, and nothing else may be overridden. The run's
    saved config imports only lander's own targets and ``allowed`` (:func:`lander.config.trust.check_trusted`): a run
    from elsewhere is resumed without running code its config names, as ``lander.evaluate`` and ``lander.reproduce``
    read one."""
    resume = [a for a in argv if a.startswith("resume=")]
    if not resume:
        return argv
    run_dir = Path(resume[-1].split("=", 1)[1])
    check_run_to_resume(run_dir)  # first: the checks below read the directory (resume=/ would walk the disk)
    others = [a for a in argv if not a.startswith(("resume=", "hydra.", "total_timesteps=", "memory_limit_mb="))]
    for arg in argv:
        if arg.startswith("total_timesteps=") and not re.fullmatch(r"[1-9]\d*", arg.split("=", 1)[1]):
            raise ConfigError(f"{arg}: with resume=, total_timesteps is the new budget, a positive integer")
        if arg.startswith("memory_limit_mb=") and not re.fullmatch(r"null|\d+(\.\d*)?", arg.split("=", 1)[1]):
            raise ConfigError(f"{arg}: memory_limit_mb must be null or a number of MB > 0")
    if others:
        raise ConfigError(
            f"resume= continues a run with its own saved config; remove {' '.join(others)} (the keys it takes "
            "are total_timesteps=N, to train a run further, memory_limit_mb=M and allow_target=[PREFIX])"
        )
    if "${" in str(run_dir.resolve()):
        raise ConfigError(
            f"resume={str(run_dir)!r}: Hydra reads '${{' in a path as an interpolation; rename the directory"
        )
    check_free(run_dir)
    check_contained(run_dir, "resume")  # before its summary.json is read: a link out of the run, a FIFO
    budget = [int(a.split("=", 1)[1]) for a in argv if a.startswith("total_timesteps=")][-1:]
    check_resumable(run_dir, budget[0] if budget else None)  # before Hydra logs to the run's run.log
    check_trusted(load_saved(RunPaths(run_dir).config), allowed, str(RunPaths(run_dir).config), ALLOW_TARGET)
    quoted = hydra_quote(str(run_dir.resolve()))
    kept = [a for a in argv if not a.startswith("resume=")]
    return [*kept, f"resume={quoted}", f"hydra.run.dir={quoted}", "hydra.output_subdir=null"]


def job_overrides(overrides: list[str], multirun: bool) -> list[list[str]]:
    """The override list of every job the command runs (a sweep's combinations; capped, see above)."""

    def values(override: Any) -> list[str]:
        if not (multirun and override.is_sweep_override()):
            return [str(override.input_line)]
        check_range(override)
        try:
            found = list(override.sweep_string_iterator())
        except HydraException:  # interval() or glob(): the sweeper draws or lists the values, checked as it runs
            return []
        check_repeats(str(override.input_line), found)
        return [f"{override.get_key_element()}={v}" for v in found]

    parsed = OverridesParser.create().parse_overrides(overrides)
    choices = [found for found in map(values, parsed) if found]
    jobs = list(itertools.islice(itertools.product(*choices), MAX_JOBS_CHECKED + 1))
    if len(jobs) > MAX_JOBS_CHECKED:
        return [[c[min(i, len(c) - 1)] for c in choices] for i in range(max(map(len, choices)))]
    return [list(job) for job in jobs]


def check_repeats(line: str, values: list[str]) -> None:
    """A swept key lists each value once: Hydra would run the same job twice (training it twice over, in two
    directories), and the comparison counts a configuration and seed once."""
    repeated = [value for value, count in Counter(values).items() if count > 1]
    if repeated:
        raise ConfigError(
            f"{line}: {', '.join(repeated[:5])} given more than once; a sweep runs each value once "
            "(lander.reproduce trains a run again to check that it reproduces)"
        )


def check_booleans(cfg: DictConfig, overrides: list[str]) -> None:
    """A true/false key given anything but true or false is refused: OmegaConf would take ``log_grad_norm=2`` or
    ``=yes`` as true.

    :param cfg: the job's config, ``overrides`` applied
    :param overrides: the job's value overrides (``key=value``)
    """
    keys = {o: o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    flags = [o for o, key in keys.items() if isinstance(OmegaConf.select(cfg, key, default=None), bool)]
    for override in OverridesParser.create().parse_overrides(flags):  # only these parsed again: 2,000 seeds stay fast
        key, value = override.get_key_element().lstrip("+"), override.value()
        if not override.is_delete() and not isinstance(value, bool):
            raise ConfigError(f"{key}={value!r} is not allowed: {key} must be true or false")


def check_range(override: Any) -> None:
    """A ``range(start, stop[, step])`` sweep must have finite bounds, a step other than 0, and at least one value
    (Hydra fails on a step of 0 with a traceback and runs an empty sweep for ``range(0, 10, -1)``)."""
    value = override.value()
    if not isinstance(value, RangeSweep):
        return
    line = str(override.input_line)
    start, stop, step = value.start, value.stop, value.step if value.step is not None else 1
    finite = [b for b in (start, stop, step) if isinstance(b, int | float) and math.isfinite(b)]
    if len(finite) < 3 or step == 0:
        raise ConfigError(f"{line}: range(start, stop, step) takes finite numbers and a step other than 0")
    assert start is not None and stop is not None
    if (stop - start) / step <= 0:
        raise ConfigError(
            f"{line}: that range holds no value (with step {step}, start must be "
            f"{'below' if step > 0 else 'above'} stop)"
        )


def check_chosen(argv: list[str], full: DictConfig, multirun: bool, jobs: list[list[str]]) -> None:
    """What the command's jobs choose, over all of them: options that are the ones used (:func:`check_shadowed`),
    and a comparison that can be made (:func:`check_comparison`)."""
    check_shadowed(full, jobs)
    check_comparison(argv, full, multirun, jobs)


def check_shadowed(full: DictConfig, jobs: list[list[str]]) -> None:
    """No option a job chooses (``env=cartpole``, or a default: ``env=lunar_lander``) is in a folder of the search
    path besides lander's (``./conf/env/cartpole.yaml``) as well as in lander's: Hydra finds lander's packaged
    option first, so that file was not used, without a word (a user editing "their" cartpole trained lander's).

    :param full: the command's config with its ``hydra`` node (the search path's folders, the defaults chosen)
    :param jobs: each job's overrides (the options a sweep chooses)
    """
    folders = [Path(s.path) for s in full.hydra.runtime.config_sources if s.schema == "file" and s.provider != "main"]
    if not folders:
        return
    chosen = {(str(group), str(option)) for group, option in full.hydra.runtime.choices.items() if option is not None}
    for override in {override for job in jobs for override in job}:  # a sweep's seeds repeat the rest
        if is_group_choice(override) and "," not in override:
            group, _, option = override.lstrip("+~").partition("=")
            chosen.add((group, option))
    for group, option in sorted(chosen):
        if group.startswith("hydra/") or not (CONF_DIR / group / f"{option}.yaml").is_file():
            continue
        for folder in folders:
            if (theirs := folder / group / f"{option}.yaml").is_file():
                raise ConfigError(
                    f"{group}={option}: {theirs} is not used: lander's own {group}/{option}.yaml is found first on "
                    f"Hydra's search path, so this would run lander's without a word; give yours another name "
                    f"({theirs.parent / f'my_{option}.yaml'}) and choose that"
                )


def is_group_choice(override: str) -> bool:
    """``algo=ppo``, ``experiment=x``, ``hydra/launcher=basic``, ``+mygroup=x`` (a group of your ``./conf``): an
    override that chooses config files, composed by Hydra rather than applied as a value."""
    key = override.split("=", 1)[0]
    bare = key.lstrip("+~")
    return "/" in bare or (CONF_DIR / bare).is_dir() or (key.startswith("+") and "." not in bare)


def with_values(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """``cfg`` with the value overrides applied as Hydra applies them after composing (``key=``, ``+key=``,
    ``++key=``, ``~key``; typed by the schema): a sweep's jobs that differ only in values are checked without
    composing each, so that 2,000 seeds take seconds. Plain ``key=value`` overrides are applied to ``cfg`` itself
    (every job of a sweep sets the same keys, so each overwrites the last job's values); others to a copy."""
    job = cfg if all(o[:1] not in "+~" for o in overrides) else copy.deepcopy(cfg)
    ConfigLoaderImpl._apply_overrides_to_config(OverridesParser.create().parse_overrides(overrides), job)
    return job


def check_jobs(
    argv: list[str], lock: AbstractContextManager[Any] = NO_LOCK, allowed: Sequence[str] | None = None
) -> None:
    """Compose and validate the config of every job of the command; raise :class:`ConfigError` on the first bad one.

    A command Hydra itself cannot parse or compose is refused with Hydra's message in one line (:func:`hydra_message`).

    :param lock: held around each composition (Hydra's state is global), never longer: the service's other
        requests wait for one composition at most
    :param allowed: where set (the service, or a run it started: :data:`lander.config.trust.ALLOW_ENV`), every
        composed config must pass :func:`lander.config.trust.check_trusted` with these prefixes before anything
        it names (an env's module, a model class) is imported by the checks
    """
    multirun = any(a in ("-m", "--multirun") for a in argv)
    overrides = [a for a in without_flags(argv) if not a.startswith("hydra.")]
    search = [a for a in argv if a.startswith("hydra.searchpath=")]
    check_n_jobs(argv)
    register_configs()
    try:
        OverridesParser.create().parse_overrides([a for a in without_flags(argv) if a.startswith("hydra.")])  # Hydra's
        # own keys, parsed as Hydra will (hydra.run.dir=my runs/é: a traceback of Hydra's after the checks, exit 1)
        with lock, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            sweeper = [a for a in argv if a.startswith("hydra.sweeper.") and "=" in a]  # its keys, checked below
            swept, full = preset_sweeps([*search, *sweeper], overrides)
            check_preset_sweep_keys(swept, overrides, str(full.algo.name))
            trusted(full, allowed)  # Hydra's node too: its callbacks, launcher and sweeper are instantiated
            check_output_dir(argv, full, multirun)
            check_sweep_mode(argv, full, multirun, swept)
            jobs = job_overrides([*swept, *overrides] if multirun else overrides, multirun)
            check_chosen(argv, full, multirun, jobs)
        single = not multirun and single_values(overrides) == overrides  # one job: composed above, values and all
        if single:
            with open_dict(full):
                del full["hydra"]
        composed, needs = check_each_job(argv, jobs, full, single, search, lock, allowed)
        if multirun:  # each choice of config files composed once: the envs of the jobs are theirs
            check_jobs_at_once(argv, full, needs, list(dict.fromkeys(str(c.env.name) for c in composed.values())))
    except (HydraException, OmegaConfBaseException, ValueError, yaml.YAMLError) as exc:
        if isinstance(exc, ConfigError):
            raise
        if isinstance(exc, yaml.YAMLError):  # a config file of one's own (./conf) that YAML cannot read
            raise ConfigError(yaml_message(exc)) from exc
        explain_key_to_add(str(exc), search, overrides, lock, allowed)
        raise ConfigError(hydra_message(exc)) from exc  # Hydra's own words, in one line (exit 2, nothing written)


MEMORY_NEUTRAL = ("seed=", "gamma=", "total_timesteps=", "baseline=", "run_name=", "torch_threads=", "logger", "video")
"""Overrides that leave :func:`lander.config.checks.memory_needed` as it is: jobs that differ only by them (a sweep
over seeds, gammas) share one estimate (about 1 ms a job to make: 2 s of a 2,000-seed precheck)."""


def check_job(cfg: DictConfig, job: list[str], needs: dict[tuple[str, ...], list[float]], here: bool = True) -> None:
    """Every check of one job's composed config; its estimate (:func:`lander.config.checks.memory_needed`, the bytes
    its largest allocations take) added to ``needs`` for :func:`check_jobs_at_once`.

    :param needs: the estimates so far, once for each job, by the job's overrides other than :data:`MEMORY_NEUTRAL`
        ones (jobs that differ only by those share one estimate)
    :param here: the job trains on this machine (not on SLURM's or Ray's nodes): its threads fit this machine's cores
    """
    check_booleans(cfg, [o for o in job if not is_group_choice(o)])
    validate(cfg)
    if here:
        check_threads(cfg)
    if any(o.startswith("+algo.model.") for o in job):  # keys the algorithm's config does not have:
        check_model_keys(cfg)  # against the class (imports torch: not done for other commands)
    if cfg.get("callbacks"):  # yours: each job built them, and each failed there
        check_callback_keys(cfg)
    if any("algo.model.policy_kwargs" in o for o in job):  # against the policy class (imports torch)
        check_policy_kwargs(cfg)
    key = tuple(o for o in job if not o.lstrip("+").startswith(MEMORY_NEUTRAL))
    found = needs.setdefault(key, [])
    found.append(found[0] if found else sum(memory_needed(cfg).values()))


def check_each_job(
    argv: list[str],
    jobs: list[list[str]],
    full: DictConfig,
    single: bool,
    search: list[str],
    lock: AbstractContextManager[Any],
    allowed: Sequence[str] | None,
) -> tuple[dict[tuple[str, ...], DictConfig], dict[tuple[str, ...], list[float]]]:
    """:func:`check_job` for each of ``jobs`` (:func:`check_jobs`); the configs composed for each choice of config
    files, and the jobs' estimates of memory.

    :param full: the command's config, composed whole (with ``hydra``: its launcher, for a sweep)
    :param single: ``full`` is the one job's config (a command of one job); else each choice of config files is
        composed once and a job's values applied to it (:func:`with_values`)
    """
    multirun = any(a in ("-m", "--multirun") for a in argv)
    warned: set[str] = set()  # the env ids :func:`warn_env_kept` has warned of
    composed: dict[tuple[str, ...], DictConfig] = {}
    group_envs: dict[tuple[str, ...], DictConfig] = {}  # each choice of config files' env, as its files give it
    needs: dict[tuple[str, ...], list[float]] = {}  # the jobs' memory_needed (check_job), for a sweep
    for i, job in enumerate(jobs):
        groups = tuple(o for o in job if is_group_choice(o))
        renamed = any(o.lstrip("+").startswith("env.id=") for o in job)
        if (renamed or not single) and groups not in composed:  # once for each choice of config files (~0.1 s)
            composed[groups], group_envs[groups] = compose_files([*search, *groups], lock)
        cfg = full if single else with_values(composed[groups], [o for o in job if o not in groups])
        if not single:
            trusted(cfg, allowed)
        check_job(cfg, job, needs, here=not multirun or launcher_choice(full) not in REMOTE_LAUNCHERS)
        if renamed:
            warn_env_kept(group_envs[groups], cfg.env, job, warned)
        if i == 0:
            check_trackers(cfg)  # online W&B that cannot be reached fails now, not after a minute
            check_grouping(argv, full, cfg, multirun)
    return composed, needs


def compose_files(overrides: list[str], lock: AbstractContextManager[Any]) -> tuple[DictConfig, DictConfig]:
    """The config Hydra composes from the config files ``overrides`` choose, and a copy of its ``env`` node (kept as
    the files give it: a sweep's jobs apply their values to the config itself, :func:`with_values`)."""
    with lock, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return cfg, copy.deepcopy(cfg.env)


def warn_env_kept(group_env: DictConfig, env: DictConfig, job: list[str], warned: set[str]) -> None:
    """A warning, once for each env id, where ``env.id=`` replaces the env config's id but the job keeps that config's
    name and reward threshold: ``env.id=CartPole-v1`` on the default ``env=lunar_lander`` trained CartPole in a run
    named ``ppo_lunar_lander_seed-0``, labelled ``lunar_lander`` in comparisons, its success rate counted against
    LunarLander's 200, without a word.

    :param group_env: the ``env`` node as the job's config files give it (before its ``key=value`` overrides)
    :param env: the job's ``env`` node
    :param job: the job's overrides
    """
    given = {o.lstrip("+").split("=", 1)[0] for o in job}
    if str(env.id) == str(group_env.id) or str(env.id) in warned:
        return
    kept, instead = [], []
    if "env.name" not in given:
        kept.append(f"its name ({group_env.name}: the run's directory, its label in comparisons)")
        instead.append("env.name=" + re.sub(r"\W+", "_", str(env.id).rpartition(":")[2]).strip("_").lower())
    if group_env.get("reward_threshold") is not None and "env.reward_threshold" not in given:
        kept.append(f"its reward_threshold ({group_env.reward_threshold}: success rates, the steps to reach it)")
        instead.append("env.reward_threshold=R (null for none)")
    if kept:
        warned.add(str(env.id))
        log.warning(
            "env.id=%s replaces env=%s's %s and keeps %s: set %s, or give the env a config of its own (conf/env/, "
            "docs/configuration.md)",
            env.id,
            group_env.name,
            group_env.id,
            " and ".join(kept),
            " ".join(instead),
        )


def check_jobs_at_once(
    argv: list[str], full: DictConfig, needs: dict[tuple[str, ...], list[float]], envs: list[str]
) -> None:
    """What a sweep's jobs are together: an AdaStop sweep's or a search's on one env (:func:`check_one_env`); a
    warning where the jobs it runs at once on this machine may not fit in its memory
    (:func:`lander.config.checks.sweep_memory_warning`).

    :param full: the sweep's composed config, with ``hydra`` (its launcher and sweeper)
    :param needs: each job's :func:`lander.config.checks.memory_needed`, in bytes (:func:`check_job`)
    :param envs: the envs the jobs train on (``env.name``), each once
    """
    check_one_env(full, envs)
    given = [int(v) for v in given_values(argv, "hydra.launcher.n_jobs")[-1:]]
    launcher = full.hydra.launcher
    n_jobs = given[0] if given else int(launcher.get("n_jobs", -1))
    seeds = int(full.get("seeds_per_process") or 1)
    each = [n for same in needs.values() for n in same]
    warning = sweep_memory_warning(str(launcher.get("_target_", "")).rpartition(".")[2], n_jobs, each, seeds)
    if warning is not None:
        log.warning("%s", warning)


QUOTES = ("'", '"')


def hydra_message(exc: BaseException) -> str:
    """Hydra's error in one line: the message, the options it lists (not its search path), and the cause (its
    type where neither has words: a MemoryError while composing)."""
    text = str(exc).split("Config search path:")[0]
    if (unknown := UNKNOWN_IN_FILE.match(text)) is not None:  # a key a config file sets, none of the schema's
        return f"{unknown['file']}: {unknown_key_in_file(unknown['key'])}"
    if (wrong := WRONG_IN_FILE.match(text)) is not None:  # a value a config file sets that its key's type refuses
        return f"{wrong['file']}: {wrong['key']}: {wrong['what']}"
    lines = [line.strip() for line in text.splitlines() if line.strip()] or [type(exc.__cause__ or exc).__name__]
    message = lines[0] + (
        f"; {lines[1]} {', '.join(lines[2:])}" if len(lines) > 2 else "".join(f"; {line}" for line in lines[1:2])
    )
    override = getattr(exc, "override", None)  # Hydra's parse error keeps the override it could not parse
    if isinstance(exc, OverrideParseException) and override:
        key, _, value = str(override).partition("=")
        odd = "=" in value or not value.isascii() or any(c.isspace() for c in value)
        quoted = f' (a value that holds "=", spaces or letters beyond ASCII is quoted: "{key}=\'{value}\'")'
        message = f"{override}: {message}{quoted if odd and not value.startswith(QUOTES) else ''}"
    cause = exc.__cause__
    if cause is not None and str(cause).strip():
        message += f": {str(cause).strip().splitlines()[0]}"  # e.g. "Value 'x' could not be converted to Integer"
    return message + whole_number_hint(message)


UNKNOWN_IN_FILE = re.compile(  # Hydra's words for a config file's key that its schema's dataclass lacks
    r"(?P<file>In '[^']+'): ConfigKeyError raised while composing config:\s*Key '[^']+' not in '\w+'\s*"
    r"full_key: (?P<key>[\w.]+)"
)
WRONG_IN_FILE = re.compile(  # and for a value of one that its type refuses
    r"(?P<file>In '[^']+'): \w+ raised while composing config:\s*(?P<what>.+?)\s*full_key: (?P<key>[\w.]+)", re.S
)


def yaml_message(exc: yaml.YAMLError) -> str:
    """A config file YAML cannot read, in one line: the file, where, and what YAML found there."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "a config file"
    problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
    return f"{where}: not valid YAML: {problem}"


FLOAT_FOR_INT = re.compile(
    r"override ([\w.]+)=\S+: Value '([-+0-9.e]+)' of type 'float' could not be converted to Integer"
)


def whole_number_hint(message: str) -> str:
    """How to write a whole number Hydra read as a float (``total_timesteps=1e6``, as SB3's examples write budgets):
    an integer key refuses it; empty for any other message."""
    found = FLOAT_FOR_INT.search(message)
    if found is None or not float(found[2]).is_integer():
        return ""
    key, value = found[1], int(float(found[2]))
    grouped = f" or {key}={value:_}" if abs(value) >= 10_000 else ""
    return f"; an integer key: write {key}={value}{grouped}"


def trusted(cfg: DictConfig, allowed: Sequence[str] | None) -> None:
    """:func:`lander.config.trust.check_trusted` where ``allowed`` is set (the service's runs), else nothing."""
    if allowed is not None:
        check_trusted(cfg, allowed)


def explain_key_to_add(
    error: str,
    search: list[str],
    overrides: list[str],
    lock: AbstractContextManager[Any] = NO_LOCK,
    allowed: Sequence[str] | None = None,
) -> None:
    """Hydra's "Could not override 'algo.model.X'" (X not in the algorithm's config), or 'env.kwargs.X', said in
    lander's words: a parameter the model class (the env) does not take, with the closest names, or one it takes, to
    add with ``+``."""
    found = re.search(r"Could not override '((?:algo\.model|env\.kwargs)\.[\w.]+)'", error)
    if not found:
        return
    key = found.group(1)
    added = [f"+{o}" if o.split("=", 1)[0] == key else o for o in single_values(overrides)]
    try:
        with lock, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=[*search, *added])
    except (HydraException, OmegaConfBaseException):
        return  # something else is wrong too: Hydra reports it
    trusted(cfg, allowed)  # before the model class is imported
    value = next((o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == key), "...")
    if key.startswith("env.kwargs."):
        check_env_kwargs(str(cfg.env.id), OmegaConf.to_container(cfg.env.kwargs, resolve=True))  # type: ignore[arg-type]
        raise ConfigError(
            f"{key} is a parameter of {cfg.env.id} that env={cfg.env.name} does not set; add it with a '+': "
            f"+{key}={value}"
        )
    check_model_keys(cfg)  # raises for a name the model class does not take
    policy = key.startswith("algo.model.policy_kwargs.")
    if policy:
        check_policy_kwargs(cfg)  # or its policy class
    owner = f"the policy of {cfg.algo.model._target_}" if policy else cfg.algo.model._target_
    raise ConfigError(
        f"{key} is a parameter of {owner} that algo={cfg.algo.name} does not set; add it with a '+': +{key}={value}"
    )


def check_preset_sweep_keys(swept: list[str], overrides: list[str], algo: str) -> None:
    """The keys a preset sweeps (its ``hydra.sweeper.params``) are keys of the config, as the command line's are
    (:func:`lander.config.keys.check_override_keys`): a preset's ``gama: 0.9,0.99`` got Hydra's "Could not override
    'gama'. To append to your config use +gama=0.9", advice lander then refuses. ``algo``: the preset's algorithm,
    whose parameters the advice names."""
    try:
        check_override_keys([f"algo={algo}", *swept])
    except ConfigError as exc:
        preset = next((o for o in overrides if o.split("=", 1)[0] in ("experiment", "hparams_search")), "a preset")
        raise ConfigError(f"{preset}'s hydra.sweeper.params: {exc}") from None


def preset_sweeps(search: list[str], overrides: list[str]) -> tuple[list[str], DictConfig]:
    """The basic sweeper's ``hydra.sweeper.params`` of a preset (``experiment=...``), as overrides that the
    command line's own overrides of the same keys replace (AdaStop's too, but its seeds, which it chooses); and the
    config composed with the command line's single values (its ``hydra`` node included, with ``search``: the
    search path and the sweeper's keys), which is a single run's whole config."""
    plain = single_values(overrides)
    cfg = compose(config_name="config", overrides=[*search, *plain], return_hydra_config=True)
    target = str(cfg.hydra.sweeper.get("_target_", ""))
    if "BasicSweeper" not in target and not target.endswith(ADASTOP):  # basic, lander's checked one, AdaStop
        return [], cfg
    given = {o.split("=", 1)[0] for o in overrides} | ({"seed"} if target.endswith(ADASTOP) else set())
    return [f"{k}={v}" for k, v in (cfg.hydra.sweeper.get("params") or {}).items() if k not in given], cfg


ADASTOP = ".AdaStopSweeper"  # hydra/sweeper=adastop (lander.sweeps.adastop)
ADASTOP_SCORES = ("final_mean", "success_rate", "auc")  # what a run's score may be (lander.analysis.sequential)


def check_adastop(argv: list[str], cfg: DictConfig, multirun: bool, jobs: list[list[str]]) -> None:
    """``hydra/sweeper=adastop``: its keys in range (n >= 2, K >= 1, 0 < alpha < 1, B >= 1000, a known score), a
    sweep (--multirun) of at least two configurations, no seed given (the sweeper chooses the seeds), no
    ``hparams_search`` (another sweeper), and a ``baseline`` that names one configuration."""
    node = cfg.hydra.sweeper
    if not str(node.get("_target_", "")).endswith(ADASTOP):
        return
    if not multirun:
        raise ConfigError("hydra/sweeper=adastop runs a sweep: add --multirun")
    for key, low, what in (("n", 2, "seeds per configuration per interim"), ("K", 1, "interims"), ("B", 1000,
                           "random permutations")):  # fmt: skip
        value = node.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ConfigError(
                f"hydra.sweeper.{key}={value!r} is not allowed: {key} ({what}) must be an integer >= {low}"
            )
    alpha = node.get("alpha")
    if not isinstance(alpha, int | float) or isinstance(alpha, bool) or not 0 < alpha < 1:
        raise ConfigError(
            f"hydra.sweeper.alpha={alpha!r} is not allowed: alpha (the family-wise error) must be in (0, 1)"
        )
    if node.get("score") not in ADASTOP_SCORES:
        raise ConfigError(
            f"hydra.sweeper.score={node.get('score')!r} is not allowed: one of {', '.join(ADASTOP_SCORES)}"
        )
    if any(a.split("=", 1)[0].lstrip("+~") == "seed" for a in without_flags(argv)):
        raise ConfigError(
            "seed: hydra/sweeper=adastop chooses the seeds (0..n-1 at the first interim, n..2n-1 at the second, "
            "...); remove seed= from the command"
        )
    if any(a.split("=", 1)[0].lstrip("+~") == "hparams_search" for a in argv):
        raise ConfigError("hparams_search is a search of its own (Optuna's sweeper): not with hydra/sweeper=adastop")
    configurations = {tuple(o for o in job if o.split("=", 1)[0].lstrip("+~") != "seed") for job in jobs}
    if len(configurations) < 2:
        raise ConfigError(
            "hydra/sweeper=adastop compares configurations: sweep at least two (e.g. algo=ppo,a2c or gamma=0.99,0.999)"
        )
    baseline = node.get("baseline")
    if baseline is not None:
        named = [c for c in configurations if set(str(baseline).split()) <= set(c)]
        if len(named) != 1:
            raise ConfigError(
                f"hydra.sweeper.baseline={baseline!r} must name one configuration of the sweep (its overrides, "
                f"e.g. algo=ppo); it names {len(named)}"
            )


def check_one_env(cfg: DictConfig, envs: list[str]) -> None:
    """A sweep whose sweeper weighs the configurations' scores against each other trains on one env: AdaStop
    (``hydra/sweeper=adastop``) tests every configuration against the others, and Optuna's search
    (``hparams_search``) keeps the trial of the largest score, searching a command line's list of envs as a
    hyperparameter. Returns of different envs are not on one scale (LunarLander's -600 to 300, CartPole's 0 to
    500); the comparison never weighs one env's against another's."""
    if len(envs) < 2:
        return
    target, listed = str(cfg.hydra.sweeper.get("_target_", "")), f"{len(envs)} envs ({', '.join(envs)})"
    if target.endswith(ADASTOP):
        raise ConfigError(
            f"hydra/sweeper=adastop tests the sweep's configurations against each other, and its jobs train on "
            f"{listed}, whose returns are not on one scale: sweep one env at a time (an AdaStop sweep an env)"
        )
    if target.endswith(OPTUNA):
        raise ConfigError(
            f"hparams_search: Optuna would search over {listed} as a hyperparameter, and the best trial would be the "
            "env of the largest returns: give one env (a search an env)"
        )


def check_comparison(argv: list[str], cfg: DictConfig, multirun: bool, jobs: list[list[str]]) -> None:
    """What a sweep is asked to compare: AdaStop's settings (:func:`check_adastop`), the baseline
    (:func:`check_baseline`)."""
    check_adastop(argv, cfg, multirun, jobs)
    check_baseline(cfg, multirun, jobs)


def check_baseline(cfg: DictConfig, multirun: bool, jobs: list[list[str]]) -> None:
    """A sweep's ``baseline`` must be the label of one of its configurations in every env it trains, as the comparison
    labels them (:func:`lander.config.schema.labels`: the overrides in which a configuration differs from the
    others of its env, the seed and keys that change nothing left out). One that named none was found only once
    every job had trained; the comparison then tested against the first configuration."""
    baseline = cfg.get("baseline")
    if not multirun or baseline is None:
        return
    if math.prod(len(set(values)) for values in zip(*jobs, strict=True)) != len(jobs):
        return  # not every combination: beyond MAX_JOBS_CHECKED jobs, job_overrides gives some of them
    by_env: dict[str, dict[tuple[str, ...], None]] = {}  # each env's configurations, in order, once each
    for job in jobs:
        env = next((o for o in reversed(job) if o.lstrip("+").startswith("env=")), "")
        by_env.setdefault(env, {})[configuration_key(job)] = None
    for env, keys in by_env.items():
        named = list(labels(list(keys)).values())
        if str(baseline) not in named:
            where = f" of {env}" if env else ""
            listed = ", ".join(repr(n) for n in named[:6]) + (", ..." if len(named) > 6 else "")
            raise ConfigError(
                f"baseline={baseline!r} names no configuration{where} of this sweep, which the comparison names "
                f"{listed}: give one of them, quoted (\"baseline='{named[0]}'\"), or baseline=null for the first"
            )


def check_output_dir(argv: list[str], cfg: DictConfig, multirun: bool) -> None:
    """:func:`check_writable` for the directory the command writes to: ``hydra.run.dir`` (``hydra.sweep.dir`` for a
    sweep) as given on the command line, or as composed into ``cfg`` (its ``hydra`` node)."""
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    given = given_values(argv, key)
    node = OmegaConf.to_container(cfg.hydra.sweep if multirun else cfg.hydra.run, resolve=False)
    assert isinstance(node, dict)  # its dir unresolved: ${now:...} as it is
    directory = given[-1] if given else str(node["dir"])
    if directory.startswith(CLAIM) and directory.endswith("}"):  # lander's default: the name it claims
        directory = directory[len(CLAIM) : -1]
    if "${" not in directory:  # r4/x/.. is r4, the run Hydra would write in (making r4/x on its way there)
        directory = os.path.normpath(directory)
    check_writable(directory, key)
    check_not_in_a_run(directory, key, given == [])
    check_own_directory(directory, key, multirun)
    if not multirun and RunPaths(directory).is_run() and "${" not in directory:
        check_same_run(RunPaths(directory), [a for a in without_flags(argv) if not is_hydra_override(a)], key)


CLAIM = f"${{{CLAIM_RESOLVER}:"  # lander's default directories (config.yaml: lander.storage.rundir.claim_directory)


def given_values(argv: list[str], key: str) -> list[str]:
    """Each value the command line gives ``key`` (``key=value``, quotes around the value taken off), in order."""
    return [a.split("=", 1)[1].strip("'\"") for a in argv if a.startswith(f"{key}=")]


def check_writable(directory: str, key: str) -> None:
    """Hydra can make the run's (or sweep's) directory ``directory`` (given as ``key``): the nearest part of it that
    exists (up to its first ``${...}``) is a directory this process may write in, not a file, nor on a read-only
    file system."""
    path = Path(directory.split("${", 1)[0] or ".").absolute()
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    if not path.is_dir():
        raise ConfigError(f"{key}={directory}: {path} is a file, not a directory: nothing can be written under it")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{key}={directory}: {path} is not writable (permissions, or a read-only file system); "
            f"give {key}=<a directory you can write to>"
        )


def check_not_in_a_run(directory: str, key: str, default: bool) -> None:
    """``directory`` (a run's or a sweep's, to be made) is not inside a run's directory: ``lander.compare``,
    ``lander.report`` and the dashboard would take the new run for one of that run's folder of runs.

    :param default: the config's directory (relative to the working directory), not one given on the command line
    """
    path = Path(directory.split("${", 1)[0] or ".").resolve()  # <run>/x/.. is the run itself, not inside it
    # a run lander made: another Hydra app's .hydra/ above a project (hydra.run.dir=. there) does not stop lander's
    # runs below it
    run = enclosing_run(path.parent)
    if run is not None:
        where = "run the command from outside it, or give" if default else "give"
        raise ConfigError(
            f"{key}={directory} is inside the run {run}: a run's directory holds that run's files only; "
            f"{where} {key}=<a directory outside it>"
        )


def check_contained(directory: Path, key: str) -> None:
    """A run or sweep directory continued here (a resume, a re-run) holds no link out of it and no FIFO
    (:func:`lander.storage.rundir.escaping_entry`): a downloaded run's ``run.log`` linked to a file of yours would
    be appended to, its ``metrics/`` files copied into the run. ``checkpoints/`` is left to the resume, which opens
    regular files only and passes over any other checkpoint."""
    found = escaping_entry(directory, checked_when_read=frozenset({"checkpoints"}))
    if found is not None:
        path, why = found
        raise ConfigError(
            f"{key}={directory}: {path.relative_to(directory)} {why} (to {os.path.realpath(path)}): lander does "
            "not write into a run through it; remove it, or copy the run without it"
        )


def check_own_directory(directory: str, key: str, multirun: bool) -> None:
    """Refuse an existing ``directory`` that holds files of its own: a run writes its files at the top of its
    directory, and a re-run moves a failed attempt's aside (:func:`lander.sweeps.rerun.set_aside`), so neither may
    start among a user's files (``hydra.run.dir=.`` in a project, ``~``, ``/etc``).

    A run's directory may be a run's (``.hydra/config.yaml``: a re-run) or hold only what a run writes
    (:data:`lander.storage.rundir.RUN_ENTRIES`). A sweep's may be a sweep's (``multirun.yaml``, an Optuna study, a
    run among its folders) or hold only what a sweep writes (:data:`lander.storage.rundir.SWEEP_ENTRIES`). A
    directory named with ``${...}`` (the default, by the time) is a new one."""
    path = Path(directory)
    if "${" in directory or not path.is_dir():
        return
    if multirun:
        try:
            names = [p.name for p in path.iterdir()]
        except OSError:
            return
        if {"multirun.yaml", "optuna.db"} & set(names) or any(RunPaths(path / n).is_run() for n in names):
            check_contained(path, key)  # its jobs are continued or re-run in it
            check_free(path, SweepLock)  # but not while the sweep still runs there
            return
        foreign = foreign_entries(path, SWEEP_ENTRIES)
        what, does = "a lander sweep directory (no multirun.yaml)", "a sweep would write its jobs and its comparison"
    else:
        if RunPaths(path).is_run():
            check_contained(path, key)  # the same command continues it
            return
        foreign = foreign_entries(path)
        what, does = "a lander run directory (no .hydra/config.yaml)", "a run would write its files"
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise ConfigError(
            f"{key}={directory} holds files of its own ({shown}) and is not {what}: {does} among them; "
            f"give {key}=<a new or empty directory>"
        )


def same_overrides(before: object, now: object) -> bool:
    """The same overrides in another order (each key given once, so that the order changes nothing but the
    numbering of the jobs)."""
    if not isinstance(before, list) or not isinstance(now, list) or sorted(map(str, before)) != sorted(map(str, now)):
        return False
    keys = [str(o).split("=", 1)[0] for o in now]
    return len(set(keys)) == len(keys)


def is_hydra_override(override: str) -> bool:
    """An override of Hydra's own config (``hydra.run.dir=...``, ``hydra/launcher=...``), which Hydra does not
    save among a run's overrides (``.hydra/overrides.yaml``)."""
    key = override.split("=", 1)[0].lstrip("+~")
    return key == "hydra" or key.startswith(("hydra.", "hydra/"))


def check_same_run(paths: RunPaths, overrides: list[str], key: str) -> None:
    """A command whose ``hydra.run.dir`` is a run's directory continues that run (skipped if it completed, resumed
    or started again: :func:`lander.sweeps.rerun.continue_job`), so it must be that run's command: its overrides
    (``.hydra/overrides.yaml``), in any order. Another command is refused before Hydra writes its config over the
    run's."""
    try:
        before = safe_yaml(paths.overrides.read_text(), str(paths.overrides))
    except (OSError, yaml.YAMLError, ValueError):
        before = None
    if not same_overrides(before, overrides):
        saved = " ".join(map(str, before)) if isinstance(before, list) else f"{paths.overrides.name} unreadable"
        now = " ".join(overrides) or "none"
        raise ConfigError(
            f"{key}={paths.root} holds a run of other overrides ({saved or 'none'}; now: {now}): the same command "
            f"continues it, resume={paths.root} trains it further; give another {key} for this one"
        )


CONFIG_FLAGS = ("--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd")  # Hydra's (refused)
FLAGS_WITH_VALUES = ("--cfg", "-c", "--package", "-p", *CONFIG_FLAGS, "--experimental-rerun")  # Hydra's, and a value


PRINT_ONLY = ("--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help")
MODES = (("--run", "-r"), ("--multirun", "-m"), ("--cfg", "-c"), ("--info", "-i"), ("--shell-completion", "-sc"))


FIXED_HYDRA_KEYS = {  # Hydra's keys that name a run's files, which lander's commands find by these names
    "hydra.job.name": "it names the run's log, run.log (hydra.job.name=../x wrote ../x.log, out of the run)",
    "hydra.output_subdir": "it names the folder of the run's saved config, .hydra/, by which compare, report, "
    "evaluate and resume know a run",
    "hydra.sweep.subdir": "it names each job's directory, <sweep>/<job number>, by which a re-run of the sweep finds "
    "and completes its jobs (hydra.sweep.subdir=x put every job in one directory, where each run overwrote the last)",
}


def check_fixed_hydra_keys(argv: list[str]) -> None:
    """Hydra's keys that lander's file layout depends on (:data:`FIXED_HYDRA_KEYS`) are not set on the command
    line."""
    for arg in argv:
        key = arg.split("=", 1)[0].lstrip("+~")
        if key in FIXED_HYDRA_KEYS:
            raise ConfigError(f"{arg}: lander keeps {key} as it is: {FIXED_HYDRA_KEYS[key]}")


def check_swept_values(argv: list[str]) -> None:
    """Values to sweep (``seed=0,1,2``) are refused by ``--cfg`` and ``--info``, which print one job's config
    (a run without ``--multirun`` refuses them too: :func:`check_sweep_mode`). In a sweep, a swept key is given
    once: Hydra's sweeper keeps the last override of a key without a word (``seed=range(0,3) seed=1,2`` ran seeds 1
    and 2). Two single values of a key stay Hydra's: the last one wins, as scripts that add to a command rely on."""
    try:
        parsed = OverridesParser.create().parse_overrides(without_flags(argv))
    except HydraException:  # a malformed override: Hydra's words in one line, from check_jobs
        return
    if not {"-m", "--multirun"} & set(argv):
        swept = next((o for o in parsed if o.is_sweep_override()), None)
        if swept is not None and set(argv) & {"--cfg", "-c", "--info", "-i"}:  # Hydra's help prints as it is
            raise ConfigError(
                f"{swept.input_line} sweeps its values, a job each; --cfg and --info print one job's config: give "
                "it one value"
            )
        return  # the other commands: check_sweep_mode, which knows a preset's mode
    given: dict[str, list[Any]] = {}
    for override in parsed:
        given.setdefault(override.get_key_element().lstrip("+~"), []).append(override)
    for key, overrides in given.items():
        if len(overrides) > 1 and any(o.is_sweep_override() for o in overrides):
            lines = " and ".join(str(o.input_line) for o in overrides)
            raise ConfigError(f"{key} is given {len(overrides)} times in a sweep ({lines}): give its values once")


def check_config_flags(argv: list[str]) -> None:
    """None of Hydra's flags that choose another primary config or add a folder to it: lander's checks compose
    ``config.yaml`` with ``./conf`` and any ``hydra.searchpath=``, and Hydra would have run another config than the
    one checked (``--config-dir DIR env=mine`` was refused as "Could not find 'env/mine'", ``--config-name`` ran
    a config nothing had checked)."""
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if flag in CONFIG_FLAGS:
            raise ConfigError(
                f"{flag}: lander composes its own config (config.yaml) with ./conf of the directory you run from "
                "(./conf/<group>/<name>.yaml: env=<name>, experiment=<name>); hydra.searchpath=[file:///absolute/"
                "folder] adds a folder of configs from elsewhere"
            )


def check_modes(argv: list[str]) -> None:
    """One of Hydra's modes at most (Hydra fails on two with a traceback): ``--multirun --cfg job`` is refused."""
    given = [mode[0] for mode in MODES if set(mode) & set(argv)]
    if len(given) > 1:
        raise ConfigError(
            f"{' and '.join(given)}: only one of --run, --multirun, --cfg, --info and --shell-completion can be given "
            "(--cfg and --info print a config and run nothing)"
        )


def without_flags(argv: list[str]) -> list[str]:
    """The overrides of a command line: Hydra's flags and the values they take (``--cfg hydra``) left out."""
    kept, skip = [], False
    for arg in argv:
        if skip or arg.startswith("-"):
            skip = not skip and arg in FLAGS_WITH_VALUES
            continue
        kept.append(arg)
    return kept


def single_values(overrides: list[str]) -> list[str]:
    """The overrides that give one value (not a sweep: ``a,b``, ``range()``, ``glob()``, ``interval()``...)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    return [str(o.input_line) for o in parsed if not o.is_sweep_override()]


REMOTE_LAUNCHERS = ("submitit_slurm", "ray")  # the jobs train on other machines: their cores are not this one's


def launcher_choice(full: DictConfig) -> str:
    """The sweep's ``hydra/launcher``: the command line's, else a preset's (``override /hydra/launcher: ...``), else
    lander's (``parallel``).

    :param full: the command's config composed with ``hydra`` (:func:`preset_sweeps`)
    """
    return str(full.hydra.runtime.choices.get("hydra/launcher") or "parallel")


def check_n_jobs(argv: list[str]) -> None:
    """``hydra.launcher.n_jobs`` must be a non-zero integer (-1 = one job per core)."""
    for arg in argv:
        if arg.startswith("hydra.launcher.n_jobs="):
            value = arg.split("=", 1)[1]
            number = re.fullmatch(r"-?\d+", value)
            if not number or int(value) == 0:
                raise ConfigError(  # a number as given, other text quoted (as the schema's checks say them)
                    f"hydra.launcher.n_jobs={value if number else repr(value)} is not allowed: it must be a positive "
                    "number of parallel jobs, or -1 for one per CPU core"
                )


def check_sweep_mode(argv: list[str], full: DictConfig, multirun: bool, swept: list[str]) -> None:
    """Values to sweep (``seed=0,1,2``) and a preset that sweeps (``swept``: :func:`preset_sweeps`) run with
    --multirun (or a preset's ``hydra.mode: MULTIRUN``); a sweep's launcher can run here (:func:`check_launcher`); a
    search's keys are in range (:func:`check_search`)."""
    check_search(argv, full)
    if multirun:
        check_launcher(argv, full)
        return
    if full.hydra.get("mode") != RunMode.MULTIRUN:  # a preset's mode runs its sweep without the flag
        overrides = without_flags(argv)
        singles = single_values(overrides)
        if values := [o for o in overrides if o not in singles]:
            raise ConfigError(  # Hydra: "Value 'ChoiceSweep(...)' ... could not be converted to Integer"
                f"{values[0]} sweeps its values, a job each, which needs --multirun: "
                f"python -m lander.run --multirun {shlex.join(argv)}"
            )
    if swept:
        raise ConfigError(
            f"this preset is a sweep ({'; '.join(swept)}) and runs with --multirun: python -m lander.run "
            f"--multirun {' '.join(argv)}  (or give every swept key one value to run a single job)"
        )


OPTUNA = ".OptunaSweeper"  # hparams_search=ppo_optuna's sweeper (hydra-optuna-sweeper)


def check_search(argv: list[str], full: DictConfig) -> None:
    """A search by Optuna's sweeper (``hparams_search=...``): ``n_trials`` and ``n_jobs`` integers >= 1, one
    ``direction`` (``maximize`` or ``minimize``: the objective is one number, the run's final evaluation mean), and
    each searched key one this config has, every value its space may give (a choice's, a range's or an interval's
    ends) a value that key takes (:func:`check_job`). Each was a traceback once the search had made its
    ``optuna.db``: ``algo=a2c`` with PPO's search (A2C has no ``n_epochs``), ``n_trials=0``, ``direction=up``. No
    list of seeds (``seed=0,1``), which Optuna's sweeper would search as a hyperparameter.

    :param full: the command's config composed with ``hydra`` (:func:`preset_sweeps`)
    """
    node = full.hydra.sweeper
    if not str(node.get("_target_", "")).endswith(OPTUNA):
        return
    seeds = [a for a in argv if a.split("=", 1)[0] == "seed" and re.search(r"[,(]", a.split("=", 1)[-1])]
    if seeds:  # Optuna's sweeper searches a value list given on the command line
        raise ConfigError(
            f"{seeds[-1]}: with hparams_search, Optuna would search over the seeds (a trial's score is then its "
            "seed's luck, and the best trial the luckiest seed); a search trains one seed= a trial: give one, and "
            "compare the best configurations over seeds in a sweep of their own"
        )
    for key in ("n_trials", "n_jobs"):
        value = node.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"hydra.sweeper.{key}={value!r} is not allowed: {key} must be an integer >= 1")
    if node.get("direction") not in ("maximize", "minimize"):
        raise ConfigError(
            f"hydra.sweeper.direction={node.get('direction')!r} is not allowed: maximize or minimize (the objective "
            "is the run's final evaluation mean)"
        )
    job = copy.deepcopy(full)
    with open_dict(job):
        del job["hydra"]
    for key, space in (node.get("params") or {}).items():
        if OmegaConf.select(job, str(key), default=MISSING_KEY) is MISSING_KEY:
            raise ConfigError(
                f"hydra.sweeper.params.{key}: this config (algo={job.algo.name}, env={job.env.name}) has no {key}, "
                "which the search sets in every trial: run the search with the algo it was written for, or a search "
                "of your own (./conf/hparams_search/)"
            )
        for value in space_ends(f"{key}={space}"):
            try:
                check_job(with_values(copy.deepcopy(job), [f"{key}={value}"]), [f"{key}={value}"], {})
            except (ConfigError, HydraException, OmegaConfBaseException, ValueError) as exc:
                raise ConfigError(f"hydra.sweeper.params.{key}={space} gives {value}: {hydra_message(exc)}") from None


MISSING_KEY = object()  # OmegaConf.select's default: a key the config lacks


def space_ends(override: str) -> list[str]:
    """The values a search space (``key=choice(...)``, ``range(...)``, ``interval(...)``, ``tag(log, ...)``, or one
    value) may give at its ends: each choice, a range's first and last, an interval's two ends (integers where
    tagged ``int``), as override values."""
    value = OverridesParser.create().parse_overrides([override])[0].value()
    if isinstance(value, ChoiceSweep):
        return [str(v) for v in value.list]
    if isinstance(value, RangeSweep):
        start, stop, step = value.start or 0, value.stop or 0, value.step or 1
        count = math.ceil((stop - start) / step)
        if count < 1:
            raise ConfigError(f"{override}: the range gives no value")
        return [str(v) for v in dict.fromkeys([start, start + (count - 1) * step])]
    if isinstance(value, IntervalSweep):
        return [str(int(v) if "int" in value.tags and v is not None else v) for v in (value.start, value.end)]
    return [str(value)]


def check_launcher(argv: list[str], full: DictConfig) -> None:
    """The sweep's launcher (:func:`launcher_choice`) can run here: ``submitit_slurm`` needs SLURM's ``srun``
    (submitit fails on it after writing the sweep's ``multirun.yaml``); ``ray`` needs Ray installed and, with
    ``hydra.launcher.ray.init.address``, a cluster that answers there."""
    launcher = launcher_choice(full)
    if launcher == "submitit_slurm" and shutil.which("srun") is None:
        raise ConfigError(
            "hydra/launcher=submitit_slurm needs SLURM and this machine has none (no srun on PATH): run the command "
            "on the cluster's login node, or here with lander's launcher (the default) or hydra/launcher=joblib"
        )
    if launcher == "ray":  # the address given, else the preset's (full is composed without hydra.launcher.*=)
        address = OmegaConf.select(full, "hydra.launcher.ray.init.address")
        check_ray(
            given_values(argv, "hydra.launcher.ray.init.address")[-1:] or ([] if address is None else [str(address)])
        )


def check_grouping(argv: list[str], full: DictConfig, cfg: DictConfig, multirun: bool) -> None:
    """``seeds_per_process`` > 1 groups a sweep's seeds into processes: lander's launcher does that, no other."""
    if not multirun or cfg.get("seeds_per_process", 1) == 1:
        return
    launcher = launcher_choice(full)
    if launcher != "parallel":
        chosen = "" if f"hydra/launcher={launcher}" in argv else " (a preset's choice)"
        raise ConfigError(
            f"seeds_per_process={cfg.seeds_per_process} groups the seeds of a sweep into processes, which lander's "
            f"launcher does (hydra/launcher=parallel, the default), not hydra/launcher={launcher}{chosen}"
        )


RAY_PORTS = {"ray": 10001}  # Ray Client's port; a plain HOST:PORT is the cluster's GCS (6379)


def check_ray(addresses: list[str]) -> None:
    """Ray importable, and the cluster at ``addresses[0]`` (if given) reachable: a TCP connection within 5 s to
    ``ray://HOST[:PORT]`` or ``HOST:PORT``; ``auto``: a cluster started on this machine (``ray start --head``)."""
    address = addresses[0] if addresses and addresses[0] not in ("null", "") else None
    if address == "auto":
        if not Path("/tmp/ray/ray_current_cluster").is_file():
            raise ConfigError(
                "hydra.launcher.ray.init.address=auto: no Ray cluster was started on this machine (ray start --head), "
                "nothing was started"
            )
    elif address is not None:
        scheme, _, rest = address.rpartition("://")
        host, _, port = rest.partition(":")
        try:
            with socket.create_connection((host, int(port or RAY_PORTS.get(scheme, 6379))), timeout=5):
                pass
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"hydra.launcher.ray.init.address={address}: no Ray cluster answers there ({exc}); nothing was started"
            ) from None
    if importlib.util.find_spec("ray") is None:
        raise ConfigError('hydra/launcher=ray needs Ray: pip install -c constraints.txt -e ".[ray]"')


def search_folders(argv: list[str]) -> list[Path]:
    """The folders of the command's own configs Hydra composes: those of a ``hydra.searchpath=[...]`` it gives (the
    service gives its root's ``conf/``), else ``./conf`` (``lander/conf/config.yaml``'s search path)."""
    given = [a for a in argv if a.startswith("hydra.searchpath=")][-1:]
    if not given:
        return [Path("conf")]
    try:
        entries = OverridesParser.create().parse_overrides(given)[0].value()
    except HydraException:  # malformed: Hydra says so in one line when the command is composed (check_jobs)
        return []
    listed = entries if isinstance(entries, list) else []
    return [Path(str(e).removeprefix("file://")) for e in listed if str(e).startswith("file://")]


def check_own_conf(argv: list[str]) -> None:
    """The YAML files of the command's own configs (:func:`search_folders`: ``./conf``, a cloned repository's too)
    each read with :func:`lander.storage.yamlfile.check_aliases`'s bound before Hydra composes any: an alias bomb
    there held the command for minutes, allocating, then ended in a traceback. Links are followed, as Hydra follows
    them (your own files), each real folder once; a file that is not YAML is left to Hydra, which says so if it
    composes it."""
    for conf in search_folders(argv):
        check_yaml_folder(conf)


def check_yaml_folder(conf: Path) -> None:
    """:func:`check_own_conf` of one folder."""
    seen: set[str] = set()
    for folder, dirs, files in os.walk(conf, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs.clear()
            continue
        seen.add(real)
        dirs.sort()
        for name in sorted(f for f in files if f.endswith((".yaml", ".yml"))):
            path = Path(folder) / name
            try:
                check_aliases(path.read_text(errors="replace"), str(path))
            except YamlBomb as exc:
                raise ConfigError(str(exc)) from None
            except (yaml.YAMLError, OSError):
                continue


def check_command(
    argv: list[str], lock: AbstractContextManager[Any] = NO_LOCK, allowed: Sequence[str] | None = None
) -> list[str]:
    """All checks of the command line ``argv``; return it as Hydra is to get it.

    :param lock: held around each composition of a job's config (see :func:`check_jobs`)
    :param allowed: the trusted target prefixes (:func:`check_jobs`); None: those of
        :data:`lander.config.trust.ALLOW_ENV` where it is set (a run the service started), else no trust check
        but a resume's (its run's saved config, with the ``allow_target=`` prefixes: :func:`allowed_targets`)
    """
    argv, given = allowed_targets(argv)
    if allowed is None:
        allowed = allowed_prefixes()
    argv = [a[1:] if a.startswith(("+experiment=", "+hparams_search=")) else a for a in argv]
    check_override_keys(argv)
    check_own_conf(argv)
    check_modes(argv)
    check_config_flags(argv)
    check_fixed_hydra_keys(argv)
    check_swept_values(argv)
    if any(a.startswith("resume=") for a in argv):
        return resume_arguments(argv, given if allowed is None else allowed)
    if set(argv) & set(PRINT_ONLY):  # Hydra prints the config or its help and runs nothing
        return argv
    if "-m" not in argv and "--multirun" not in argv:
        for run_dir in given_values(argv, "hydra.run.dir"):
            check_free(Path(run_dir))
    check_jobs(argv, lock, allowed)
    return argv


ALLOW_TARGET = "allow_target=[{}]"  # how lander.run resume= allows a prefix (lander.config.trust.check_trusted)


def allowed_targets(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its ``allow_target=`` overrides, and the prefixes they allow: with ``resume=`` only, what a
    resumed run's saved config may import beyond lander's own targets (``allow_target=[my_envs]``, a list or one)."""
    given = [a for a in argv if a.startswith("allow_target=")]
    if not given:
        return argv, []
    if not any(a.startswith("resume=") for a in argv):
        raise ConfigError(
            f"{given[0]}: allow_target is taken with resume= only (what a resumed run's saved config may import); "
            "a run you compose on the command line imports what you name"
        )
    prefixes: list[str] = []
    for arg in given:
        try:
            value = OverridesParser.create().parse_override(arg).value()
        except HydraException as exc:  # Hydra's grammar: an unclosed bracket, an interpolation
            raise ConfigError(f"{arg}: a module prefix or a list of them, e.g. allow_target=[my_envs]") from exc
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) and re.fullmatch(r"[\w.]+", v) for v in values):
            raise ConfigError(f"{arg}: a module prefix or a list of them, e.g. allow_target=[my_envs]")
        prefixes += [str(v) for v in values]
    return [a for a in argv if not a.startswith("allow_target=")], prefixes


def check_main_command(argv: list[str]) -> list[str]:
    """:func:`check_command` for the command line of this process (``python -m lander.run``), recorded as checked:
    Hydra's sweeper then does not compose every job a second time (:mod:`lander.sweeps.sweeper`)."""
    argv = check_command(argv)
    checked_commands.append(argv)
    return argv
