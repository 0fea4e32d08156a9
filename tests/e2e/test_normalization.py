"""``env.normalize``: SB3's ``VecNormalize`` around the training envs, its statistics saved beside every model and
checkpoint as arrays (``<model>.vecnormalize.npz``), restored frozen for evaluation and the video and live for a
resume; a planted ``vecnormalize.pkl`` (rl-baselines3-zoo's pickle) is never read."""

from __future__ import annotations

import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from helpers import lander, read_json, run_lander, tiny
from lander.errors import RunFileError
from lander.storage.normalization import ARRAYS, load_stats, read_stats, save_stats, stats_path

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
    save_stats(venv, path, timesteps=300)
    with np.load(path, allow_pickle=False) as archive:  # nothing in it needs pickle
        assert archive["obs_mean"].shape == (4,)
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    fresh = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=1), gamma=0.99)
    assert not np.array_equal(fresh.normalize_obs(obs), venv.normalize_obs(obs))
    load_stats(fresh, path, 300)
    np.testing.assert_array_equal(fresh.normalize_obs(obs), venv.normalize_obs(obs))
    np.testing.assert_array_equal(fresh.returns, venv.returns)
    np.testing.assert_array_equal(read_stats(path, (4,)).normalize_obs(obs), venv.normalize_obs(obs))
    other = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=1), gamma=0.9)
    with pytest.raises(RunFileError, match="this run normalizes with"):
        load_stats(other, path, 300)  # statistics of another discount are not this run's
    with pytest.raises(RunFileError, match="at 300 steps, but the model beside it is at 512 steps"):
        load_stats(fresh, path, 512)  # a kill between the renames of a model and its statistics
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


def hostile_archive(path: Path, **members: bytes) -> None:
    """An ``.npz`` of lander's arrays (valid settings, zeros) with the given members' raw bytes instead (a header
    may declare any shape)."""
    settings = {"norm_obs": True, "norm_reward": True, "clip_obs": 10.0, "clip_reward": 10.0, "gamma": 0.99}
    arrays = {name: np.zeros(4 if name in ("obs_mean", "obs_var") else ()) for name in ARRAYS}
    arrays |= {
        "returns": np.zeros(2),
        "meta": np.frombuffer(json.dumps(settings | {"epsilon": 1e-8}).encode(), np.uint8),
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            archive.writestr(f"{name}.npy", members.get(name, npy(array)))


def npy(array: np.ndarray) -> bytes:
    data = io.BytesIO()
    np.save(data, array)
    return data.getvalue()


def huge_header() -> bytes:
    """The header of an array of 2**40 float64 (8 TiB), with no data after it."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
    return header.getvalue()


def test_hostile_statistics_are_refused_by_their_headers_before_anything_is_read(tmp_path):
    """A member whose header declares 2**40 floats, a member that inflates to gigabytes (written here as 80 MB of
    zeros, compressed to 80 kB), settings of the wrong type: each one line (RunFileError), no MemoryError. Before the
    bound, the first two allocated (or tried to allocate) what they declared."""
    huge = tmp_path / "huge.vecnormalize.npz"
    hostile_archive(huge, obs_mean=huge_header())
    with pytest.raises(RunFileError, match="declares"):
        read_stats(huge, (4,))
    bomb = tmp_path / "bomb.vecnormalize.npz"
    hostile_archive(bomb, obs_mean=npy(np.zeros(10_000_000)))
    with pytest.raises(RunFileError, match="would inflate to 80,000,128 bytes"):
        read_stats(bomb, (4,))
    typed = {"norm_obs": True, "norm_reward": True, "clip_obs": "x", "clip_reward": 10.0, "gamma": 0.99, "epsilon": 1}
    hostile_archive(tmp_path / "typed.vecnormalize.npz", meta=npy(np.frombuffer(json.dumps(typed).encode(), np.uint8)))
    with pytest.raises(RunFileError, match="clip_obs='x', not a number > 0"):
        read_stats(tmp_path / "typed.vecnormalize.npz", (4,))


def test_statistics_of_another_model_or_hostile_ones_are_not_used(tmp_path):
    """What a kill between the renames of ``best_model.vecnormalize.npz`` and ``best_model.zip`` leaves, the new
    statistics beside the old model (made here by copying a checkpoint's statistics over the best model's), is
    refused by ``lander.evaluate`` in one line; before, it evaluated with the wrong statistics. A resume whose
    newest model has statistics with a header declaring 2**40 floats falls back to the checkpoint before it;
    before, it died with a MemoryError."""
    run_dir = tmp_path / "run"
    assert run_lander(run_dir, *RUN).returncode == 0
    checkpoints = sorted((run_dir / "checkpoints").glob("model_*_steps.zip"), key=lambda p: int(p.stem.split("_")[1]))
    shutil.copy(stats_path(checkpoints[0]), stats_path(run_dir / "best_model.zip"))
    evaluated = lander(f"run={run_dir}", "model=best_model.zip", "n_episodes=2", "n_envs=2", module="lander.evaluate")
    assert evaluated.returncode == 1 and "a pair cut by a kill" in evaluated.stderr, evaluated.stderr[-3000:]
    assert "Traceback" not in evaluated.stderr
    hostile_archive(stats_path(run_dir / "model.zip"), obs_mean=huge_header())
    further = lander(f"resume={run_dir}", f"total_timesteps={read_json(run_dir / 'summary.json')['timesteps'] + 512}")
    assert further.returncode == 0, further.stderr[-3000:]
    assert "model.zip not used" in further.stdout + further.stderr and "declares" in further.stdout + further.stderr
    assert read_json(run_dir / "summary.json")["status"] == "completed"
