"""``env.normalize``: SB3's ``VecNormalize`` around the training envs, its statistics saved beside every model and
checkpoint as arrays (``<model>.vecnormalize.npz``), restored frozen for evaluation and the video and live for a
resume; a planted ``vecnormalize.pkl`` (rl-baselines3-zoo's pickle) is never read."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from helpers import lander, read_json, run_lander, tiny
from lander.errors import RunFileError
from lander.storage.normalization import load_stats, read_stats, save_stats, stats_path

RUN = [*tiny("ppo", 2048, n_steps=128, eval_every=1024, episodes=4, checkpoints=1024, video=True), "n_envs=2"]
RUN += ["env=cartpole", "env.normalize.enabled=true"]


class Planted:
    """Unpickling it writes the file it names: proof that something read it."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def plant(run_dir, marker) -> None:
    for folder in (run_dir, run_dir / "checkpoints"):
        (folder / "vecnormalize.pkl").write_bytes(pickle.dumps(Planted(str(marker))))


def test_the_statistics_round_trip_as_arrays_to_the_same_normalized_observations(tmp_path):
    """In-process, real SB3: a trained wrapper's statistics saved and loaded (live, into new envs, and frozen)
    give the same normalized observations; the file holds arrays only."""
    venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0), gamma=0.99)
    venv.reset()
    for _ in range(300):
        venv.step(np.array([venv.action_space.sample() for _ in range(2)]))
    path = tmp_path / "model.vecnormalize.npz"
    save_stats(venv, path)
    with np.load(path, allow_pickle=False) as archive:  # nothing in it needs pickle
        assert archive["obs_mean"].shape == (4,)
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    fresh = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=1), gamma=0.99)
    assert not np.array_equal(fresh.normalize_obs(obs), venv.normalize_obs(obs))
    load_stats(fresh, path)
    np.testing.assert_array_equal(fresh.normalize_obs(obs), venv.normalize_obs(obs))
    np.testing.assert_array_equal(fresh.returns, venv.returns)
    np.testing.assert_array_equal(read_stats(path, (4,)).normalize_obs(obs), venv.normalize_obs(obs))
    other = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=1), gamma=0.9)
    with pytest.raises(RunFileError, match="this run normalizes with"):
        load_stats(other, path)  # statistics of another discount are not this run's
    path.write_bytes(b"not an archive")
    with pytest.raises(RunFileError, match="is not lander's normalization statistics"):
        read_stats(path, (4,))


def test_a_normalized_run_saves_its_statistics_and_evaluation_and_resume_use_them(tmp_path):
    run_dir, marker = tmp_path / "run", tmp_path / "unpickled"
    assert run_lander(run_dir, *RUN).returncode == 0
    for model in (run_dir / "model.zip", run_dir / "best_model.zip", *(run_dir / "checkpoints").glob("*.zip")):
        assert stats_path(model).is_file(), model
    plant(run_dir, marker)
    # lander.evaluate with the frozen statistics reproduces the run's own final evaluation, episode by episode
    evaluated = lander(f"run={run_dir}", "n_episodes=4", "n_envs=4", "name=again", module="lander.evaluate")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    again = read_json(run_dir / "evaluations" / "again.json")
    assert again["episodes"] == read_json(run_dir / "eval.json")["episodes"]
    # trained further, it starts from the saved statistics (a fresh start would count only the new steps)
    before = float(np.load(stats_path(run_dir / "model.zip"))["obs_count"])
    further = lander(f"resume={run_dir}", "total_timesteps=2560")
    assert further.returncode == 0, further.stderr[-3000:]
    assert float(np.load(stats_path(run_dir / "model.zip"))["obs_count"]) > before + 500
    assert not marker.exists()
    # the statistics are part of the model: without them, evaluation says which file is missing and changes nothing
    stats_path(run_dir / "model.zip").unlink()
    missing = lander(f"run={run_dir}", "n_episodes=2", "n_envs=2", "name=none", module="lander.evaluate")
    assert missing.returncode == 1 and "model.vecnormalize.npz is missing" in missing.stderr
    assert not (run_dir / "evaluations" / "none.json").exists() and not marker.exists()
