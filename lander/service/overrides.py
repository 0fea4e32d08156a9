"""What a launch request may ask for: values for lander's config, never code.

Each override is parsed with Hydra's own override parser and accepted only as data:

- keys are dotted names of letters, digits and ``_`` that do not start with ``_`` (``_target_``, ``_args_``,
  ``_partial_`` make Hydra import and call things), not ``hydra.*`` or ``resume``, with no package (``@``),
  deletion (``~``) or forced addition (``++``); ``+`` adds keys under ``algo.model`` and ``env.kwargs`` only;
- a config group (``algo``, ``env``, ``logger``, ``experiment``, ``hparams_search``) takes the options lander ships
  and those of the root's ``conf/`` (:func:`root_conf`), whose YAML files are read with bounds first
  (:func:`check_conf`);
- values are numbers, strings, booleans, null, and lists, dicts and sweeps of them, with no ``$`` anywhere (an
  interpolation or resolver, however escaped or nested, is code: ``${oc.decode:...}`` builds ``_target_`` nodes,
  ``${oc.env:...}`` reads the service's environment), no dict key starting with ``_``, no ``env.id`` naming a module;
- at most :data:`MAX_OVERRIDES` overrides of :data:`MAX_CHARS` characters, a sweep of at most ``max_jobs`` jobs.

Then every job is composed and validated as ``python -m lander.run`` run in the root would (lander's configs and
the root's ``conf/``, given to Hydra by its path, :func:`search_path`, never the service's working directory),
holding the composition lock for one composition at a time, and the composed config must pass
:func:`lander.config.trust.check_trusted`. The launched process gets the same search path.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import yaml
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Glob, Override, OverrideType, RangeSweep
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lander.config.keys import check_override_keys
from lander.config.precheck import (
    check_command,
    check_range,
    hydra_message,
    hydra_quote,
    job_overrides,
    preset_sweeps,
    single_values,
)
from lander.config.schema import CONF_DIR, group_options, register_configs
from lander.config.trust import check_trusted
from lander.errors import ConfigError
from lander.storage.yamlfile import YamlBomb, check_aliases

MAX_OVERRIDES = 64
MAX_CHARS = 1000
MAX_CONF_FILES = 1000  # YAML files in the root's conf/ (lander ships 40)
MAX_CONF_BYTES = 1_000_000  # one of them (a preset is a few hundred bytes)
MAX_LISTED = 50  # the root's own envs (and algorithms) the catalog lists: each composed once, 0.15 s
GROUPS = ("algo", "env", "logger", "experiment", "hparams_search")
ADDABLE = ("algo.model.", "env.kwargs.")  # where "+key=value" may add a key: the model's and the env's arguments
REFUSED_KEYS = ("hydra", "resume")  # Hydra's own settings; a run is resumed by its own endpoint
SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]*")
CODE_KEYS = "keys starting with '_' (_target_, _args_, _partial_, ...) make Hydra import and call code"
_compose_lock = threading.Lock()  # Hydra's composition uses process-wide state


class Refused(ValueError):
    """A request that cannot be carried out as asked; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def check_overrides(
    overrides: Any,
    multirun: bool,
    max_jobs: int,
    allowed: list[str],
    sweeper: Sequence[str] = (),
    runs: int = 1,
    trials: int | None = None,
    conf: Path | None = None,
) -> tuple[list[str], DictConfig]:
    """Refuse what a request may not ask for, then compose and validate every job; return the overrides to launch
    (the request's, then the search path of lander's configs and the root's, :func:`search_path`) and the first
    job's config.

    :param overrides: the request's ``"overrides"``
    :param multirun: a sweep (``POST /api/sweeps``)
    :param max_jobs: the most jobs a sweep may expand to
    :param allowed: the ``--allow-target`` prefixes (for :func:`lander.config.trust.check_trusted`)
    :param sweeper: the service's own ``hydra/sweeper`` overrides, made from a request's checked numbers (AdaStop's
        ``n``, ``K``, ``alpha``), never from its text; checked with the command
    :param runs: runs each configuration may take (AdaStop: at most ``n * K``), counted against ``max_jobs``
    :param trials: a search's trials, the request's (``sweeper`` sets them): refused without a search preset,
        counted against ``max_jobs`` instead of the preset's
    :param conf: the root's ``conf/`` (:func:`root_conf`), or None: lander's configs only
    """
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise Refused('"overrides" must be a list of strings such as ["algo=ppo", "seed=0"]')
    if len(overrides) > MAX_OVERRIDES:
        raise Refused(f"{len(overrides)} overrides: the service takes at most {MAX_OVERRIDES} in one request")
    if conf is not None:
        check_conf(conf)
    parsed = [parse(text, multirun, conf) for text in overrides]
    if multirun and (jobs := sweep_size(parsed) * runs) > max_jobs:
        raise Refused(
            f"the sweep expands to {jobs:,} jobs: the service launches at most {max_jobs} in one sweep (--max-jobs)"
        )
    search = search_path(conf)
    first = compose_checked(list(overrides), parsed, multirun, max_jobs, allowed, list(sweeper), trials, search)
    return [*overrides, search], first


