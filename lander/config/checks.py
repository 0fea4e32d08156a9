"""Value checks of a composed config, before anything is trained.

The schema (:mod:`lander.config.schema`) gives every key a type, so Hydra rejects ``seed=abc`` or an unknown key;
:func:`validate` checks what a type cannot express (ranges, algorithm/env compatibility), naming the key
and the allowed values.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import itertools
import json
import logging
import math
import netrc
import os
import re
import resource
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlparse

import psutil
import yaml
from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf

from lander.config.keys import check_tracker_keys, did_you_mean, import_target
from lander.config.schema import (
    ACTION_SPACES,
    CONF_DIR,
    OBSERVATION_SPACES,
    WANDB_MODES,
    WANDB_TRACKER,
    EnvConfig,
    action_space_kind,
    budget,
    chosen_wandb_mode,
    group_options,
    observation_space_kind,
    tracker_nodes,
)
from lander.errors import ConfigError, root_cause
from lander.registry import env_creator, render_modes, takes_render_mode


def compatible_envs(algo_cfg: DictConfig) -> list[str]:
    """Names of the ``env`` group options whose action and observation spaces the algorithm supports."""
    names = []
    for option in group_options("env"):
        env_cfg = OmegaConf.merge(OmegaConf.structured(EnvConfig), OmegaConf.load(CONF_DIR / "env" / f"{option}.yaml"))
        if env_cfg.action_space in algo_cfg.action_spaces and env_cfg.observation_space in algo_cfg.observation_spaces:
            names.append(option)
    return names


MINIMA: dict[str, tuple[int, bool, str]] = {  # key -> (smallest value, null allowed, what is allowed)
    "total_timesteps": (1, True, "null (the algorithm's budget) or a positive integer"),
    "n_envs": (1, True, "null or an integer >= 1"),
    "algo.total_timesteps": (1, False, "a positive integer"),
    "algo.n_envs": (1, False, "an integer >= 1"),
    "eval.episodes": (1, False, "an integer >= 1"),
    "eval.n_envs": (1, False, "an integer >= 1"),
    "eval.freq": (0, False, "0 (off) or a positive number of timesteps"),
    "checkpoint_freq": (0, False, "0 (off) or a positive integer"),
    "checkpoint_keep": (0, False, "0 (keep all) or a positive integer"),
    "max_episodes": (1, True, "null (no episode budget) or an integer >= 1"),
    "monitor_freq": (0, False, "0 (off) or a positive number of timesteps"),
    "log_interval": (1, True, "null (the algorithm's default) or an integer >= 1"),
    "early_stop.patience": (1, True, "null (off) or an integer >= 1"),
    "torch_threads": (0, False, "0 (torch's default) or an integer >= 1"),
    "seed": (0, False, "an integer >= 0 (numpy seeds are unsigned)"),
    "eval.seed": (0, False, "an integer >= 0"),
    "video.seed": (0, False, "an integer >= 0"),
    "video.fps": (1, False, "an integer >= 1"),
    "video.max_steps": (1, False, "an integer >= 1"),
}
SEED_LIMIT = 2**32  # numpy seeds are unsigned 32-bit
SEEDS = ("seed", "eval.seed", "video.seed")
INF = math.inf
# algo.model keys lander knows, checked where they are numbers: (low, high, low included, high included, allowed),
# from what they mean in SB3 (and lander's algorithms): a value outside crashes late or silently trains nonsense
MODEL_RANGES: dict[str, tuple[float, float, bool, bool, str]] = {
    "n_steps": (1, INF, True, False, "an integer >= 1 (env steps per env per rollout)"),
    "batch_size": (1, INF, True, False, "an integer >= 1"),
    "n_epochs": (1, INF, True, False, "an integer >= 1"),
    "buffer_size": (1, INF, True, False, "an integer >= 1"),
    "learning_starts": (0, INF, True, False, "an integer >= 0"),
    "learning_rate": (0, INF, False, False, "a finite number > 0 (or a schedule)"),
    "gamma": (0, 1, False, True, "a number in (0, 1]"),
    "gae_lambda": (0, 1, True, True, "a number in [0, 1]"),
    "clip_range": (0, INF, False, False, "a finite number > 0"),
    "clip_range_vf": (0, INF, False, False, "null or a finite number > 0"),
    "ent_coef": (0, INF, True, False, "a finite number >= 0"),
    "vf_coef": (0, INF, True, False, "a finite number >= 0"),
    "pg_coef": (0, INF, True, False, "a finite number >= 0"),
    "max_grad_norm": (0, INF, False, False, "a finite number > 0"),
    "target_kl": (0, INF, False, False, "null or a finite number > 0"),
    "tau": (0, 1, False, True, "a number in (0, 1]"),
    "alpha": (0, 1, False, True, "a number in (0, 1]"),
    "exploration_fraction": (0, 1, True, True, "a number in [0, 1]"),
    "exploration_initial_eps": (0, 1, True, True, "a number in [0, 1]"),
    "exploration_final_eps": (0, 1, True, True, "a number in [0, 1]"),
    "train_freq": (1, INF, True, False, "an integer >= 1 (or [n, 'step' | 'episode'] with n >= 1)"),
    "target_update_interval": (1, INF, True, False, "an integer >= 1"),
    "policy_delay": (1, INF, True, False, "an integer >= 1"),
    "batch_episodes": (1, INF, True, False, "an integer >= 1"),
}
CHOICES: dict[str, tuple[str, ...]] = {
    "vec_env": ("dummy", "subproc"),
    "comparison_band": ("seeds", "episodes"),
    "x_axis": ("timesteps", "episodes"),
    "budget_rounding": ("up", "down"),
    "env.action_space": ACTION_SPACES,
    "env.observation_space": OBSERVATION_SPACES,
}


NAMES = ("run_name", "algo.name", "env.name")  # values that become part of a path (run directory, TensorBoard's)
NAME_BYTES = 100  # a run directory's name holds two of them (algo.name, env.name): a file name is 255 bytes at most


def is_plain_name(name: str) -> bool:
    """A name that stays one folder wherever it is joined to a path: not empty, not only dots (``..``), no
    separator (``/``, ``\\``), no control character, and at most :data:`NAME_BYTES` bytes (a longer one was
    "File name too long" once Hydra or TensorBoard made the folder)."""
    return (
        bool(name)
        and name.strip(".") != ""
        and re.search(r"[/\\\x00-\x1f\x7f]", name) is None
        and len(name.encode()) <= NAME_BYTES
    )


def _check(ok: bool, key: str, value: Any, allowed: str) -> None:
    if not ok:
        raise ConfigError(f"{key}={value!r} is not allowed: {key} must be {allowed}")


@dataclass(frozen=True)
class Checked:
    """A run's config that has passed every check of a run (:func:`validate` and :func:`check_trackers`), made once
    by :func:`checked` where a job starts (``lander.run``) and handed down: :func:`lander.training.train.train`
    takes it as it is, and checks a plain ``DictConfig`` itself.

    :param cfg: the composed config
    """

    cfg: DictConfig


def checked(cfg: DictConfig) -> Checked:
    """``cfg`` checked (:func:`validate`, :func:`check_trackers`); raise :class:`ConfigError` naming the key."""
    validate(cfg)
    check_trackers(cfg)
    return Checked(cfg)


def validate(cfg: DictConfig) -> None:
    """Check values a type cannot express; raise :class:`ConfigError` naming the key and what is allowed.

    :param cfg: the composed run config
    """
    gamma = cfg.gamma
    _check(gamma is None or 0.0 < gamma <= 1.0, "gamma", gamma, "null or in (0, 1]")
    gain = cfg.early_stop.get("min_improvement", 0.0)
    _check(math.isfinite(gain) and gain >= 0, "early_stop.min_improvement", gain, "a finite number >= 0")
    for key in ("early_stop.reward_threshold", "env.reward_threshold"):  # nan: never reached, -inf: at once
        threshold = OmegaConf.select(cfg, key)
        _check(threshold is None or math.isfinite(threshold), key, threshold, "null or a finite number")
    for key, (smallest, nullable, allowed) in MINIMA.items():
        value = OmegaConf.select(cfg, key)
        _check((value is None and nullable) or (value is not None and value >= smallest), key, value, allowed)
    for key, choices in CHOICES.items():
        value = OmegaConf.select(cfg, key)
        _check(value in choices, key, value, f"one of: {', '.join(choices)}")
    device = cfg.device
    _check(
        device in ("auto", "cpu", "mps") or re.fullmatch(r"cuda(:\d+)?", device) is not None,
        "device",
        device,
        "one of: auto, cpu, cuda, cuda:N, mps",
    )
    _check("_target_" in cfg.algo.model, "algo.model._target_", None, "the import path of the model class")
    for key in NAMES:
        value = OmegaConf.select(cfg, key)
        _check(
            value is None or is_plain_name(str(value)),
            key,
            value,
            f"a plain name (it names a folder): no '/', '\\', '..' or control characters, at most {NAME_BYTES} bytes",
        )
    for key in SEEDS:
        value = OmegaConf.select(cfg, key)
        _check(value < SEED_LIMIT, key, value, "an integer in [0, 2**32) (numpy seeds are unsigned 32-bit)")
    limit = OmegaConf.select(cfg, "memory_limit_mb")
    _check(
        limit is None or (math.isfinite(limit) and limit > 0), "memory_limit_mb", limit, "null or a number of MB > 0"
    )
    if limit is not None and cfg.monitor_freq == 0:
        raise ConfigError("memory_limit_mb is checked every monitor_freq steps: it needs monitor_freq > 0 (it is 0)")
    for key in ("reward_threshold", "patience"):
        # the final evaluation comes after training; a run saved so (before this check) resumes as it ran
        if cfg.early_stop.get(key) is not None and cfg.eval.freq == 0 and cfg.get("resume") is None:
            raise ConfigError(
                f"early_stop.{key}={cfg.early_stop[key]} stops training after an evaluation, and eval.freq=0 "
                "evaluates only once training has ended: give eval.freq=N (env steps between evaluations)"
            )
    check_model_values(cfg.algo.model)
    check_model_given_by_lander(cfg.algo.model)
    check_policy(cfg)
    check_net_arch(cfg.algo.model)
    check_env_id(cfg.env.id)
    warn_without_time_limit(cfg)
    check_env_spaces(cfg)
    check_env_wrappers(cfg)
    check_video(cfg)
    check_device(device)
    check_compatible(cfg)
    check_normalize(cfg)
    check_side_by_side(cfg)
    check_memory(cfg)
    check_wandb_names(cfg)


ENV_BYTES = 110_000  # one training env with its wrappers, about: LunarLander-v3 measured 108 kB (CartPole 5 kB)
MEMORY_SHARE = 0.8  # of the memory available now: the rest for torch, Python and the page cache
EPISODE_BYTES = 1_200  # an evaluation episode's record: 1.09 kB (tracemalloc's peak over a million episodes' lists,
# statistics and JSON)
RUN_VMS = 2 * 2**30  # a run's peak virtual size, rounded up (VmPeak of a tiny PPO run: 1.35 GiB, CPU torch 2.13)
JOB_BYTES = {  # what one more job of a sweep running at once takes at least, besides its memory_needed, measured in
    # a memory cgroup (memory.max_usage_in_bytes over the jobs, tiny PPO runs without W&B or video, 2026-11-28):
    # lander's launcher forks its jobs from the sweep's process, sharing its pages (12 jobs: 1.08 GB); joblib's loky
    # workers each import torch and SB3 anew (6 jobs: 2.51 GB; 12 jobs in a 4 GiB cgroup: 8 processes OOM-killed)
    "ParallelLauncher": 90 * 10**6,
    "JoblibLauncher": 400 * 10**6,
}


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity: ``taskset``, a cgroup's cpuset)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parallel_jobs(n_jobs: int) -> int:
    """``n_jobs`` as joblib reads it: a positive count, or -1 for one per CPU core (-2: all but one...)."""
    return max(1, n_jobs if n_jobs > 0 else usable_cores() + 1 + n_jobs)


def check_threads(cfg: DictConfig) -> None:
    """``torch_threads`` at most the cores this machine gives the run: each thread beyond them waits on the others
    at every product (``torch_threads=1000``: a 2,048-step PPO run not finished after 300 s on 2
    cores, 13 s with 1). Checked for a new run, and a sweep whose jobs train on this machine (not SLURM's or Ray's
    nodes); not for a resume, whose saved threads stay: its results depend on them."""
    cores = usable_cores()
    _check(
        cfg.torch_threads <= cores,
        "torch_threads",
        cfg.torch_threads,
        f"0 (torch's default) or 1 to {cores}, the cores this machine gives the run: threads beyond them wait on "
        "each other at every matrix product",
    )


def sweep_memory_warning(launcher: str, n_jobs: int, needs: list[float], seeds_per_process: int = 1) -> str | None:
    """What to say where the jobs a sweep runs at once on this machine (``hydra.launcher.n_jobs`` of them with
    lander's launcher or joblib's; a process each, or each ``seeds_per_process`` seeds), each at least
    :data:`JOB_BYTES` and its :func:`memory_needed`, need more memory than is available (:func:`machine_memory`):
    each job alone passed :func:`check_memory`, all of them at once need not. A warning, not a refusal: the
    figures are lower bounds, and the launchers survive a job the OOM killer ends (joblib's runs it again from its
    checkpoint; lander's records it killed, and a re-run of the sweep resumes it).

    :param launcher: the class name of the sweep's launcher (others run the jobs elsewhere: SLURM, a Ray cluster)
    :param needs: the bytes :func:`memory_needed` counts for each job (all its process's seeds)
    :return: the warning, or None where the jobs fit
    """
    if launcher not in JOB_BYTES or not needs:
        return None
    processes = -(-len(needs) // max(1, seeds_per_process))
    at_once = min(processes, parallel_jobs(n_jobs))
    largest = sorted(needs, reverse=True)[:at_once]
    needed = sum(JOB_BYTES[launcher] + n for n in largest)
    available, where = machine_memory()
    if needed <= available:
        return None
    fits = max(1, int(available // (JOB_BYTES[launcher] + largest[0])))
    return (
        f"hydra.launcher.n_jobs={n_jobs}: this sweep runs {at_once} jobs at once on this machine, which need at least "
        f"{needed / 1e9:,.1f} GB of memory (each {JOB_BYTES[launcher] / 1e9:.2f} GB with this launcher, plus its envs "
        f"and buffers), and {where} {available / 1e9:,.1f} GB available: the OOM killer may end some of them "
        f"(by this count at most {fits} fit: hydra.launcher.n_jobs={fits})"
    )


def memory_needed(cfg: DictConfig) -> dict[str, float]:
    """Bytes the run's largest allocations take, by what takes them: the training envs, SB3's rollout buffer
    (PPO, A2C: ``n_steps x n_envs`` rows, copied once when flattened for the update) or replay buffer (DQN, SAC,
    TD3: ``buffer_size`` rows, the next observation stored too unless ``optimize_memory_usage``), an
    evaluation's records of its ``eval.episodes`` episodes, and the networks of a given ``policy_kwargs.net_arch``
    (:func:`network_weights`); all of it for each of the ``seeds_per_process`` seeds one process trains.

    A row holds the observation and the action (in the env's own dtypes, as ``env.wrappers`` make them: Pong's
    preprocessing shrinks its frames) and a few float32 scalars. Image envs' networks are not estimated (their
    ``net_arch`` follows a CNN), nor their buffers where lander's own wrappers change their frames.
    """
    n_envs = budget(cfg)[1]
    seeds = int(cfg.get("seeds_per_process") or 1)  # side by side: one process holds every seed's envs and buffers
    needed = {
        "training envs": float(seeds * n_envs * ENV_BYTES),
        "evaluation envs": float(seeds * min(cfg.eval.n_envs, cfg.eval.episodes) * ENV_BYTES),  # no more than episodes
        "evaluation episodes": float(seeds * cfg.eval.episodes * EPISODE_BYTES),
    }
    image = cfg.env.observation_space == "image"
    spaces = wrapped_spaces(cfg)  # the frames the buffers hold: Pong's 4 x 84 x 84, not the raw 210 x 160 x 3
    if spaces is None and image and cfg.env.wrappers:  # lander's own wrappers, not built here: frames not known
        return needed
    if spaces is None:
        spaces = env_spaces(cfg.env.id, OmegaConf.to_container(cfg.env.kwargs, resolve=True))  # type: ignore[arg-type]
    obs, act = spaces.obs_bytes, spaces.act_bytes
    model = cfg.algo.model
    if isinstance(model.get("n_steps"), int):
        needed["rollout buffer"] = seeds * 2.0 * model.n_steps * n_envs * (obs + act + 6 * 4)
    if isinstance(model.get("buffer_size"), int):
        observations = 1 if model.get("optimize_memory_usage") else 2
        needed["replay buffer"] = seeds * float(model.buffer_size) * (observations * obs + act + 3 * 4)
    if (net_arch := given_net_arch(model)) is not None and not image:  # an image's follows a CNN
        needed["networks"] = seeds * float(network_weights(str(model._target_), net_arch, spaces)) * WEIGHT_BYTES
    return needed


WEIGHT_BYTES = 16  # a float32 weight, its gradient and the optimizer's two moments (Adam's; RMSprop keeps one)
Q_CRITICS = ("SAC", "TD3", "DDPG")  # an actor (pi) and twin Q-networks (qf) with target copies
LIST_ONLY = ("DQN",)  # one Q-network (and its target copy), from a list
NET_ARCH_KEYS: dict[str, tuple[str, ...]] = {  # the keys of a net_arch dict each model class reads (): a list only
    **dict.fromkeys(("PPO", "A2C", "Reinforce", "MAC"), ("pi", "vf")),  # ActorCriticPolicy: an actor, a critic
    **dict.fromkeys(Q_CRITICS, ("pi", "qf")),
    **dict.fromkeys(LIST_ONLY, ()),
}


def given_net_arch(model: DictConfig) -> Any:
    """``algo.model.policy_kwargs.net_arch`` as a plain value, or None where it is not set."""
    policy_kwargs = model.get("policy_kwargs")
    if not isinstance(policy_kwargs, DictConfig):
        return None
    value = policy_kwargs.get("net_arch")
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig | ListConfig) else value


def network_weights(target: str, net_arch: list[int] | dict[str, list[int]], spaces: Spaces) -> int:
    """Weights (and biases) of the networks the model class ``target`` builds from a checked ``net_arch``
    (:func:`check_net_arch`), counted as SB3 builds them: the actor and critic of an ``ActorCriticPolicy``, an actor
    and two Q-networks with a target copy of each (SAC, TD3), or a Q-network and its target (DQN); an unknown
    class as an actor-critic."""

    def mlp(inputs: int, hidden: list[int], outputs: int) -> int:
        sizes = [inputs, *hidden, outputs]
        return sum((a + 1) * b for a, b in itertools.pairwise(sizes))

    layers = net_arch if isinstance(net_arch, dict) else {"pi": net_arch, "vf": net_arch, "qf": net_arch}
    name = target.rpartition(".")[2]
    if name in LIST_ONLY:
        return 2 * mlp(spaces.obs_size, layers["pi"], spaces.act_outputs)
    if name in Q_CRITICS:
        actor = mlp(spaces.obs_size, layers["pi"], 2 * spaces.act_outputs)
        return 2 * actor + 4 * mlp(spaces.obs_size + spaces.act_outputs, layers["qf"], 1)
    actor = mlp(spaces.obs_size, layers.get("pi", []), spaces.act_outputs)
    return actor + mlp(spaces.obs_size, layers.get("vf", []), 1)


def check_net_arch(model: DictConfig) -> None:
    """``algo.model.policy_kwargs.net_arch`` is SB3's: a list of hidden layers' widths (integers >= 1), or a dict of
    such lists where the class takes one: ``pi`` and ``vf`` for an ``ActorCriticPolicy`` (PPO, A2C, lander's
    REINFORCE and MAC; an absent key is no hidden layer), ``pi`` and ``qf`` for SAC and TD3 (both given); DQN takes
    a list; another class, a list or a dict of lists. Before, a width below 1 or another form failed in the run's
    directory (SB3's TypeError, KeyError or assertion), a width of 0 trained an empty layer, and a key SB3 does not
    read (``{pi: [64], fv: [64]}``) was passed over without a word."""
    net_arch = given_net_arch(model)
    if net_arch is None:
        return
    name = str(model._target_).rpartition(".")[2]
    keys = NET_ARCH_KEYS.get(name)
    if keys == ():
        forms = f"{name} takes a list: [256, 256]"
    elif keys is None:
        forms = "or a dict of such lists"
    else:
        forms = f"or a dict of such lists: {{{', '.join(f'{k}: [...]' for k in keys)}}}"

    def widths(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in value)

    if isinstance(net_arch, dict) and keys != ():
        ok = all(widths(v) for v in net_arch.values())
        ok = ok and (keys is None or set(net_arch) <= set(keys))
        ok = ok and (name not in Q_CRITICS or set(net_arch) == set(keys or ()))
    else:
        ok = widths(net_arch)
    _check(
        ok, "algo.model.policy_kwargs.net_arch", net_arch, f"a list of hidden layers' widths, integers >= 1 ({forms})"
    )


class Spaces(NamedTuple):
    """What the memory estimate reads of an env's spaces: the bytes of one observation and one action, the
    observation's numbers and the policy's outputs (a discrete space's actions, a box's numbers)."""

    obs_bytes: int
    act_bytes: int
    obs_size: int
    act_outputs: int
    action_kind: str  # as env.action_space names it (action_space_kind)
    observation_kind: str  # as env.observation_space names it (observation_space_kind), before env.wrappers


MAKE_KEYWORDS = ("max_episode_steps", "disable_env_checker")  # gymnasium.make's own, beside the env's parameters


def check_env_kwargs(env_id: str, kwargs: dict[str, Any]) -> None:
    """A name the env's constructor does not take (where it names all it takes: no ``**kwargs``) is refused, with
    the names it takes (``+env.kwargs.gravty=-5`` was Gymnasium's TypeError). Each of ``env.kwargs`` whose
    parameter defaults to a bool must be a bool, and one defaulting to a number a number: the env takes what it is
    given, so ``+env.kwargs.enable_wind=no`` (the string ``'no'``, true to Python) trained LunarLander with wind,
    without a word. Parameters read from the env's constructor
    (:func:`lander.registry.env_creator`); one that cannot be read is passed over.

    :param env_id: the Gymnasium id, as named in the message
    :param kwargs: ``env.kwargs`` as plain values
    """
    try:
        parameters = inspect.signature(env_creator(env_id)).parameters
    except (TypeError, ValueError):  # no readable signature (a C callable, a broken entry point): the env decides
        return
    defaults = {name: p.default for name, p in parameters.items()}
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):  # it names all it takes
        known = [*defaults, *MAKE_KEYWORDS]
        for name in kwargs:
            if name not in known:
                raise ConfigError(
                    f"unknown key 'env.kwargs.{name}': {env_id} takes no parameter {name!r}."
                    f"{did_you_mean(name, known)} It takes {', '.join(known)}"
                )
    for name, value in kwargs.items():
        default = defaults.get(name, inspect.Parameter.empty)
        if isinstance(default, bool):
            allowed = f"true or false ({env_id}'s default: {default})"
            _check(isinstance(value, bool), f"env.kwargs.{name}", value, allowed)
        elif isinstance(default, int | float):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            _check(ok, f"env.kwargs.{name}", value, f"a number ({env_id}'s default: {default})")


def check_video(cfg: DictConfig) -> None:
    """``video.enabled`` records the trained agent on an env made with ``render_mode="rgb_array"``
    (:func:`check_renders`): it failed there, after training."""
    if cfg.video.enabled:
        check_renders(cfg.env.id, "video.enabled")


def check_renders(env_id: str, key: str) -> None:
    """A video of ``env_id`` (asked for by ``key=true``) needs an env made with ``render_mode="rgb_array"``: one
    whose constructor takes no ``render_mode``, or whose class lists its render modes without ``rgb_array``
    (``metadata["render_modes"]``, ``[]`` by ``gymnasium.Env``'s default), cannot make it.

    :raise ConfigError: naming ``key`` and why, where the env cannot render ``rgb_array`` frames
    """
    modes = render_modes(env_id)
    if not takes_render_mode(env_id):
        why = "its constructor takes no render_mode"
    elif modes is not None and "rgb_array" not in modes:
        why = f"its class's metadata['render_modes'] is {list(modes)}"
    else:
        return
    raise ConfigError(
        f"{key}=true records the trained agent on env.id={env_id!r} made with render_mode='rgb_array', "
        f"which it does not offer ({why}): give {key}=false, or let the env render 'rgb_array' frames"
    )


@functools.cache
def _spaces(env_id: str, kwargs_json: str) -> Spaces:
    # gymnasium and NumPy: 0.11 s of the 0.3 s that `import lander.config.precheck` takes (measured, best of 5), so
    # imported where an env is checked: a command refused for a bad key says so sooner
    import gymnasium

    spec = routed(env_id)
    kwargs = json.loads(kwargs_json)
    if spec is not None:
        check_env_kwargs(env_id, kwargs)
    try:
        env = gymnasium.make(env_id, **kwargs)
    except Exception as exc:  # the env's own check of its arguments: an assert, a TypeError for a name it lacks
        raise ConfigError(
            f"env.kwargs: {env_id} cannot be made with {kwargs} ({type(exc).__name__}: {str(exc).strip()})"
        ) from None
    try:
        return spaces_of(env)
    finally:
        env.close()


def routed(env_id: str) -> Any:
    """``env_id``'s registry entry (None if Gymnasium has none), MuJoCo's compiler warnings sent to logging, not to
    ``./MUJOCO_LOG.TXT``, where it is a MuJoCo env, before a check makes one."""
    import gymnasium  # 0.07 s: see _spaces

    spec = gymnasium.registry.get(env_id.rpartition(":")[2])  # (a module:Id's module imported by check_env_id)
    if spec is not None and "mujoco" in str(spec.entry_point):
        from lander.envs import route_mujoco_warnings  # with SB3 and torch: only where MuJoCo is loaded too

        route_mujoco_warnings(env_id)
    return spec


def spaces_of(env: Any) -> Spaces:
    """What the memory estimate reads of a made env's spaces."""
    import gymnasium  # made by the caller: imported already
    import numpy as np

    sizes = []
    for space in (env.observation_space, env.action_space):
        parts = space.spaces.values() if isinstance(space, gymnasium.spaces.Dict) else [space]  # each stored
        numbers = [int(np.prod(part.shape or (1,))) for part in parts]
        sizes.append(sum(numbers))
        sizes.append(sum(n * np.dtype(p.dtype or np.int64).itemsize for n, p in zip(numbers, parts, strict=True)))
    outputs = int(getattr(env.action_space, "n", sizes[2]))  # Discrete: one logit an action
    kinds = action_space_kind(env.action_space), observation_space_kind(env.observation_space)
    return Spaces(sizes[1], sizes[3], sizes[0], outputs, *kinds)


def env_spaces(env_id: str, kwargs: dict[str, Any]) -> Spaces:
    """What the memory estimate reads of ``env_id``'s spaces (one env made to read them, once a process)."""
    return _spaces(env_id, json.dumps(kwargs, sort_keys=True, default=str))


CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_FILES = {  # cgroup version -> (the limit, the usage, memory.stat's reclaimable page cache)
    2: ("memory.max", "memory.current", "inactive_file"),
    1: ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
}
NO_LIMIT = 2**62  # cgroup v1's "no limit" is a number near 2**63 (rounded to a page)


def cgroup_memory(root: Path = CGROUP_ROOT, membership: str | None = None) -> float | None:
    """Bytes the memory cgroups of this process still allow: over its cgroup and those above it, the smallest limit
    less what is used there (its reclaimable page cache, ``inactive_file``, not counted as used); None where none
    limits it. A container's ``--memory``, a SLURM job's ``--mem`` and systemd's ``MemoryMax`` are such limits,
    which ``psutil.virtual_memory()`` (the machine's) does not see.

    :param root: where the cgroup hierarchies are mounted
    :param membership: ``/proc/self/cgroup``'s text (read when None)
    """
    try:
        text = membership if membership is not None else Path("/proc/self/cgroup").read_text()
    except OSError:
        return None
    left: list[float] = []
    for line in text.splitlines():
        hierarchy, _, controllers_path = line.partition(":")
        controllers, _, path = controllers_path.partition(":")
        if hierarchy == "0" and controllers == "":
            version, base = 2, root
        elif "memory" in controllers.split(","):
            version, base = 1, root / "memory"
        else:
            continue
        limit_name, usage_name, cache_name = CGROUP_FILES[version]
        directory = base / path.lstrip("/")
        while directory.is_relative_to(base):
            try:
                limit = (directory / limit_name).read_text().strip()
                if limit != "max" and int(limit) < NO_LIMIT:
                    stat = dict(row.split() for row in (directory / "memory.stat").read_text().splitlines())
                    used = int((directory / usage_name).read_text()) - int(stat.get(cache_name, 0))
                    left.append(float(max(0, int(limit) - used)))
            except (OSError, ValueError):
                pass  # not this version's files here (a v1 name on a v2 mount), or not readable: no limit known
            if directory == base:
                break
            directory = directory.parent
    return min(left) if left else None


_cgroup_read: list[tuple[float, float | None]] = []  # (when, what cgroup_memory() gave) of the latest reading


def machine_memory() -> tuple[float, str]:
    """Bytes the processes of this machine may still take, and whose limit that is: the machine's available
    memory, or less where a memory cgroup (:func:`cgroup_memory`) limits this process. The cgroup's files are read
    once a second at most (0.3 ms a reading: 0.6 s over a sweep of 2,000 jobs, each checked)."""
    available, where = float(psutil.virtual_memory().available), "this machine has"
    if not _cgroup_read or time.monotonic() - _cgroup_read[0][0] > 1.0:
        _cgroup_read[:] = [(time.monotonic(), cgroup_memory())]
    cgroup = _cgroup_read[0][1]
    if cgroup is not None and cgroup < available:
        available, where = cgroup, "this process's memory cgroup (a container's or a job's limit) leaves"
    return available, where


def available_memory() -> tuple[float, str]:
    """Bytes this process may still take, and whose limit that is: :func:`machine_memory`, or less where the
    process has an address-space limit (``ulimit -v``; a run's virtual size after importing torch and SB3,
    :data:`RUN_VMS`, counted in)."""
    available, where = machine_memory()
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft - RUN_VMS < available:
        available, where = float(max(0, soft - RUN_VMS)), "this process's address-space limit (ulimit -v) leaves"
    return available, where


def check_memory(cfg: DictConfig) -> None:
    """The buffers and envs (:func:`memory_needed`) must fit in :data:`MEMORY_SHARE` of the memory this process may
    still take (:func:`available_memory`); else the run would end in a MemoryError or std::bad_alloc after its
    directory is made."""
    needed = memory_needed(cfg)
    available, where = available_memory()
    if sum(needed.values()) <= MEMORY_SHARE * available:
        return
    parts = ", ".join(f"{what} {size / 1e9:,.1f} GB" for what, size in needed.items() if size >= 1e8)
    seeds = int(cfg.get("seeds_per_process") or 1)
    per = f"; the {seeds} seeds of seeds_per_process={seeds} together" if seeds > 1 else ""
    raise ConfigError(
        f"this run needs about {sum(needed.values()) / 1e9:,.1f} GB of memory ({parts}: from n_envs, eval.n_envs, "
        f"eval.episodes, algo.model.n_steps, algo.model.buffer_size and algo.model.policy_kwargs.net_arch{per}) and "
        f"{where} {available / 1e9:,.1f} GB "
        f"available: lower them (at most {MEMORY_SHARE:.0%} of it is used for these)"
    )


MODEL_NULLABLE = ("clip_range_vf", "target_kl", "max_grad_norm")  # MODEL_RANGES' keys that take null (no clipping...)
SAC_ENT_COEF = re.compile(r"auto(_\d+(\.\d*)?(e-?\d+)?)?")  # SAC's learned entropy coefficient, its initial value


def check_model_values(model: DictConfig) -> None:
    """Every number in ``algo.model`` must be finite, and the keys of :data:`MODEL_RANGES` in their range."""
    plain = OmegaConf.to_container(model, resolve=True)  # a dict: a key absent from a DictConfig is an exception
    assert isinstance(plain, dict)  # that OmegaConf formats, 0.11 ms each (2.1 ms a job of a sweep, now 0.35)
    for key, number in numbers(plain, "algo.model"):
        _check(math.isfinite(number), key, number, "a finite number (not nan or inf)")
    for key, (low, high, low_in, high_in, allowed) in MODEL_RANGES.items():
        value = plain.get(key)
        if key == "train_freq" and isinstance(value, list) and value:
            value = value[0]  # [n, "step"]
        if isinstance(value, int | float) and not isinstance(value, bool):
            inside = (value >= low if low_in else value > low) and (value <= high if high_in else value < high)
            whole = isinstance(value, int) or not allowed.startswith("an integer")  # 1e15 is a float to SB3
            _check(inside and whole, f"algo.model.{key}", value, allowed)
        elif isinstance(value, bool | str) or (value is None and key in plain and key not in MODEL_NULLABLE):
            # n_epochs=true trained one epoch (True is 1 to Python), n_epochs=a failed inside the run
            _check(key == "ent_coef" and SAC_ENT_COEF.fullmatch(str(value)) is not None, f"algo.model.{key}", value,
                   allowed + (" (or auto, auto_<initial value> for SAC)" if key == "ent_coef" else ""))  # fmt: skip
    steps = plain.get("gradient_steps")
    if isinstance(steps, int) and not isinstance(steps, bool):
        allowed = "an integer >= 1, or -1 (as many as env steps)"
        _check(steps >= 1 or steps == -1, "algo.model.gradient_steps", steps, allowed)


GIVEN_BY_LANDER = {  # what lander.algorithms.build gives the model class itself (an algo.model key was ignored)
    "env": "the training envs, made from env= and n_envs=",
    "seed": "the run's seed=",
    "device": "device= (checked against this machine: give device=cuda)",
    "verbose": "verbose=0 (lander logs to run.log itself)",
}
SB3_POLICIES = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy")  # the names SB3's algorithms know (policy_aliases)


def check_model_given_by_lander(model: DictConfig) -> None:
    """``algo.model.{env,seed,device,verbose}`` are refused: lander gives the model these itself
    (:data:`GIVEN_BY_LANDER`), so ``+algo.model.device=cuda`` was ignored without a word."""
    for key, given in GIVEN_BY_LANDER.items():
        if key in model:
            raise ConfigError(f"algo.model.{key} is not allowed: lander gives the model {given}")


def check_policy(cfg: DictConfig) -> None:
    """An SB3 model's ``algo.model.policy`` (a name) is one SB3 knows, ``CnnPolicy`` is for image observations and
    ``MultiInputPolicy`` for dict ones, which no other takes: each failed in the run's directory after its envs
    were made."""
    model = cfg.algo.model
    policy = model.policy if "policy" in model else None
    if not isinstance(policy, str) or not str(model._target_).startswith("stable_baselines3."):
        return
    _check(policy in SB3_POLICIES, "algo.model.policy", policy, f"one of SB3's {', '.join(SB3_POLICIES)}")
    kind = cfg.env.observation_space
    if (policy == "MultiInputPolicy") != (kind == "dict"):  # SB3 said so once the envs were made
        fits = "MultiInputPolicy: give env.policy=MultiInputPolicy" if kind == "dict" else "MlpPolicy or CnnPolicy"
        raise ConfigError(
            f"algo.model.policy={policy}: env={cfg.env.name} has {kind} observations, which SB3 takes with {fits}"
        )
    if policy == "CnnPolicy" and cfg.env.observation_space != "image":
        raise ConfigError(
            f"algo.model.policy=CnnPolicy is for image observations, and env={cfg.env.name} has "
            f"{cfg.env.observation_space} ones: MlpPolicy (the env's own, env.policy={cfg.env.policy})"
        )


def numbers(value: Any, key: str) -> list[tuple[str, float]]:
    """Every int or float in a plain container, with its dotted key."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [(key, value)]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [found for name, item in items for found in numbers(item, f"{key}.{name}")]


def check_env_id(env_id: str) -> None:
    """Gymnasium must know ``env.id`` (after importing the module of a ``module:Id``, as ``gymnasium.make`` does)."""
    import gymnasium  # 0.07 s: see _spaces

    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(
                f"env.id={env_id!r}: the module {module!r} cannot be imported ({exc}){not_on_path(module)}"
            ) from exc
        except Exception as exc:  # the module's own code failed (a SyntaxError, an error it raises): its traceback
            raise ConfigError(  # it was the command's, exit 1
                f"env.id={env_id!r}: importing the module {module!r} failed ({root_cause(exc)})"
            ) from None
    if name not in gymnasium.registry:
        close = difflib.get_close_matches(name, list(gymnasium.registry), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else " (see gymnasium.registry)"
        raise ConfigError(f"env.id={env_id!r}: Gymnasium has no such environment{hint}")


def warn_without_time_limit(cfg: DictConfig) -> None:
    """Warn, once a process, of an env of one's own module (``module:Id``) registered without ``max_episode_steps``
    and not capped by ``env.kwargs``: an episode that never ends (an untrained greedy policy standing still) holds
    each evaluation, and the run, for ever. Not refused: an env may end every episode itself, as Blackjack does."""
    import gymnasium  # imported already by check_env_id

    env_id = str(cfg.env.id)
    if ":" not in env_id or "max_episode_steps" in (cfg.env.get("kwargs") or {}) or env_id in WARNED_TIME_LIMIT:
        return
    spec = gymnasium.registry.get(env_id.rpartition(":")[2])
    if spec is not None and spec.max_episode_steps is None:
        WARNED_TIME_LIMIT.add(env_id)
        logging.getLogger(__name__).warning(
            "env.id=%r has no time limit (registered without max_episode_steps): an episode that never ends holds "
            "each evaluation, and the run, for ever; give +env.kwargs.max_episode_steps=N to end its episodes at N "
            "steps (truncated), or register it with max_episode_steps",
            env_id,
        )


WARNED_TIME_LIMIT: set[str] = set()  # the env ids warn_without_time_limit warned of in this process


def not_on_path(module: str) -> str:
    """Why a module in the working directory is not imported, where it is not on ``sys.path`` (the service takes
    its root off, and starts its runs in an empty directory): the advice, or nothing."""
    here, top = Path.cwd(), module.split(".")[0]
    if not ((here / f"{top}.py").is_file() or (here / top).is_dir()):
        return ""
    if any(Path(entry or ".").resolve() == here.resolve() for entry in sys.path):
        return ""
    return (
        f"; {top} is in the working directory, which this process does not import from: the service and the runs "
        "it starts import no code from its root (a downloaded folder's neither): install it as a package "
        "(pip install -e <its project>) and allow it with --allow-target"
    )


def check_device(device: str) -> None:
    """A CUDA or MPS device must exist on this machine (torch would fall back or fail mid-run)."""
    if device.startswith("cuda"):
        import torch  # 1.1 s (python -X importtime): only where a run asks for a GPU, not in every check

        index = int(device.split(":")[1]) if ":" in device else 0
        # counted by NVML where it answers (torch's device_count): CUDA's runtime, once asked (is_available), is
        # not usable in a forked child, and lander's launcher forks a sweep's jobs from the process checking them
        found = torch.cuda.device_count()
        _check(index < found, "device", device, f"a device this machine has ({found} CUDA devices): cpu or auto")
    elif device == "mps":
        import torch  # 1.1 s: as above

        _check(torch.backends.mps.is_available(), "device", device, "a device this machine has: cpu or auto")


def check_env_wrappers(cfg: DictConfig) -> None:
    """Each of ``env.wrappers`` is a ``_target_`` config whose target exists, and, unless lander's own wrappers are
    among them (not imported here), they wrap one env made with ``env.kwargs`` as the run wraps its envs (Pong's:
    0.3 s, once a process): a name not found, or an argument a wrapper refuses (``AtariPreprocessing`` around an
    ALE v5 env that skips frames itself), failed once Hydra had made the run's directory, in Hydra's words."""
    wrappers = OmegaConf.to_container(cfg.env.wrappers, resolve=True)
    assert isinstance(wrappers, list)
    for index, wrapper in enumerate(wrappers):
        target = wrapper.get("_target_") if isinstance(wrapper, dict) else None
        allowed = "a wrapper's config: {_target_: module.Wrapper, its arguments}"
        _check(isinstance(target, str), f"env.wrappers[{index}]", wrapper, allowed)
        if str(target).startswith("lander."):  # lander's own (lander.envs: SB3 and torch, ~2 s): not imported here
            continue
        import_target(str(target), f"env.wrappers[{index}]._target_", class_only=False)
    wrapped_spaces(cfg)


def wrapped_spaces(cfg: DictConfig) -> Spaces | None:
    """The spaces of one env made with ``env.kwargs`` and wrapped in ``env.wrappers`` (once a process for each),
    what the run's buffers hold; None where it has no wrappers, or lander's own are among them (not imported
    here)."""
    wrappers = OmegaConf.to_container(cfg.env.wrappers, resolve=True)
    assert isinstance(wrappers, list)
    if not wrappers or any(str(w.get("_target_")).startswith("lander.") for w in wrappers if isinstance(w, dict)):
        return None
    kwargs = OmegaConf.to_container(cfg.env.kwargs, resolve=True)
    return _wrap(cfg.env.id, json.dumps({"kwargs": kwargs, "wrappers": wrappers}, sort_keys=True, default=str))


@functools.cache
def _wrap(env_id: str, given_json: str) -> Spaces:
    import gymnasium  # 0.07 s: see _spaces

    given = json.loads(given_json)
    routed(env_id)
    env = gymnasium.make(env_id, **given["kwargs"])  # made by _spaces already: it was not refused there
    try:
        for index, wrapper in enumerate(given["wrappers"]):
            try:
                env = instantiate(wrapper, env)
            except Exception as exc:  # Hydra's InstantiationException, the wrapper's own error its cause
                raise ConfigError(
                    f"env.wrappers[{index}] ({wrapper['_target_']}) cannot wrap {env_id}: {root_cause(exc)}"
                ) from None
        return spaces_of(env)
    finally:
        env.close()


def check_env_spaces(cfg: DictConfig) -> None:
    """The env made with ``env.kwargs`` has the kinds of spaces its config declares (``env.action_space``,
    ``env.observation_space``), where no ``env.wrappers`` change them (else the run checks its wrapped envs):
    ``+env.kwargs.continuous=true`` on ``env=lunar_lander`` was refused only once Hydra had made the run's
    directory. Image envs are not made here (see :func:`memory_needed`)."""
    if cfg.env.observation_space == "image" or cfg.env.wrappers:
        return
    kwargs = OmegaConf.to_container(cfg.env.kwargs, resolve=True)
    spaces = env_spaces(cfg.env.id, kwargs)  # type: ignore[arg-type]
    for key, kind in (("action_space", spaces.action_kind), ("observation_space", spaces.observation_kind)):
        if cfg.env[key] == kind:
            continue
        configs = {
            option: yaml.safe_load((CONF_DIR / "env" / f"{option}.yaml").read_text()) for option in group_options("env")
        }
        declaring = [option for option, c in configs.items() if c.get("id") == cfg.env.id and c.get(key) == kind]
        instead = f"env={declaring[0]} declares it, or give env.{key}={kind}" if declaring else f"give env.{key}={kind}"
        raise ConfigError(
            f"env.{key}={cfg.env[key]!r} (env={cfg.env.name}) does not match {cfg.env.id}'s {key.replace('_', ' ')}"
            f" made with env.kwargs {kwargs}, a {kind} one: {instead}"
        )


def check_compatible(cfg: DictConfig) -> None:
    """The algorithm must support the env's action and observation spaces; name the envs it does fit."""
    for kind, env_kind, algo_kinds in (
        ("action", cfg.env.action_space, cfg.algo.action_spaces),
        ("observation", cfg.env.observation_space, cfg.algo.observation_spaces),
    ):
        if env_kind not in algo_kinds:
            fitting = compatible_envs(cfg.algo)
            raise ConfigError(
                f"algo={cfg.algo.name} cannot act in env={cfg.env.name}: {cfg.algo.name} supports "
                f"{'/'.join(algo_kinds)} {kind} spaces and {cfg.env.name} has a {env_kind} one. "
                f"Envs it supports: {', '.join(fitting) or 'none configured'} "
                f"(for example: python -m lander.run algo={cfg.algo.name} env={fitting[0] if fitting else '...'})"
            )


# the keys (algo.model) of each algorithm lander.algorithms.batched implements, and of policy_kwargs
ON_POLICY_KEYS = {
    "_target_", "policy", "learning_rate", "n_steps", "gamma", "gae_lambda", "normalize_advantage", "ent_coef",
    "vf_coef", "max_grad_norm", "stats_window_size", "policy_kwargs", "use_sde", "sde_sample_freq",
}  # fmt: skip
SIDE_BY_SIDE_KEYS = {
    "stable_baselines3.PPO": ON_POLICY_KEYS | {"batch_size", "n_epochs", "clip_range", "clip_range_vf", "target_kl"},
    "stable_baselines3.A2C": ON_POLICY_KEYS | {"rms_prop_eps", "use_rms_prop"},
}
SIDE_BY_SIDE_POLICY_KWARGS = {"net_arch", "activation_fn", "ortho_init", "log_std_init", "optimizer_class",
                              "optimizer_kwargs"}  # fmt: skip
SIDE_BY_SIDE_ACTIVATIONS = ("torch.nn.Tanh", "torch.nn.ReLU", "torch.nn.Identity")  # what its NumPy gradient covers
SIDE_BY_SIDE_OPTIMIZERS = (  # what lander.algorithms.batched.loss steps K rows of, with these optimizer_kwargs
    "torch.optim.Adam",
    "torch.optim.RMSprop",
    "stable_baselines3.common.sb2_compat.rmsprop_tf_like.RMSpropTFLike",
)
SIDE_BY_SIDE_OPTIMIZER_KWARGS = {"alpha", "eps", "betas", "weight_decay"}  # weight_decay: 0 only


def activation_name(model: DictConfig) -> str:
    """``policy_kwargs.activation_fn`` as an import path (``torch.nn.Tanh``, SB3's default, where it is not set;
    ``{_target_: hydra.utils.get_class, path: ...}`` or the path itself)."""
    value = (model.get("policy_kwargs") or {}).get("activation_fn")
    if value is None:
        return "torch.nn.Tanh"
    path = value.get("path") if isinstance(value, DictConfig) else value
    return str(path).replace("torch.nn.modules.activation.", "torch.nn.")


def check_side_by_side(cfg: DictConfig) -> None:
    """``seeds_per_process`` > 1 trains seeds side by side with batched networks, and ``batched_engine`` one seed
    alone on the same engine: PPO's or A2C's MLP policy on vector observations, with the keys and optimizers
    :mod:`lander.algorithms.batched` implements; anything else named, with the key that asked for it."""
    value = cfg.get("seeds_per_process", 1)
    _check(isinstance(value, int) and value >= 1, "seeds_per_process", value, "an integer >= 1 (1: one seed, SB3)")
    if value == 1 and not cfg.get("batched_engine", False):  # a bool: the schema types it, the precheck its value
        return
    # what is refused, named by the key the user set: seeds_per_process (side by side) or batched_engine (alone)
    if value > 1:
        switch, instead = (
            f"seeds_per_process={value} trains seeds side by side on the batched engine",
            "seeds_per_process=1",
        )
    else:
        switch, instead = "batched_engine=true trains a seed on the batched engine", "batched_engine=false"
    model = cfg.algo.model
    keys = SIDE_BY_SIDE_KEYS.get(str(model._target_), set())
    policy_kwargs = model.get("policy_kwargs") or {}
    why = None
    if not keys:
        why = (
            f"implements PPO and A2C only ({', '.join(SIDE_BY_SIDE_KEYS)}), not algo={cfg.algo.name} "
            f"(algo.model._target_={model._target_})"
        )
    elif cfg.env.observation_space != "vector":
        why = f"takes vector observations only (MlpPolicy), not env={cfg.env.name}'s {cfg.env.observation_space} ones"
    elif unknown := sorted(set(model) - keys):
        why = f"does not implement algo.model.{unknown[0]} (it implements {', '.join(sorted(keys))})"
    elif model.get("use_sde"):
        why = "does not implement algo.model.use_sde=true (gSDE)"
    elif model.get("policy") != "MlpPolicy":
        why = f"takes algo.model.policy=MlpPolicy only, not {model.get('policy')}"
    elif unknown := sorted(set(policy_kwargs) - SIDE_BY_SIDE_POLICY_KWARGS):
        why = (
            f"does not implement algo.model.policy_kwargs.{unknown[0]} (it implements "
            f"{', '.join(sorted(SIDE_BY_SIDE_POLICY_KWARGS))})"
        )
    elif (activation := activation_name(model)) not in SIDE_BY_SIDE_ACTIVATIONS:
        why = (
            f"implements activation_fn {', '.join(SIDE_BY_SIDE_ACTIVATIONS)} only, not "
            f"algo.model.policy_kwargs.activation_fn={activation}"
        )
    else:
        why = optimizer_refusal(policy_kwargs)
    if why is None and cfg.device != "cpu":
        why = f"runs its rollouts and updates in NumPy on the CPU: device=cpu only, not device={cfg.device}"
    if why:
        raise ConfigError(f"{switch}, which {why}: give {instead}")


def optimizer_refusal(policy_kwargs: Any) -> str | None:
    """Why the batched engine cannot step a model with these ``policy_kwargs``' optimizer (None: it can): the class
    one of :data:`SIDE_BY_SIDE_OPTIMIZERS`, its ``optimizer_kwargs`` of :data:`SIDE_BY_SIDE_OPTIMIZER_KWARGS`."""
    optimizer = policy_kwargs.get("optimizer_class")
    path = str(optimizer.get("path") if isinstance(optimizer, DictConfig) else optimizer)
    kwargs = policy_kwargs.get("optimizer_kwargs") or {}
    if optimizer is not None and path not in SIDE_BY_SIDE_OPTIMIZERS:
        return (
            f"implements optimizer_class {', '.join(SIDE_BY_SIDE_OPTIMIZERS)} only, not "
            f"algo.model.policy_kwargs.optimizer_class={path}"
        )
    if unknown := sorted(set(kwargs) - SIDE_BY_SIDE_OPTIMIZER_KWARGS):
        return (
            f"does not implement algo.model.policy_kwargs.optimizer_kwargs.{unknown[0]} (it implements "
            f"{', '.join(sorted(SIDE_BY_SIDE_OPTIMIZER_KWARGS))})"
        )
    if kwargs.get("weight_decay"):
        return "does not implement algo.model.policy_kwargs.optimizer_kwargs.weight_decay (0 only)"
    return None


def check_normalize(cfg: DictConfig) -> None:
    """``env.normalize``: SB3's ``VecNormalize`` keeps running statistics of vector observations; its values in
    their ranges."""
    normalize = cfg.env.normalize
    if not normalize.enabled:
        return
    if cfg.env.observation_space != "vector":
        raise ConfigError(
            f"env.normalize.enabled=true: {cfg.env.name} has {cfg.env.observation_space} observations; "
            "env.normalize works with vector observations only (SB3's VecNormalize keeps their running statistics)"
        )
    for key, ok, allowed in (
        ("clip_obs", math.isfinite(normalize.clip_obs) and normalize.clip_obs > 0, "a finite number > 0"),
        ("clip_reward", math.isfinite(normalize.clip_reward) and normalize.clip_reward > 0, "a finite number > 0"),
        ("epsilon", math.isfinite(normalize.epsilon) and normalize.epsilon > 0, "a finite number > 0"),
        ("gamma", normalize.gamma is None or 0 < normalize.gamma <= 1, "null (the run's gamma) or in (0, 1]"),
    ):
        _check(ok, f"env.normalize.{key}", normalize[key], allowed)


def has_api_key() -> bool:
    """True if a W&B API key is in ``WANDB_API_KEY`` or in the netrc file ``wandb login`` writes."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    path = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return bool(path.is_file() and netrc.netrc(path).authenticators(host or ""))
    except (OSError, netrc.NetrcParseError):
        return False


def check_trackers(cfg: DictConfig) -> None:
    """Every tracker under ``logger`` takes the keys it is given, and a W&B one can work: a mode W&B has, and
    online, an API key and a server that answers within its ``connect_timeout`` seconds (with
    ``offline_fallback=true``: go on offline, warned). Before training, so that it fails before anything is written.
    """
    check_tracker_keys(cfg)
    for key, node in tracker_nodes(cfg).items():
        if node._target_ == WANDB_TRACKER:
            mode = chosen_wandb_mode(node.mode)
            if mode not in WANDB_MODES and node.mode is None:
                raise ConfigError(
                    f"WANDB_MODE={mode!r} (the environment's, which logger.{key}.mode=null follows) is not allowed: "
                    f"lander's W&B mode is {' or '.join(WANDB_MODES)}; set WANDB_MODE to one, or unset it (offline)"
                )
            _check(mode in WANDB_MODES, f"logger.{key}.mode", node.mode, " or ".join(WANDB_MODES))
            if mode == "online":
                check_online(node, f"logger.{key}")


def check_wandb_names(cfg: DictConfig) -> None:
    """What a W&B tracker gives ``wandb.init`` from the config, checked by W&B's own settings
    (:func:`wandb_refusal`): the project (none of ``/ \\ # ? % :``, at most 128 characters) and each tag (1 to 64
    characters: ``algo.name``, ``env.name`` and the tracker's ``tags``). Each failed in the run's directory, after
    its envs were made, with W&B's traceback."""
    for where, node in tracker_nodes(cfg).items():
        if node._target_ != WANDB_TRACKER:
            continue
        given: list[tuple[str, str, Any]] = [(f"logger.{where}.project", "project", node.project)]
        given += [("algo.name", "run_tags", (cfg.algo.name,)), ("env.name", "run_tags", (cfg.env.name,))]
        given += [(f"logger.{where}.tags", "run_tags", tuple(str(tag) for tag in node.tags))]  # W&B numbers them
        for key, setting, value in given:
            if (reason := wandb_refusal(setting, value)) is not None:
                tag = " (a W&B tag)" if setting == "run_tags" else ""
                raise ConfigError(f"{key}{tag}: W&B refuses it: {reason}")


@functools.cache  # a sweep's jobs give W&B the same few values (0.13 ms a check)
def wandb_refusal(setting: str, value: Any) -> str | None:
    """Why ``wandb.Settings`` refuses ``value`` for ``setting`` (``project``, ``run_tags``), or None."""
    # W&B's settings, 0.86 s (python -X importtime): only where a W&B tracker is configured, and its run imports them
    from pydantic import ValidationError
    from wandb import Settings
    from wandb.errors import UsageError

    try:
        Settings(**{setting: value})
    except UsageError as exc:
        return str(exc)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
    return None


def check_online(node: DictConfig, where: str) -> None:
    """Online W&B (the node ``where``) needs an API key and a server that answers; with ``offline_fallback`` one
    that does not is a warning (the tracker goes offline when it starts: :func:`wandb_mode`). Changes nothing."""
    if not has_api_key():
        given = (
            f"{where}.mode=online"
            if node.mode is not None
            else f"WANDB_MODE=online (the environment's, which {where}.mode=null follows)"
        )
        raise ConfigError(
            f"{given} needs a W&B API key: set WANDB_API_KEY or run `wandb login`; "
            f"or use {where}.mode=offline (the default; `wandb sync` uploads later) or logger=none"
        )
    url = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")
    problem = unreachable(url, node.connect_timeout)
    if problem is None:
        return
    if node.offline_fallback:
        logging.getLogger(__name__).warning("W&B at %s cannot be reached (%s): logging offline instead", url, problem)
        return
    raise ConfigError(
        f"{where}.mode=online: W&B at {url} cannot be reached ({problem}). Check the network, or use "
        f"{where}.mode=offline (`wandb sync` uploads later), or {where}.offline_fallback=true to go on offline"
    )


def wandb_mode(mode: str, offline_fallback: bool, connect_timeout: float) -> str:
    """The mode a W&B tracker starts in: ``mode``, or offline where it is online, ``offline_fallback`` is set and
    the server does not answer (:func:`unreachable`, asked once a process)."""
    url = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")
    if mode == "online" and offline_fallback and unreachable(url, connect_timeout) is not None:
        return "offline"
    return mode


@functools.cache  # one probe a process: the precheck's and the run's checks, and the tracker's start, share it
def unreachable(url: str, timeout: float) -> str | None:
    """Why the server at ``url`` does not answer within ``timeout`` seconds; None if it answers at all."""
    try:
        urllib.request.urlopen(url.rstrip("/") + "/healthz", timeout=timeout).close()
    except urllib.error.HTTPError:
        return None  # it answered
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
    return None
