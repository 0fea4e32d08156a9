"""Users extend lander without forking it: their own SB3 callbacks (``callbacks``), their own trackers (``logger``)
and their own algo/env/experiment/logger YAMLs in a folder of theirs (``hydra.searchpath``)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
from stable_baselines3.common.callbacks import BaseCallback

from helpers import composed, lander, read_json, tiny
from lander.config.checks import checked
from lander.errors import ConfigError
from lander.storage.rundir import RunPaths, RunSummary
from lander.tracking.base import TrackedRun, Tracker
from lander.training.train import train

TINY_CARTPOLE = [*tiny("ppo", 1024, n_steps=128, eval_every=512, episodes=2, video=False), "env=cartpole"]


class HookCounter(BaseCallback):
    """The training loop's three hooks (seed 002) as SB3 methods: training start, every step, episode end."""

    instances: ClassVar[list[HookCounter]] = []

    def __init__(self, label: str = "") -> None:
        super().__init__()
        self.label, self.starts, self.steps, self.episode_returns = label, 0, 0, []
        HookCounter.instances.append(self)

    def _on_training_start(self) -> None:  # on_training_start
        self.starts += 1

    def _on_step(self) -> bool:  # on_step
        self.steps += 1
        for info in self.locals["infos"]:  # on_episode_end: SB3's Monitor puts the finished episode here
            if "episode" in info:
                self.episode_returns.append(float(info["episode"]["r"]))
        return True


def test_user_callback_from_a_test_module_sees_every_hook(tmp_path: Path) -> None:
    HookCounter.instances.clear()
    cfg = composed(*TINY_CARTPOLE, f"+callbacks.count._target_={__name__}.HookCounter", "+callbacks.count.label=mine")
    summary = train(cfg, tmp_path / "run")
    (counter,) = HookCounter.instances
    assert counter.label == "mine" and counter.starts == 1
    assert counter.steps == summary.timesteps // 2 == 512  # one call per VecEnv step of 2 envs
    episodes = pd.read_csv(tmp_path / "run" / "metrics" / "train_episodes.csv")
    assert counter.episode_returns == pytest.approx(list(episodes["return"]))  # the same episodes lander logged
    assert len(counter.episode_returns) > 5


def test_a_user_callback_that_ends_training_early_is_said_and_recorded(tmp_path: Path, caplog) -> None:
    """SB3's ``StopTrainingOnMaxEpisodes`` as a user callback ends training before the budget: the run is completed
    and says so, as lander's own stop rules do (``stopped_early``: the callback, and where; before: nothing said,
    ``stopped_early`` null, a run 'completed' at a fifth of its budget)."""
    stop = "stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes"
    cfg = composed(*TINY_CARTPOLE, f"+callbacks.stop._target_={stop}", "+callbacks.stop.max_episodes=3")
    caplog.set_level(logging.INFO, logger="lander")
    summary = train(cfg, tmp_path / "run")
    assert summary.status == "completed" and summary.timesteps < 1024
    said = f"a callback returned False before the budget of 1,024 timesteps (yours: callbacks.stop, {stop})"
    assert summary.stopped_early == said
    assert f"stopped early at {summary.timesteps} timesteps: {said}" in caplog.messages


class RecordingTracker(Tracker):
    """A tracker of the user's: keeps every call."""

    instances: ClassVar[list[RecordingTracker]] = []

    def __init__(self, label: str = "") -> None:
        self.label, self.calls, self.rows = label, [], []
        RecordingTracker.instances.append(self)

    def start(self, run: TrackedRun) -> None:
        self.calls.append(("start", run.name, run.start_step))

    def log(self, metrics: dict, step: int) -> None:
        self.rows.append((step, dict(metrics)))

    def log_files(self, paths: RunPaths, summary: RunSummary) -> None:
        self.calls.append(("log_files", summary.status))

    def finish(self, exit_code: int) -> None:
        self.calls.append(("finish", exit_code))


def test_a_user_tracker_gets_every_metric_row_and_sb3_record(tmp_path: Path) -> None:
    RecordingTracker.instances.clear()
    target = f"+logger.mine._target_={__name__}.RecordingTracker"
    cfg = composed(*TINY_CARTPOLE, "logger=none", target, "+logger.mine.label=x", "run_name=my_run")
    train(cfg, tmp_path / "run")
    (tracker,) = RecordingTracker.instances
    assert tracker.label == "x"
    assert tracker.calls == [("start", "my_run", 0), ("log_files", "completed"), ("finish", 0)]
    evals = pd.read_csv(tmp_path / "run" / "metrics" / "eval.csv")
    logged = {step: row["eval/mean"] for step, row in tracker.rows if "eval/mean" in row}
    assert logged == pytest.approx(dict(zip(evals["timesteps"], evals["mean"], strict=True)))
    assert any("train/value_loss" in row for _, row in tracker.rows)  # SB3's own records too
    episodes = [row for _, row in tracker.rows if "train/episode_return" in row]
    assert len(episodes) == len(pd.read_csv(tmp_path / "run" / "metrics" / "train_episodes.csv"))