def root_conf(root: Path) -> Path | None:
    """The root's ``conf/`` (your envs, algorithms, presets and tuned values, as ``python -m lander.run`` run in the
    root composes them with lander's), where it is a folder really under the root; else None."""
    conf = root / "conf"
    return conf if conf.is_dir() and conf.resolve().is_relative_to(root.resolve()) else None


def check_conf(conf: Path) -> tuple[tuple[str, int, int], ...]:
    """The YAML files Hydra may compose from the root's ``conf/`` (a downloaded folder's) are read with bounds
    before it composes any: at most :data:`MAX_CONF_FILES` of at most :data:`MAX_CONF_BYTES` each, none a link out
    of ``conf/``, none whose aliases expand past :data:`lander.storage.yamlfile.MAX_NODES` nodes (a tuned config's
    alias bomb held the request, and the service's composition lock, until memory ran out). Returns each file's
    name, modification time and size: what the composed options are cached by (:func:`root_options`)."""
    real = conf.resolve()
    count, seen = 0, []
    for folder, dirs, files in os.walk(conf):  # links to folders are not walked (Hydra's search would follow them)
        for linked in (Path(folder) / d for d in dirs if (Path(folder) / d).is_symlink()):
            if not linked.resolve().is_relative_to(real):  # one within conf/ is walked where it really is
                raise Refused(f"conf/{linked.relative_to(conf)} is a link out of conf/: not read")
        for name in sorted(f for f in files if f.endswith((".yaml", ".yml"))):
            path, count = Path(folder) / name, count + 1
            where = f"conf/{path.relative_to(conf)}"
            if count > MAX_CONF_FILES:
                raise Refused(f"the root's conf/ holds more than {MAX_CONF_FILES} YAML files: not read")
            if not path.resolve().is_relative_to(real):
                raise Refused(f"{where} is a link out of conf/: not read")
            stat = path.stat()
            if stat.st_size > MAX_CONF_BYTES:
                raise Refused(f"{where}: {stat.st_size:,} bytes, past {MAX_CONF_BYTES:,}: not read")
            seen.append((where, stat.st_mtime_ns, stat.st_size))
            try:
                check_aliases(path.read_text(errors="replace"), where)
            except YamlBomb as exc:
                raise Refused(str(exc)) from None
            except yaml.YAMLError:  # not YAML: Hydra says so if a launch composes it (the dashboard lists why)
                continue
        dirs.sort()
    return tuple(seen)


def search_path(conf: Path | None) -> str:
    """``hydra.searchpath=[...]``: the root's ``conf/`` by its path (lander's own ``file://conf`` is relative to the
    working directory: the service's, or its launched processes' empty one), or none."""
    return f"hydra.searchpath=[{hydra_quote(f'file://{conf}')}]" if conf is not None else "hydra.searchpath=[]"


def root_options(conf: Path | None) -> dict[str, dict[str, DictConfig]]:
    """The root's own ``algo`` and ``env`` options (those lander does not ship; the first :data:`MAX_LISTED` of
    each), each composed as a launch composes it (its ``defaults`` applied: 0.15 s), by group, cached until a file
    of ``conf/`` changes; none where the root has no ``conf/``, or one :func:`check_conf` refuses. An option that
    does not compose is left out (a launch of it says why)."""
    found: dict[str, dict[str, DictConfig]] = {}
    try:
        if conf is None:
            return found
        files = check_conf(conf)
    except Refused:
        return found
    if _listed.get("files") == (conf, files):
        return cast(dict[str, dict[str, DictConfig]], _listed["options"])
    register_configs()
    for group in ("algo", "env"):
        for name in sorted(set(options(group, conf)) - set(group_options(group)))[:MAX_LISTED]:
            try:
                with _compose_lock, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
                    cfg = compose(config_name="config", overrides=[search_path(conf), f"{group}={name}"])
            except (HydraException, OmegaConfBaseException, ValueError):
                continue
            found.setdefault(group, {})[name] = cfg[group]
    _listed.update(files=(conf, files), options=found)
    return found


