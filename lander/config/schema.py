"""The structured-config schema, registered in Hydra's ConfigStore: every key's type, nothing else.

Hydra rejects ``seed=abc`` or an unknown key before the task function runs. The values, defaults included,
live in one place: ``lander/conf/config.yaml`` (and its groups), each key commented there; the run-level
keys here are ``MISSING`` so a key left out of the YAML is an error, not a silent second default.
The ``algo`` and ``env`` schemas do hold defaults: for keys a user's own algo/env YAML may leave out.

A key that cannot change what is trained is declared with :func:`neutral`; the comparison leaves
such keys out of a configuration's label (:func:`neutral_keys`).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, get_type_hints

import yaml
from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lander.errors import ConfigError
from lander.storage.rundir import CLAIM_RESOLVER, claim_directory
from lander.storage.yamlfile import check_aliases

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"  # the packaged configs: lander/conf


def group_options(group: str) -> list[str]:
    """The options of a config group, read from ``lander/conf/<group>/*.yaml``."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


ACTION_SPACES = ("discrete", "continuous")
OBSERVATION_SPACES = ("vector", "image", "discrete", "dict")


def action_space_kind(space: Any) -> str:
    """``"discrete"`` or ``"continuous"`` for a Gymnasium action space, as ``algo.action_spaces`` names them."""
    import gymnasium  # where a space is given (it is imported already): `import lander.config` stays light

    return (
        "discrete" if isinstance(space, (gymnasium.spaces.Discrete, gymnasium.spaces.MultiDiscrete)) else "continuous"
    )


def observation_space_kind(space: Any) -> str:
    """``"discrete"``, ``"image"`` (uint8 with 3 dims), ``"dict"`` (named parts: SB3's ``MultiInputPolicy``) or
    ``"vector"`` for a Gymnasium observation space, as ``algo.observation_spaces`` names them."""
    import gymnasium  # as in action_space_kind
    import numpy as np

    if isinstance(space, (gymnasium.spaces.Discrete, gymnasium.spaces.Tuple)):
        return "discrete"
    if isinstance(space, gymnasium.spaces.Dict):
        return "dict"
    if isinstance(space, gymnasium.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3:
        return "image"
    return "vector"


WANDB_TRACKER = "lander.tracking.wandb_tracker.WandbTracker"  # the _target_ of logger=wandb's tracker
WANDB_MODES = ("offline", "online", "disabled")


def chosen_wandb_mode(mode: str | None) -> str:
    """A W&B tracker's mode: ``mode`` where the config gives one; at ``null`` (``logger/wandb.yaml``'s), W&B's own
    ``WANDB_MODE`` where it is set, else offline. Read as the run starts, never saved into its config: a run
    directory's config calls no resolver that reads the machine."""
    return mode if mode is not None else os.environ.get("WANDB_MODE") or "offline"


NEUTRAL = "neutral"  # field metadata: True for keys that do not change what is trained


def neutral(**kwargs: Any) -> Any:
    """A field whose value cannot change the trained agent (logging, files, speed with identical results).

    :param kwargs: ``default_factory`` for a group; otherwise the field is ``MISSING`` (its value is in the YAML)
    """
    return field(metadata={NEUTRAL: True}, **(kwargs or {"default": MISSING}))


@dataclass
class AlgoConfig:
    name: str = "???"
    action_spaces: list[str] = field(default_factory=lambda: list(ACTION_SPACES))
    observation_spaces: list[str] = field(default_factory=lambda: list(OBSERVATION_SPACES))
    n_envs: int = 1
    total_timesteps: int = 100_000
    model: dict[str, Any] = field(default_factory=dict)


@dataclass
class NormalizeConfig:
    """SB3's ``VecNormalize`` around the training envs, with rl-baselines3-zoo's keys (``env.normalize``)."""

    enabled: bool = False
    norm_obs: bool = True  # observations: running mean and variance, clipped to +-clip_obs
    norm_reward: bool = True  # rewards: divided by the running std of the discounted return (training only)
    clip_obs: float = 10.0
    clip_reward: float = 10.0
    gamma: float | None = None  # of the discounted return; null: the run's gamma
    epsilon: float = 1e-8


@dataclass
class EnvConfig:
    name: str = "???"
    id: str = "???"
    action_space: str = "discrete"
    observation_space: str = "vector"
    policy: str = "MlpPolicy"
    reward_threshold: float | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    wrappers: list[Any] = field(default_factory=list)
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)


@dataclass
class EvalConfig:
    freq: int = MISSING
    episodes: int = MISSING
    n_envs: int = MISSING
    seed: int = MISSING
    deterministic: bool = MISSING


@dataclass
class VideoConfig:
    enabled: bool = MISSING
    seed: int = MISSING
    fps: int = MISSING
    max_steps: int = MISSING


@dataclass
class EarlyStopConfig:
    reward_threshold: float | None = MISSING
    patience: int | None = MISSING
    min_improvement: float = MISSING


@dataclass
class LanderConfig:
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    logger: dict[str, Any] = neutral(default_factory=dict)  # trackers by name, each a _target_ (lander.tracking)
    eval: EvalConfig = field(default_factory=EvalConfig)
    video: VideoConfig = neutral(default_factory=VideoConfig)
    early_stop: EarlyStopConfig = field(default_factory=EarlyStopConfig)
    callbacks: dict[str, Any] = field(default_factory=dict)  # user callbacks may change training: not neutral
    seed: int = MISSING
    run_name: str | None = neutral()  # W&B's run name and TensorBoard's folder; null: from algo, env, gamma, seed
    gamma: float | None = MISSING
    total_timesteps: int | None = MISSING
    budget_rounding: str = MISSING  # up or down: whole rollouts past or within the budget (lander/budget.py)
    n_envs: int | None = MISSING
    device: str = MISSING
    torch_threads: int = MISSING  # not neutral: the sums of a matrix product depend on the thread count
    torch_fast_paths: bool = neutral()  # identical results (tests/e2e/test_speed_paths.py)
    seeds_per_process: int = MISSING  # PPO or A2C seeds of a sweep trained side by side, batched: equivalent results
    batched_engine: bool = MISSING  # one PPO or A2C seed on the batched engine: equivalent results, not identical
    vec_env: str = neutral()  # subproc steps the same envs elsewhere: dummy's metrics and weights (test_faults.py)
    checkpoint_freq: int = neutral()
    checkpoint_keep: int = neutral()
    checkpoint_replay_buffer: bool = neutral()
    resume: str | None = neutral()
    max_episodes: int | None = MISSING
    monitor_freq: int = neutral()
    log_interval: int | None = neutral()  # SB3's learn(log_interval=...): how often its records are written
    log_grad_norm: bool = neutral()  # train/grad_norm by hooks on the gradients (5-15% of a PPO run's CPU)
    memory_limit_mb: float | None = neutral()  # stop as interrupted above it (every monitor_freq)
    progress_bar: bool = neutral()
    final_eval: bool = MISSING
    baseline: str | None = neutral()
    comparison_band: str = neutral()
    x_axis: str = neutral()  # learning curves against timesteps or training episodes
    report: bool = neutral()  # write report.html (lander/report_run.py)


@dataclass
class EvaluateConfig:
    """``python -m lander.evaluate`` (``lander/conf/evaluate.yaml`` has the defaults and says what each key does)."""

    run: str = MISSING
    model: str = "model.zip"
    n_episodes: int = 20
    seed: int | None = None
    deterministic: bool = True
    n_envs: int = 10
    video: bool = False
    name: str | None = None
    allow_target: list[str] = field(default_factory=list)


def quiet_hydra_warnings() -> None:
    """Hydra's warnings about what lander does on purpose: ``./conf`` on the search path where there is none;
    ``hydra/launcher/joblib.yaml`` and ``submitit_local.yaml``, lander's (Hydra's keys, checked against Hydra's
    schema of that name, lander's launcher class)."""
    warnings.filterwarnings("ignore", message=r"provider=hydra\.searchpath in main, path=conf is not available")
    warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/(joblib|submitit_local|ray)' is validated against")


def register_configs() -> None:
    """Register the schemas so ``lander/conf/config.yaml`` and ``evaluate.yaml`` can name them in their defaults.

    ``config.yaml`` puts ``./conf`` (the user's own configs) on Hydra's search path (:func:`quiet_hydra_warnings`).
    """
    quiet_hydra_warnings()
    if not OmegaConf.has_resolver(CLAIM_RESOLVER):  # the default run and sweep directories (config.yaml)
        OmegaConf.register_new_resolver(CLAIM_RESOLVER, claim_directory, use_cache=True)
    ConfigStore.instance().store(name="lander_schema", node=LanderConfig)
    ConfigStore.instance().store(name="evaluate_schema", node=EvaluateConfig)


SAVED_ALWAYS = ("seed", "algo.name", "env.id", "env.name", "eval.seed", "eval.episodes", "eval.freq")


def load_saved(path: Path) -> DictConfig:
    """A run's saved config (``.hydra/config.yaml``), checked as a composed one is: unknown keys and wrong types
    are errors.

    :raises ConfigError: one line naming the file and, where there is one, the key
    """
    try:
        text = path.read_text()
        check_aliases(text, str(path))
        cfg = OmegaConf.merge(OmegaConf.structured(LanderConfig), OmegaConf.create(text))
    except (OmegaConfBaseException, yaml.YAMLError, ValueError, OSError) as exc:
        key = getattr(exc, "full_key", None)
        where = f" at key {key!r}" if key else ""
        raise ConfigError(f"{path} is not a valid lander config{where}: {str(exc).splitlines()[0]}") from None
    missing = sorted(k for k in OmegaConf.missing_keys(cfg) if not k.startswith("algo.model."))
    if set(missing) & set(SAVED_ALWAYS):  # a file cut short (a key added since an older lander wrote it is not)
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        raise ConfigError(f"{path} is not a valid lander config: it lacks {shown} (cut short?)")
    return cfg  # type: ignore[return-value]


def tracker_nodes(cfg: Any) -> dict[str, DictConfig]:
    """The ``logger`` nodes that name a tracker (``_target_``), by their key; a node without one builds nothing."""
    logger = cfg.get("logger") or {}
    return {str(k): v for k, v in logger.items() if isinstance(v, DictConfig) and "_target_" in v}


def wandb_node(cfg: Any) -> DictConfig | None:
    """The config's W&B tracker (the ``logger`` node whose ``_target_`` is :data:`WANDB_TRACKER`), or None."""
    return next((n for n in tracker_nodes(cfg).values() if n._target_ == WANDB_TRACKER), None)


def neutral_keys(schema: type = LanderConfig, prefix: str = "") -> list[str]:
    """Dotted names of the keys declared :func:`neutral` (a neutral group counts as one key, e.g. ``video``)."""
    keys, types = [], get_type_hints(schema)
    for item in fields(schema):
        name = prefix + item.name
        if item.metadata.get(NEUTRAL):
            keys.append(name)
        elif is_dataclass(types[item.name]):
            keys += neutral_keys(types[item.name], name + ".")
    return keys


# Overrides that are not part of a configuration: the seed (the repetition) and keys declared neutral in the schema
# (they do not change what is trained). A preset (experiment=, hparams_search=) is: it may set any key, and a sweep
# over presets (experiment=mine_a,mine_b) compares them; within one preset's sweep it is common to every run, and
# left out of the labels as any common override is (labels)
NOT_CONFIGURATION = ("seed", "hydra", *neutral_keys())


def changes_nothing(override: str) -> bool:
    """True for an override of a key in :data:`NOT_CONFIGURATION` (or below one: ``video.fps=10``)."""
    key = override.lstrip("+~").split("=", 1)[0]
    return any(key == k or key.startswith((k + ".", k + "/")) for k in NOT_CONFIGURATION)


def budget(cfg: DictConfig) -> tuple[int, int]:
    """``(total_timesteps, n_envs)``: the top-level values, or the algorithm's tuned ones when null."""
    total = cfg.total_timesteps if cfg.total_timesteps is not None else cfg.algo.total_timesteps
    n_envs = cfg.n_envs if cfg.n_envs is not None else cfg.algo.n_envs
    return int(total), int(n_envs)


def configuration_key(overrides: list[str]) -> tuple[str, ...]:
    """The configuration a run's (or a job's) overrides make: every override but the seed and those that change
    nothing (:func:`changes_nothing`), sorted."""
    return tuple(sorted(o for o in overrides if not changes_nothing(o)))


def labels(keys: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Name each configuration by the overrides in which it differs from the others: ``default`` for one whose
    overrides the others all share (they add theirs to it: a run of ``algo=ppo`` compared with runs of ``algo=ppo
    gamma=0.9``, named ``algo=ppo`` before, as if the others were not PPO); one configuration alone by all of its."""
    common = set.intersection(*(set(k) for k in keys)) if len(keys) > 1 else set()
    return {k: " ".join(o for o in k if o not in common) or ("default" if common else " ".join(k)) or "default"
            for k in keys}  # fmt: skip
