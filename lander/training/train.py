"""``train(cfg, run_dir)``: one training run, from a composed config to a complete run directory.

Read top to bottom: check the config, seed everything, build envs and the model, train with
callbacks that write metrics as they go, then save, evaluate, plot, record a video and summarise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import set_random_seed
from threadpoolctl import threadpool_limits

from lander.algorithms.build import build_model, effective_gamma, model_target
from lander.config.checks import Checked, checked
from lander.config.keys import import_target
from lander.config.schema import action_space_kind, budget, observation_space_kind
from lander.envs import make_train_env, normalized
from lander.errors import ConfigError
from lander.faults import fault
from lander.process.clock import cpu_seconds
from lander.process.signals import deferred, pausing, signals_blocked, stop_on_signals, training_clock
from lander.reports.run_report import restate_result
from lander.storage.rundir import RunPaths, RunSummary, Status, remove_temporaries
from lander.tracking.base import TrackedRun, Tracker, make_trackers, run_name
from lander.tracking.outputs import ContinuedCSV, TrackerWriter
from lander.training.budget import BudgetProgressBar, DurationForecast, plan
from lander.training.callbacks import (
    Checkpointer,
    PeriodicEval,
    SharedLocals,
    SignalCheck,
    StopRule,
    callbacks_for,
    run_rss_mb,
    user_callbacks,
)
from lander.training.finish import record_results, record_stop, write_report
from lander.training.resume import load_newest_checkpoint, log_again, truncate_metrics
from lander.training.snapshot import write_snapshot
from lander.training.speed import distribution_checks, fast_paths, use_foreach

log = logging.getLogger(__name__)


def check_model_class(cfg: DictConfig) -> None:
    """``algo.model._target_`` is a class that imports, an SB3 algorithm: one that did not failed the run once its
    files were begun (the checks before it import no model class, which imports torch)."""
    target = str(cfg.algo.model._target_)
    cls = import_target(model_target(cfg), "algo.model._target_")
    if not issubclass(cls, BaseAlgorithm):
        raise ConfigError(f"algo.model._target_={target!r} is a class, not a stable_baselines3 BaseAlgorithm")


def check_env_kinds(cfg: DictConfig, env: Any) -> None:
    """The env's real action and observation spaces must be the kinds its config declares: what the precheck cannot
    see (:func:`lander.config.checks.check_env_spaces` makes no image env and no env with ``env.wrappers``)."""
    for key, kind in (
        ("action_space", action_space_kind(env.action_space)),
        ("observation_space", observation_space_kind(env.observation_space)),
    ):
        if cfg.env[key] != kind:
            env.close()
            raise ConfigError(
                f"env.{key}={cfg.env[key]!r} does not match {cfg.env.id}'s {key.replace('_', ' ')} "
                f"{getattr(env, key)}, a {kind} one (after env.wrappers): give env.{key}={kind}"
            )


def check_footprint(cfg: DictConfig) -> None:
    """``memory_limit_mb`` below what the run holds already (torch, SB3, its envs), before anything is written."""
    limit = OmegaConf.select(cfg, "memory_limit_mb")
    if limit is not None and (footprint := run_rss_mb()) > limit:
        raise ConfigError(
            f"memory_limit_mb={limit:g} is below this run's footprint before training, {footprint:.0f} MB "
            "(torch, SB3 and the envs loaded): allow more, or null for no limit"
        )


def train(
    cfg: DictConfig | Checked, run_dir: Path, group: str | None = None, overrides: list[str] | None = None
) -> RunSummary:
    """Train one agent as configured and leave its complete record in ``run_dir``.

    SIGINT and SIGTERM stop the run as :class:`lander.process.signals.Interrupted`, after it has recorded its state.

    :param cfg: the composed config (``lander/conf/config.yaml`` and overrides), checked here; or one checked
        already (:class:`lander.config.checks.Checked`, as ``lander.run`` hands it down), not checked again
    :param run_dir: the run directory (Hydra's output dir)
    :param group: W&B group (a sweep's id); ``logger.group`` when None
    :param overrides: the command-line overrides, recorded in the summary
    :return: the run summary (also written to ``summary.json``)
    """
    config = (cfg if isinstance(cfg, Checked) else checked(cfg)).cfg
    with stop_on_signals(), distribution_checks(not fast_paths(config)):
        return _train(config, RunPaths(run_dir), group, overrides or [])


def _train(cfg: DictConfig, paths: RunPaths, group: str | None, overrides: list[str]) -> RunSummary:
    check_model_class(cfg)
    extra_callbacks = user_callbacks(cfg)
    total_timesteps, n_envs = budget(cfg)
    set_random_seed(cfg.seed)
    if cfg.torch_threads > 0:  # and NumPy's BLAS: side by side computes its networks by NumPy
        torch.set_num_threads(cfg.torch_threads)
        threadpool_limits(cfg.torch_threads, user_api="blas")
    try:
        env = make_train_env(cfg.env, n_envs, cfg.seed, cfg.vec_env)
    except Exception as exc:  # the env's own code: the checks made one env, and this one failed (a resumed run
        if cfg.get("resume") is None:  # keeps the record it has)
            failed = new_summary(cfg, paths, n_envs, total_timesteps, overrides)
            failed.update(status=Status.FAILED, error=f"{type(exc).__name__}: {exc}", timesteps=0).save(paths)
            log.exception("run failed before training, making its %d training envs: %s", n_envs, exc)
        raise
    try:
        check_env_kinds(cfg, env)
        env = normalized(env, cfg.env.normalize, effective_gamma(cfg))
        # a resumed run's checkpoint is loaded before anything is written: one that cannot be used changes nothing
        resumed = load_newest_checkpoint(cfg, paths, env) if cfg.get("resume") is not None else None
        check_footprint(cfg)
        summary = new_summary(cfg, paths, n_envs, total_timesteps, overrides)
        return _record(cfg, paths, env, summary, resumed, group, extra_callbacks)
    finally:
        env.close()


def _record(
    cfg: DictConfig,
    paths: RunPaths,
    env: Any,
    summary: RunSummary,
    resumed: Any,
    group: str | None,
    extra_callbacks: list[BaseCallback],
) -> RunSummary:
    """From the first file written to the last: whatever stops the run, ``summary.json`` says so truly."""
    checkpointer = Checkpointer(
        cfg.checkpoint_freq, paths.checkpoints, cfg.checkpoint_keep, cfg.checkpoint_replay_buffer
    )
    exit_code, start, model = 1, training_clock(), None
    trackers: dict[str, Tracker] = {}  # the started ones, each finished whatever happens
    earlier = (summary.wall_seconds or 0.0) if cfg.get("resume") is not None else 0.0  # the attempts before this one
    try:
        start_files(cfg, paths, summary)
        done = int(resumed.num_timesteps) if resumed is not None else 0
        start_trackers(cfg, paths, summary, group, done, trackers)
        model = start_model(cfg, paths, env, summary, resumed)
        log_lost_rows(paths, trackers, summary, done)
        evaluator, stop_reason, seconds, cpu_used = learn(
            cfg, model, paths, trackers, checkpointer, extra_callbacks, summary
        )
        summary.update(
            **record_results(cfg, model, evaluator, paths, seconds, done),
            stopped_early=stop_reason,  # None, or why training stopped before the budget
            train_cpu_seconds=round(cpu_used, 2),  # this process's CPU time in learn, evals included
            status=Status.COMPLETED,
            wall_seconds=round(earlier + training_clock() - start, 2),
        )
        summary.peak_rss_mb = peak_rss_mb()  # training, evaluations and the video
        summary.save(paths)
        fault("finish:completed")
        try:
            report_with_peak(cfg, paths, summary)
        except OSError as exc:  # the disk filled up: the run's record is not whole, it did not complete
            summary.status = Status.FAILED
            raise OSError(exc.errno, exc.strerror, str(paths.report)) from exc
        exit_code = 0
        for key, tracker in trackers.items():  # a signal meanwhile leaves the run completed
            fault(f"finish:{key}")
            tracker.log_files(paths, summary)
        return summary
    except BaseException as exc:
        if summary.status != Status.COMPLETED:  # a completed run stays completed (a signal during the upload)
            summary.wall_seconds = round(earlier + training_clock() - start, 2)
            with signals_blocked():  # another signal now would cut the record short: it waits until it is written
                record_stop(cfg, exc, model, checkpointer, paths, summary)
        raise
    finally:
        for tracker in trackers.values():
            tracker.finish(exit_code)
        if trackers and summary.tracked_to != summary.timesteps:  # they hold every row up to here: a resume after
            summary.tracked_to = summary.timesteps  # a later kill logs again only what follows
            with contextlib.suppress(OSError):  # the error that stopped the run, if any, is the one to report
                summary.save(paths)


def log_lost_rows(paths: RunPaths, trackers: dict[str, Tracker], summary: RunSummary, done: int) -> None:
    """A run resumed after a kill: its trackers that lose what they had not written (W&B) get again the rows the
    metric files hold since they were last finished (``summary.tracked_to``), up to the checkpoint's step."""
    buffered = {key: tracker for key, tracker in trackers.items() if not tracker.durable}
    if buffered and summary.tracked_to < done:
        count = log_again(paths, buffered.values(), summary.tracked_to, done)
        log.info("logged again to %s: %d rows, steps %d to %d", ", ".join(buffered), count, summary.tracked_to, done)


def report_with_peak(cfg: DictConfig, paths: RunPaths, summary: RunSummary) -> None:
    """``report.html``, then the run's peak memory with the report's writing included, in ``summary.json`` and in
    the report alike (restated there: its second restatement takes no more memory than the first)."""
    written = write_report(cfg, paths, full_disk_fails=True)
    for _ in range(2 if written else 0):
        if peak_rss_mb() == summary.peak_rss_mb:
            break
        summary.peak_rss_mb = peak_rss_mb()
        restate_result(paths, "peak_rss_mb", summary.peak_rss_mb)
    summary.save(paths)


def peak_rss_mb() -> float:
    """The largest resident memory of this process or of a child it has waited for, so far, in MB: what
    ``/usr/bin/time`` reports as the run's maximum resident set size (Linux counts ``ru_maxrss`` in KiB)."""
    usage = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return round(usage / 1024, 1)


def start_trackers(
    cfg: DictConfig,
    paths: RunPaths,
    summary: RunSummary,
    group: str | None,
    start_step: int,
    started: dict[str, Tracker],
) -> None:
    """Start the config's trackers (``logger``) for this run from ``start_step``, each added to ``started`` (by its
    key) once it has started: one that fails to start leaves those before it to be finished by the caller."""
    run = TrackedRun(cfg, paths, summary, summary.run_name, group, start_step)
    for key, tracker in make_trackers(cfg).items():
        tracker.start(run)
        started[key] = tracker
        fault(f"start:{key}")


def new_summary(
    cfg: DictConfig, paths: RunPaths, n_envs: int, total_timesteps: int, overrides: list[str]
) -> RunSummary:
    """The run's summary as it starts (a resumed run keeps its record, less the error that stopped it)."""
    resuming = cfg.get("resume") is not None
    summary = (RunSummary.load(paths) if resuming else None) or RunSummary(overrides=overrides)
    if summary.stopped_early and total_timesteps > summary.total_timesteps:  # trained further on purpose
        summary.stopped_early = None
    gamma = effective_gamma(cfg)
    return summary.update(
        status=Status.RUNNING,
        error=None,
        run_name=run_name(cfg, gamma),
        algo=cfg.algo.name,
        env=cfg.env.name,
        env_id=cfg.env.id,
        seed=cfg.seed,
        gamma=gamma,
        n_envs=n_envs,
        total_timesteps=total_timesteps,
    )


def start_files(cfg: DictConfig, paths: RunPaths, summary: RunSummary) -> None:
    """The first files of a run: ``summary.json`` (status running) and, for a new run, the snapshot."""
    paths.metrics.mkdir(parents=True, exist_ok=True)
    summary.save(paths)
    fault("start:summary")
    if cfg.get("resume") is None:
        write_snapshot(paths.root)
    else:
        remove_temporaries(paths.root)  # half-written files of the process that was killed


def start_model(cfg: DictConfig, paths: RunPaths, env: Any, summary: RunSummary, resumed: Any) -> Any:
    """A new model, or for ``resume=`` the checkpoint loaded (``resumed``), with the metrics cut back to it.

    A resumed run without a checkpoint (killed before its first) starts again as a new one from step 0.
    """
    if resumed is None:
        truncate_metrics(paths, 0)
        model = build_model(cfg, env, cfg.seed)
        use_foreach(model, fast_paths(cfg))
        return model
    use_foreach(resumed, fast_paths(cfg))
    done = int(resumed.num_timesteps)
    truncate_metrics(paths, done)
    set_random_seed(cfg.seed + done)  # the resumed part is seeded too, from the checkpoint's step
    env.seed(cfg.seed + done)
    summary.resumed_at = [*summary.resumed_at, done]
    summary.save(paths)  # at once: whoever watches the run sees where it resumed from
    return resumed


def yours(cfg: DictConfig) -> str:
    """`` (yours: callbacks.<name>, <its _target_>, ...)``: the user's callbacks, one of which may have ended
    training by returning False from ``_on_step`` ('' where there are none)."""
    named = [f"callbacks.{name}, {node.get('_target_')}" for name, node in (cfg.get("callbacks") or {}).items()]
    return f" (yours: {'; '.join(named)})" if named else ""


def learn(
    cfg: DictConfig,
    model: Any,
    paths: RunPaths,
    trackers: dict[str, Tracker],
    checkpointer: Checkpointer,
    extra: list[BaseCallback],
    summary: RunSummary,
) -> tuple[PeriodicEval, str | None, float, float]:
    """``model.learn`` with lander's callbacks, then ``extra`` (the user's), from ``model.num_timesteps``
    (0, or a resumed run's) to the budget; nothing more for a run resumed where it had stopped early.

    :return: the evaluation callback, why training stopped early (None: it did not), and the wall seconds
        and CPU seconds (this process) ``learn`` took
    """
    total_timesteps, _ = budget(cfg)
    sinks = [tracker.log for tracker in trackers.values()]  # W&B, TensorBoard, ...: the same keys in each
    writers = [ContinuedCSV(str(paths.sb3_progress)), *(TrackerWriter(t) for t in trackers.values())]
    model.set_logger(Logger(str(paths.metrics), writers))
    end = plan(model, total_timesteps, cfg.budget_rounding)  # whole rollouts: may differ from the budget
    if end < total_timesteps:  # rounded down: SB3 is given that budget (its schedules end there too)
        total_timesteps = end
    summary.update(planned_timesteps=end).save(paths)  # what the dashboard's progress counts to
    evaluator, rules, callbacks = callbacks_for(cfg, paths, sinks, total_timesteps)
    done = int(model.num_timesteps)
    stopped = summary.stopped_early if summary.stopped_early and done >= summary.timesteps else None
    log.info(
        "training %s from %d to %d timesteps on %d envs (gamma=%g, seed=%d) in %s",
        cfg.algo.name,
        done,
        end,
        model.n_envs,
        effective_gamma(cfg),
        cfg.seed,
        paths.root,
    )
    start, cpu_start = training_clock(), cpu_seconds()
    bar = [BudgetProgressBar(end)] if cfg.progress_bar and not stopped else []

    def pauses(paused: bool) -> None:  # SIGUSR1 / SIGUSR2 (lander.process.signals): said in summary.json and the bar
        summary.update(status=Status.PAUSED if paused else Status.RUNNING).save(paths)
        for progress in bar:
            progress.paused(paused)
        if paused:
            log.info("paused at %d timesteps: continue with kill -USR2 %d", model.num_timesteps, os.getpid())
        else:
            log.info("continuing at %d timesteps", model.num_timesteps)

    try:
        with deferred(), pausing(pauses):
            interval = cfg.get("log_interval")  # absent from the config of a run made before it existed
            model.learn(
                total_timesteps=0 if stopped else total_timesteps - done,
                callback=SharedLocals([*callbacks, checkpointer, *extra, SignalCheck(), DurationForecast(end), *bar]),
                reset_num_timesteps=done == 0,
                **({"log_interval": int(interval)} if interval is not None else {}),
            )
    finally:
        for progress in bar:
            progress.close()  # before anything else is printed, however training ended
    told = [*rules, *(c for c in extra if isinstance(c, StopRule))]  # lander's rules, and its reproduce's stop
    stop_reason = stopped or next((rule.stop_reason for rule in told if rule.stop_reason), None)
    if stop_reason is None and model.num_timesteps < total_timesteps:  # SB3 ends short only where one returned False
        stop_reason = f"a callback returned False before the budget of {end:,} timesteps{yours(cfg)}"
    if stop_reason:
        log.info("stopped early at %d timesteps: %s", model.num_timesteps, stop_reason)
    summary.update(stopped_early=stop_reason, timesteps=int(model.num_timesteps)).save(paths)  # trained
    fault("finish:trained")
    return evaluator, stop_reason, training_clock() - start, cpu_seconds() - cpu_start