_listed: dict[str, Any] = {}  # root_options' last answer, and the files it was composed from


def options(group: str, conf: Path | None) -> list[str]:
    """A config group's options: lander's, and the root's ``conf/<group>/*.yaml``."""
    mine = {p.stem for p in (conf / group).glob("*.yaml")} if conf is not None and (conf / group).is_dir() else set()
    return sorted(set(group_options(group)) | mine)


def run_label(cfg: DictConfig) -> str:
    """``ppo_lunar_lander_seed-0``: how ``python -m lander.run`` names a run's directory (``hydra.run.dir``), from
    values checked as names (letters, digits, ``_``, ``-``, ``.``), so that no request names a path."""
    label = f"{cfg.algo.name}_{cfg.env.name}_seed-{cfg.seed}"
    return label if re.fullmatch(r"[\w.-]+", label) and ".." not in label else "run"


def parse(text: str, multirun: bool, conf: Path | None = None) -> Override:
    """One override, checked to be data for lander's config (see the module's docstring)."""
    if len(text) > MAX_CHARS:
        raise Refused(f"an override of {len(text):,} characters: the service takes at most {MAX_CHARS}")
    if text.startswith("-") or "=" not in text:
        raise Refused(f"{text[:80]!r}: each override is key=value (no flags; a sweep is POST /api/sweeps)")
    if "$" in text:
        raise Refused(
            f"{text[:80]!r}: interpolations and resolvers ('$', escaped or not) are not accepted by the "
            "service: a request carries values, not code"
        )
    try:
        override = OverridesParser.create().parse_override(text)
    except HydraException as exc:
        raise Refused(f"{text[:80]!r}: {str(exc).strip().splitlines()[0]}") from exc
    key = override.key_or_group
    if key.replace("/", ".").split(".")[0] in REFUSED_KEYS:
        raise Refused(
            f"{text[:80]!r}: hydra.* and resume are not accepted by the service (a run is resumed with "
            "POST /api/runs/<id>/resume)"
        )
    if any(segment.startswith("_") for segment in re.split(r"[./]", key)):
        raise Refused(f"{text[:80]!r}: {CODE_KEYS}: not accepted by the service")
    if not all(SEGMENT.fullmatch(s) for s in key.split(".")) or override.package is not None:
        raise Refused(f"{text[:80]!r}: a key is a dotted name of letters, digits and '_' (no '/', '@')")
    adds_group = key in ("experiment", "hparams_search")
    if override.type == OverrideType.ADD and not (key.startswith(ADDABLE) or adds_group):
        raise Refused(f"{text[:80]!r}: '+' adds keys under {' and '.join(a[:-1] for a in ADDABLE)} only")
    if override.type not in (OverrideType.CHANGE, OverrideType.ADD):
        raise Refused(f"{text[:80]!r}: deleting ('~') or forcing ('++') keys is not accepted by the service")
    if override.is_sweep_override() and not multirun:
        raise Refused(f"{text[:80]!r} gives several values: that is a sweep, POST /api/sweeps")
    for value in values(override, conf):
        check_value(key, value, text, conf)
    return override


def values(override: Override, conf: Path | None = None) -> list[Any]:
    """The values an override gives (each choice of a sweep, the bounds of a range)."""
    value = override.value()
    if isinstance(value, ChoiceSweep):
        return list(value.list)
    if isinstance(value, RangeSweep):
        try:
            check_range(override)
        except ConfigError as exc:
            raise Refused(str(exc)) from exc
        return [value.start, value.stop, value.step]
    if isinstance(value, Glob):
        if override.key_or_group not in GROUPS:
            raise Refused(f"{override.input_line!r}: glob() chooses among a config group's options")
        return value.filter(options(override.key_or_group, conf))
    if override.is_sweep_override():  # interval(): a search space, for hparams_search presets
        raise Refused(f"{override.input_line!r}: interval() and other search spaces are not accepted here")
    return [value]