def test_a_tracker_key_its_class_does_not_take_is_refused_before_training(tmp_path: Path) -> None:
    cfg = composed(*TINY_CARTPOLE, "logger=wandb", "+logger.wandb.colour=red")
    with pytest.raises(ConfigError, match=r"unknown key 'logger.wandb.colour'.* Its parameters are connect_timeout"):
        train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module.Callback", "callbacks.bad cannot be built: ModuleNotFoundError: No module named 'no_such_m"),
        # the error underneath Hydra's "Error locating target ..., set env var HYDRA_FULL_ERROR=1", which hid it
        ("raising_module.Callback", "callbacks.bad cannot be built: RuntimeError: needs a licence server"),
        ("collections.OrderedDict", "callbacks.bad: collections.OrderedDict is a OrderedDict, not a stable_baselines3"),
    ],
)
def test_a_bad_user_callback_is_refused_before_training(tmp_path: Path, monkeypatch, target: str, message: str) -> None:
    (tmp_path / "raising_module.py").write_text("raise RuntimeError('needs a licence server')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = composed(*TINY_CARTPOLE, f"+callbacks.bad._target_={target}")
    with pytest.raises(ConfigError, match=re.escape(message)):
        train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # nothing written, nothing trained


BAD_TRACKERS = [  # the run failed at 0 timesteps, its files begun; a node without _target_ logged nowhere, silently
    (
        "+logger.mine._target_=raising_module.Tracker",
        "logger.mine._target_='raising_module.Tracker' cannot be imported as a class (RuntimeError: needs a licence",
    ),
    (
        "+logger.trackers.mine._target_=my_trackers.Jsonl",
        "logger.trackers.mine names a tracker a level below logger: logger holds the trackers' nodes themselves",
    ),
]


@pytest.mark.parametrize(("override", "message"), BAD_TRACKERS)
def test_a_bad_user_tracker_is_refused_before_training(tmp_path: Path, monkeypatch, override: str, message: str):
    (tmp_path / "raising_module.py").write_text("raise RuntimeError('needs a licence server')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=re.escape(message)):
        train(composed(*TINY_CARTPOLE, override), tmp_path / "run")
    assert not (tmp_path / "run").exists()
    checked(composed(*TINY_CARTPOLE, "+logger.wandb.project=mine"))  # a preset's settings of a tracker not chosen


USER_ENV = """\
# my own env: CartPole with a longer time limit, from lander's cartpole.yaml
defaults:
  - cartpole
name: cartpole_long
kwargs:
  max_episode_steps: 600
"""
USER_EXPERIMENT = """\
# @package _global_
defaults:
  - override /env: cartpole_long
callbacks:
  mine:
    _target_: my_callbacks.EpisodeCount
"""
USER_CALLBACK = """\
import json
from stable_baselines3.common.callbacks import BaseCallback

class EpisodeCount(BaseCallback):
    def _on_training_start(self):
        self.episodes, self.time_limit = 0, self.training_env.get_attr("spec")[0].max_episode_steps
    def _on_step(self):
        self.episodes += sum("episode" in info for info in self.locals["infos"])
        return True
    def _on_training_end(self):
        with open("user_callback.json", "w") as handle:
            json.dump({"episodes": self.episodes, "time_limit": self.time_limit}, handle)
"""

USER_LOGGER = """\
# TensorBoard and my own tracker
defaults:
  - tensorboard
jsonl:
  _target_: my_trackers.JsonLines
  path: tracked.jsonl
"""
USER_TRACKER = """\
import json
from lander.tracking.base import Tracker

class JsonLines(Tracker):
    def __init__(self, path):
        self.path = path
    def start(self, run):
        self.file = open(self.path, "w")
    def log(self, metrics, step):
        self.file.write(json.dumps({"step": step, **metrics}) + "\\n")
    def finish(self, exit_code):
        self.file.close()
"""


def test_user_env_experiment_callback_and_tracker_from_outside_the_package(tmp_path: Path) -> None:
    """From the user's own folder: ``my_conf/env``, ``my_conf/experiment``, ``my_conf/logger``, ``my_callbacks.py``
    and ``my_trackers.py``."""
    for group in ("env", "experiment", "logger"):
        (tmp_path / "my_conf" / group).mkdir(parents=True)
    (tmp_path / "my_conf" / "env" / "cartpole_long.yaml").write_text(USER_ENV)
    (tmp_path / "my_conf" / "experiment" / "mine.yaml").write_text(USER_EXPERIMENT)
    (tmp_path / "my_conf" / "logger" / "mine.yaml").write_text(USER_LOGGER)
    (tmp_path / "my_callbacks.py").write_text(USER_CALLBACK)
    (tmp_path / "my_trackers.py").write_text(USER_TRACKER)
    overrides = [o for o in TINY_CARTPOLE if o not in ("env=cartpole", "logger=none")]  # the experiment's, mine
    proc = lander(
        "hydra.searchpath=[file://my_conf]",
        "experiment=mine",
        "logger=mine",
        *overrides,
        "hydra.run.dir=run",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "completed" and summary["env"] == "cartpole_long"
    assert read_json(tmp_path / "user_callback.json")["time_limit"] == 600  # the user's env YAML was used
    assert read_json(tmp_path / "user_callback.json")["episodes"] == len(
        pd.read_csv(tmp_path / "run" / "metrics" / "train_episodes.csv")
    )
    rows = [json.loads(line) for line in (tmp_path / "tracked.jsonl").read_text().splitlines()]
    evals = pd.read_csv(tmp_path / "run" / "metrics" / "eval.csv")
    assert [(r["step"], r["eval/mean"]) for r in rows if "eval/mean" in r] == list(
        zip(evals["timesteps"], evals["mean"], strict=True)
    )
    assert list((tmp_path / "run" / "tensorboard").iterdir())  # and TensorBoard, from the user's defaults


ENVS_OF_ONES_OWN = '''
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Corridor(gym.Env):
    """Walk right to the end: written as many envs of one's own are, taking no render_mode, rendering nothing."""

    def __init__(self, length=6):
        self.length = length
        self.observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position >= self.length
        return np.array([self.position / self.length], np.float32), 1.0 if done else -0.01, done, False, {}


class RenderlessCorridor(Corridor):
    """The same, taking render_mode as Gymnasium's API asks, rendering in no mode (gymnasium.Env's metadata)."""

    def __init__(self, length=6, render_mode=None):
        super().__init__(length)
        self.render_mode = render_mode


class GoalCorridor(RenderlessCorridor):
    """The same with dict observations (named parts, as goal-conditioned envs give them)."""

    def __init__(self, length=6, render_mode=None):
        super().__init__(length, render_mode)
        self.observation_space = spaces.Dict({"position": self.observation_space, "goal": spaces.Discrete(3)})

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return {"position": obs, "goal": 2}, info

    def step(self, action):
        obs, *rest = super().step(action)
        return {"position": obs, "goal": 2}, *rest


class OneSimulator(Corridor):
    """The same, with one simulator a process (its port, a licence): the second made raises."""

    made = 0

    def __init__(self, length=6):
        OneSimulator.made += 1
        if OneSimulator.made > 1:
            raise RuntimeError("one simulator per process")
        super().__init__(length)


class Crashing(Corridor):
    """The same, whose simulator crashes at its 100th step."""

    steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps == 100:
            raise RuntimeError("the simulator crashed")
        return super().step(action)


class NoLicence(Corridor):
    """The same, whose licence server refuses the first env process of ``vec_env=subproc`` to ask."""

    def __init__(self, length=6):
        import multiprocessing
        import os

        if multiprocessing.current_process().name != "MainProcess":
            try:
                os.close(os.open("refused", os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                raise RuntimeError("no licence for this process")
        super().__init__(length)


gym.register("Corridor-v0", entry_point=Corridor, max_episode_steps=40)
gym.register("NoLicence-v0", entry_point=NoLicence, max_episode_steps=40)
gym.register("Crashing-v0", entry_point=Crashing, max_episode_steps=40)
gym.register("OneSimulator-v0", entry_point=OneSimulator, max_episode_steps=40)
gym.register("GoalCorridor-v0", entry_point=GoalCorridor, max_episode_steps=40)
gym.register("RenderlessCorridor-v0", entry_point=RenderlessCorridor, max_episode_steps=40)
'''


@pytest.mark.parametrize(
    ("env_id", "why"),
    [
        ("my_envs:Corridor-v0", "its constructor takes no render_mode"),
        ("my_envs:RenderlessCorridor-v0", "its class's metadata['render_modes'] is []"),
    ],
)
def test_an_env_of_ones_own_that_cannot_render_trains_and_its_video_is_refused_first(
    tmp_path: Path, env_id: str, why: str
) -> None:
    """An env in the user's own module (``env.id=module:Id``) that takes no ``render_mode`` trains (it was made with
    ``render_mode=None``: a TypeError and Hydra's traceback, where ``gymnasium.make(id)`` and SB3 make it); the video
    it cannot render is refused in one line before anything is made (it trained, evaluated, then failed the run),
    by ``lander.evaluate video=true`` too (it evaluated, then failed in Hydra's traceback)."""
    (tmp_path / "my_envs.py").write_text(ENVS_OF_ONES_OWN)
    overrides = [*tiny("ppo", 512, n_steps=64, eval_every=256, episodes=2), "env=cartpole", f"env.id={env_id}"]
    refused = lander(*overrides, "env.name=corridor", "video.enabled=true", "hydra.run.dir=refused", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr[-3000:]
    line = f"video.enabled=true records the trained agent on env.id={env_id!r} made with render_mode='rgb_array'"
    assert f"{line}, which it does not offer ({why}): give video.enabled=false" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "refused").exists()
    proc = lander(*overrides, "env.name=corridor", "+env.kwargs.length=3", "hydra.run.dir=run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "completed" and summary["final_eval_mean"] is not None
    assert summary["timesteps"] >= 512 and not (tmp_path / "run" / "video.mp4").exists()
    again = lander(
        "run=run", "n_episodes=2", "video=true", "allow_target=[my_envs]", module="lander.evaluate", cwd=tmp_path
    )
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr[-3000:]
    assert f"video=true records the trained agent on env.id={env_id!r}" in again.stderr
    assert not (tmp_path / "run" / "evaluations").exists()  # nothing evaluated, then a traceback at the video


def test_an_env_with_dict_observations_trains_with_sb3s_multi_input_policy(tmp_path: Path) -> None:
    """Dict observations (``env.observation_space=dict``) train with ``MultiInputPolicy`` and are evaluated, batched
    key by key (the first evaluation failed in an IndexError, stacking dicts); another policy is refused first, in
    one line (SB3's ValueError once the envs were made), as is the kind the env config declares where it differs."""
    (tmp_path / "my_envs.py").write_text(ENVS_OF_ONES_OWN)
    overrides = [*tiny("a2c", 400, eval_every=200, episodes=2), "env=cartpole", "env.id=my_envs:GoalCorridor-v0"]
    declared = lander(*overrides, "env.name=goal", "hydra.run.dir=refused", cwd=tmp_path)
    assert declared.returncode == 2 and "does not match my_envs:GoalCorridor-v0's observation space" in declared.stderr
    assert "a dict one: give env.observation_space=dict" in declared.stderr
    overrides += ["env.name=goal", "env.observation_space=dict"]
    refused = lander(*overrides, "hydra.run.dir=refused", cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    message = "algo.model.policy=MlpPolicy: env=goal has dict observations, which SB3 takes with MultiInputPolicy"
    assert f"{message}: give env.policy=MultiInputPolicy" in refused.stderr and not (tmp_path / "refused").exists()
    proc = lander(*overrides, "env.policy=MultiInputPolicy", "hydra.run.dir=run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "completed" and summary["final_eval_mean"] is not None
    evals = pd.read_csv(tmp_path / "run" / "metrics" / "eval.csv")
    assert list(evals["timesteps"]) == [200, 400] and (evals["n"] == 2).all()
    mine = lander("run=run", "n_episodes=3", module="lander.evaluate", cwd=tmp_path)  # a run's module: allowed by name
    assert (
        mine.returncode == 2 and "makes Gymnasium import 'my_envs': allow it with allow_target=[my_envs]" in mine.stderr
    )
    again = lander("run=run", "n_episodes=3", "allow_target=[my_envs]", module="lander.evaluate", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    (tmp_path / "elsewhere").mkdir()  # where my_envs is not importable: one line (before: Gymnasium's traceback)
    away = lander(
        f"run={tmp_path / 'run'}", "allow_target=[my_envs]", module="lander.evaluate", cwd=tmp_path / "elsewhere"
    )
    assert away.returncode == 2 and "Traceback" not in away.stderr, away.stderr[-3000:]
    assert "env.id='my_envs:GoalCorridor-v0': the module 'my_envs' cannot be imported" in away.stderr


def test_an_env_that_raises_in_its_own_process_fails_the_run_at_once(tmp_path: Path) -> None:
    """``vec_env=subproc``: an env that raised ended its process; the run, recorded failed, then waited for ever in
    SB3's ``SubprocVecEnv.close`` for answers the other env processes had given already. Now it ends, exit 1,
    ``summary.json`` naming the env process and what ended it (its traceback is on the run's stderr)."""
    (tmp_path / "my_envs.py").write_text(ENVS_OF_ONES_OWN)
    overrides = [*tiny("a2c", 4000, eval_every=2000), "env=cartpole", "env.id=my_envs:Crashing-v0", "vec_env=subproc"]
    proc = lander(*overrides, "env.name=crashing", "hydra.run.dir=run", cwd=tmp_path, timeout=180)
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "failed" and 0 < summary["timesteps"] < 4000, summary
    assert summary["error"].startswith("EnvProcessEnded: env process "), summary["error"]
    said = "(vec_env=subproc) ended: its env raised RuntimeError: the simulator crashed (exit code 1; its traceback"
    assert said in summary["error"], summary["error"]
    log = (tmp_path / "run" / "run.log").read_text()  # the env's traceback, where the run's is (was: stderr only)
    assert "of vec_env=subproc: its env raised\nTraceback (most recent call last):" in log, log[-3000:]
    assert "in step\n" in log and log.count("RuntimeError: the simulator crashed") >= 2, log[-3000:]


def test_an_env_that_cannot_be_made_in_its_own_process_fails_the_run(tmp_path: Path) -> None:
    """``vec_env=subproc``, one env process whose env's constructor raises (the first of them, whichever asks
    first): the run ends, exit 1, ``failed`` with the env process named, nothing left running. (Where that was env
    process 0, whose spaces SB3 reads as it starts them, the others were left waiting for a command, and the run's
    process waited for them for ever as it exited: they leave SIGTERM to the run.)"""
    (tmp_path / "my_envs.py").write_text(ENVS_OF_ONES_OWN)
    overrides = [*tiny("a2c", 400), "env=cartpole", "env.id=my_envs:NoLicence-v0"]  # two env processes
    proc = lander(*overrides, "vec_env=subproc", "env.name=nolicence", "hydra.run.dir=run", cwd=tmp_path, timeout=180)
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "failed" and summary["timesteps"] == 0, summary
    assert summary["error"].startswith("EnvProcessEnded: env process "), summary["error"]
    said = "of 2 (vec_env=subproc) ended: its env raised RuntimeError: no licence for this process (exit code 1; "
    assert said in summary["error"], summary["error"]
    log = (tmp_path / "run" / "run.log").read_text()
    assert "its env raised\nTraceback (most recent call last):" in log and "in __init__\n" in log, log[-3000:]


def test_a_run_whose_envs_fail_to_be_made_is_recorded_as_failed(tmp_path: Path) -> None:
    """An env whose constructor fails once the checks have made one (here the second of a process) stops the run
    before training, recorded: ``summary.json`` failed with the error, the traceback in ``run.log`` (the run's
    directory held an empty ``run.log`` and no summary: the dashboard listed it as stopped, to resume)."""
    (tmp_path / "my_envs.py").write_text(ENVS_OF_ONES_OWN)
    overrides = [*tiny("a2c", 400), "env=cartpole", "env.id=my_envs:OneSimulator-v0", "env.name=simulator"]
    proc = lander(*overrides, "hydra.run.dir=run", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "failed" and summary["timesteps"] == 0 and summary["env"] == "simulator"
    assert summary["error"] == "RuntimeError: one simulator per process"
    log = (tmp_path / "run" / "run.log").read_text()
    assert "run failed before training, making its 2 training envs: one simulator per process" in log
    assert "Traceback" in log and not (tmp_path / "run" / "model.zip").exists()


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("def broken(:\n    pass\n", "failed (SyntaxError: invalid syntax (my_envs.py, line 1))"),
        ("raise RuntimeError('needs a licence server')\n", "failed (RuntimeError: needs a licence server)"),
    ],
)
def test_an_env_module_that_fails_to_import_is_one_line(tmp_path: Path, source: str, said: str) -> None:
    """``env.id=my_envs:...`` whose module fails as it is imported: one line naming env.id, exit 2 (before: the
    module's traceback, exit 1)."""
    (tmp_path / "my_envs.py").write_text(source)
    proc = lander(*tiny("a2c", 400), "env=cartpole", "env.id=my_envs:Corridor-v0", "hydra.run.dir=run", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"env.id='my_envs:Corridor-v0': importing the module 'my_envs' {said}" in proc.stderr
    assert not (tmp_path / "run").exists()
