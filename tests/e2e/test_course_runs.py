"""Every course algorithm on every env it supports, through ``python -m lander.run`` with a tiny budget."""

from __future__ import annotations

import imageio.v2 as imageio
import pandas as pd
import pytest
from omegaconf import OmegaConf

from helpers import read_json, run_lander, tiny
from lander.algorithms.build import model_class
from lander.envs import make_train_env
from lander.evaluation.loading import safe_load
from lander.storage.rundir import foreign_entries

STEPS = {"mac": 600, "mac_adv": 600, "reinforce": 600, "q_learning": 1500}
ENV_TINY = {  # short episodes where a real one is long, so a tiny budget still ends several
    "pong": ["+env.kwargs.max_episode_steps=400", "total_timesteps=300"],  # 400 frames = 100 agent steps
    "half_cheetah": ["+env.kwargs.max_episode_steps=100"],
    "lunar_lander": ["+env.kwargs.max_episode_steps=200"],
    "cartpole": [],
    "frozen_lake": [],
    "blackjack": [],
}
SUPPORTED = {
    "mac": ["lunar_lander", "cartpole", "frozen_lake", "blackjack", "pong"],
    "mac_adv": ["lunar_lander", "pong", "cartpole", "frozen_lake", "blackjack"],
    "reinforce": [
        "lunar_lander",
        "lunar_lander_continuous",
        "cartpole",
        "frozen_lake",
        "blackjack",
        "pong",
        "half_cheetah",
    ],
    "q_learning": ["frozen_lake", "blackjack"],
}
# to keep the suite short, the default runs each course algorithm on one or more envs and every course env but
# lunar_lander_continuous (SAC's and TD3's tiny runs use it) with one or more algorithms; the other pairs are in
# the slow set (mac_adv is mac with advantage=true)
SLOW_PAIRS = {("mac_adv", "cartpole"), ("mac_adv", "frozen_lake"), ("mac_adv", "blackjack"), ("mac_adv", "pong")}
SLOW_PAIRS |= {("reinforce", "pong"), ("reinforce", "blackjack"), ("reinforce", "lunar_lander"), ("mac", "cartpole")}
SLOW_PAIRS |= {("reinforce", "frozen_lake"), ("mac", "blackjack"), ("reinforce", "lunar_lander_continuous")}
PAIRS = [
    pytest.param(algo, env, id=f"{algo}-{env}", marks=[pytest.mark.slow] if (algo, env) in SLOW_PAIRS else [])
    for algo, envs in SUPPORTED.items()
    for env in envs
]


@pytest.mark.parametrize("algo,env", PAIRS)
def test_tiny_run_leaves_the_complete_record(tmp_path, algo, env):
    run_dir = tmp_path / "run"
    proc = run_lander(
        run_dir,
        *tiny(algo, STEPS[algo], checkpoints=500, monitor=500, video=True, report=True),
        f"env={env}",
        *ENV_TINY.get(env, []),
    )
    assert proc.returncode == 0, f"{algo} on {env} failed:\n{proc.stderr[-4000:]}"
    for name in [
        ".hydra/config.yaml",
        "run.log",
        "summary.json",
        "eval.json",
        "model.zip",
        "best_model.zip",
        "learning_curve.png",
        "video.mp4",
        "metrics/train_episodes.csv",
        "metrics/eval.csv",
        "metrics/eval_episodes.csv",
        "environment/pip_freeze.txt",
    ]:
        assert (run_dir / name).is_file(), f"{algo} on {env}: {name} missing"
    assert foreign_entries(run_dir) == [], f"{algo}: a file a run writes is not in RUN_ENTRIES"
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed" and summary["timesteps"] >= summary["total_timesteps"]
    assert read_json(run_dir / "eval.json")["n"] == 3
    assert len(pd.read_csv(run_dir / "metrics/train_episodes.csv")) >= 1
    assert imageio.get_reader(run_dir / "video.mp4").count_frames() >= 2
    cfg = OmegaConf.load(run_dir / ".hydra/config.yaml")
    play = make_train_env(cfg.env, n_envs=1, seed=0)
    model = safe_load(cfg, run_dir / "model.zip", play)
    assert isinstance(model, model_class(cfg))
    action, _ = model.predict(play.reset(), deterministic=True)
    assert play.action_space.contains(action[0].astype(play.action_space.dtype))