def check_value(key: str, value: Any, text: str, conf: Path | None = None) -> None:
    """A value is plain data: a scalar, or lists and dicts of them whose keys do not start with '_'."""
    if key in GROUPS and override_group_option(key, value) not in options(key, conf):
        where = "is in neither lander/conf/ nor conf/" if conf is not None else "is not in lander/conf/"
        raise Refused(f"{text[:80]!r}: {key}/{value}.yaml {where}; {key} options: {', '.join(options(key, conf))}")
    if key == "env.id" and ":" in str(value):  # gymnasium imports the module before the ':'
        raise Refused(f"{text[:80]!r}: env ids naming a module to import are not accepted by the service")
    if key == "env.kwargs.render_mode" and value is not None:  # lander.run honours it, for a user at the screen
        raise Refused(
            f"{text[:80]!r}: env.kwargs.render_mode is not accepted by the service: its runs have no screen to draw "
            "on, and render_mode=human draws every training step at the env's frame rate (LunarLander: 50 a "
            "second, 1M steps in 5.6 hours); the video is drawn off screen (video.enabled)"
        )
    if isinstance(value, dict):
        for name, item in value.items():
            if str(name).startswith("_"):
                raise Refused(f"{text[:80]!r}: {CODE_KEYS}: not accepted by the service")
            check_value(f"{key}.{name}", item, text, conf)
    elif isinstance(value, list):
        for item in value:
            check_value(key, item, text, conf)
    elif not isinstance(value, str | int | float | bool | type(None)):
        raise Refused(f"{text[:80]!r}: values are numbers, strings, booleans, null, lists and dicts")


def override_group_option(key: str, value: Any) -> str:
    return "null" if value is None and key in ("experiment", "hparams_search") else str(value)


def sweep_size(parsed: list[Override]) -> int:
    """How many jobs a sweep of these overrides runs (its sweeps' lengths multiplied), without listing them."""
    size = 1
    for override in parsed:
        value = override.value()
        if isinstance(value, RangeSweep):
            step = value.step or 1
            size *= max(0, math.ceil((value.stop - value.start) / step))  # type: ignore[operator]
        elif override.is_sweep_override():
            size *= len(values(override))
    return size


def compose_checked(
    overrides: list[str],
    parsed: list[Override],
    multirun: bool,
    max_jobs: int,
    allowed: list[str],
    sweeper: list[str] | None = None,
    given_trials: int | None = None,
    search: str = "hydra.searchpath=[]",
) -> DictConfig:
    """Every job composed, checked by :func:`lander.config.trust.check_trusted` and then validated as
    ``python -m lander.run`` would (a preset's own sweep counted in); return the first job's config. Nothing a
    config names is imported before its trust check. Hydra's own errors and lander's as :class:`Refused`."""
    register_configs()
    try:
        check_override_keys(overrides)  # lander's did-you-mean for a misspelt key, before Hydra's own words
        with _compose_lock, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            swept, full = preset_sweeps([search], single_values(overrides))
            preset = swept if multirun else []
            first = job_overrides([*preset, *overrides], multirun=True)[0] if overrides or preset else []
            cfg = compose(config_name="config", overrides=[search, *first])
        check_trusted(cfg, allowed)
        if not multirun and (swept or OmegaConf.select(full, "hydra.mode") == RunMode.MULTIRUN):
            # a search launched as a run ran its trials in the service's working directory, outside the root
            what = f"a sweep ({'; '.join(swept)})" if swept else "a search (its preset runs Optuna's trials)"
            raise Refused(
                f"{' '.join(o for o in overrides if o.split('=', 1)[0] in GROUPS)} is {what}: POST /api/sweeps (the "
                "dashboard's Launch sweep)"
                + (", or give every swept key one value" if swept else "")
                + "; nothing was started"
            )
        trials = OmegaConf.select(full, "hydra.sweeper.n_trials")  # a search (hparams_search=...): its trials
        if given_trials is not None:
            if trials is None:
                raise Refused(
                    '"trials" are the trials of an Optuna search: choose a search preset (hparams_search=...) with '
                    "them, or leave them out; nothing was started"
                )
            trials = given_trials
        jobs = trials if isinstance(trials, int) else sweep_size([*(parse(p, True) for p in preset), *parsed])
        if (preset or trials is not None) and jobs > max_jobs:
            raise Refused(
                f"the sweep (with its preset's own values or trials) expands to {jobs:,} jobs: the service "
                f"launches at most {max_jobs} in one sweep (--max-jobs)"
            )
        command = ["--multirun", *overrides, *(sweeper or []), search] if multirun else [*overrides, search]
        check_command(command, _compose_lock, allowed)
    except ConfigError as exc:
        raise Refused(str(exc)) from exc
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        if isinstance(exc, Refused):
            raise
        raise Refused(hydra_message(exc)) from exc  # (a preset's own composition)
    return cfg
