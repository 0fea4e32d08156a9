"""Users extend lander without forking it: their own SB3 callbacks (``callbacks``) and their own
algo/env/experiment YAMLs in a folder of theirs (``hydra.searchpath``)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
from stable_baselines3.common.callbacks import BaseCallback

from helpers import composed, lander, read_json
from lander.errors import ConfigError
from lander.training.train import train

TINY_CARTPOLE = [
    "algo=ppo",
    "env=cartpole",
    "logger=none",
    "n_envs=2",
    "total_timesteps=1024",
    "algo.model.n_steps=128",
    "eval.freq=512",
    "eval.episodes=2",
    "eval.n_envs=2",
    "video.enabled=false",
    "progress_bar=false",
    "checkpoint_freq=0",
    "monitor_freq=0",
]


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


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module.Callback", "callbacks.bad cannot be built"),
        ("collections.OrderedDict", "callbacks.bad: collections.OrderedDict is a OrderedDict, not a stable_baselines3"),
    ],
)
def test_a_bad_user_callback_is_refused_before_training(tmp_path: Path, target: str, message: str) -> None:
    cfg = composed(*TINY_CARTPOLE, f"+callbacks.bad._target_={target}")
    with pytest.raises(ConfigError, match=message):
        train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # nothing written, nothing trained


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


def test_user_env_experiment_and_callback_from_outside_the_package(tmp_path: Path) -> None:
    """From the user's own folder: ``my_conf/env``, ``my_conf/experiment`` and ``my_callbacks.py``."""
    (tmp_path / "my_conf" / "env").mkdir(parents=True)
    (tmp_path / "my_conf" / "experiment").mkdir()
    (tmp_path / "my_conf" / "env" / "cartpole_long.yaml").write_text(USER_ENV)
    (tmp_path / "my_conf" / "experiment" / "mine.yaml").write_text(USER_EXPERIMENT)
    (tmp_path / "my_callbacks.py").write_text(USER_CALLBACK)
    overrides = [o for o in TINY_CARTPOLE if o != "env=cartpole"]
    proc = lander("hydra.searchpath=[file://my_conf]", "experiment=mine", *overrides, "hydra.run.dir=run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "completed" and summary["env"] == "cartpole_long"
    assert read_json(tmp_path / "user_callback.json")["time_limit"] == 600  # the user's env YAML was used
    assert read_json(tmp_path / "user_callback.json")["episodes"] == len(
        pd.read_csv(tmp_path / "run" / "metrics" / "train_episodes.csv")
    )
