"""Evaluation on fixed seeds: batched and one-at-a-time runs score the same episodes."""

from __future__ import annotations

from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from lander.evaluation.policy import EvalResult, evaluate


@pytest.fixture(scope="module")
def model():
    return PPO("MlpPolicy", gym.make("LunarLander-v3"), seed=3, device="cpu")


def test_batched_evaluation_equals_sequential(model):
    env_fn = partial(gym.make, "LunarLander-v3")
    one = evaluate(model, env_fn, n_episodes=7, base_seed=100, n_envs=1)
    batched = evaluate(model, env_fn, n_episodes=7, base_seed=100, n_envs=4)
    assert one.seeds == batched.seeds == list(range(100, 107))
    assert one.returns == batched.returns and one.lengths == batched.lengths


def test_episodes_match_a_hand_rolled_episode(model):
    env = gym.make("LunarLander-v3")
    obs, _ = env.reset(seed=105)
    total, done = 0.0, False
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(int(action))
        total += float(reward)
        done = terminated or truncated
    result = evaluate(model, partial(gym.make, "LunarLander-v3"), n_episodes=6, base_seed=100, n_envs=3)
    assert result.returns[5] == pytest.approx(total, abs=1e-9)


def test_statistics():
    result = EvalResult(
        returns=[100.0, 200.0, 300.0, 250.0], lengths=[10, 20, 30, 40], seeds=[0, 1, 2, 3], threshold=200
    )
    stats = result.stats()
    assert stats["mean"] == 212.5 and stats["median"] == 225.0
    assert stats["std"] == pytest.approx(np.std([100, 200, 300, 250], ddof=1))
    assert stats["sem"] == pytest.approx(stats["std"] / 2)
    assert stats["success_rate"] == 0.75 and (stats["min"], stats["max"]) == (100.0, 300.0)
    assert len(result.to_dict()["episodes"]) == 4


def test_sampled_evaluation_is_seeded_and_leaves_trainings_random_streams_alone(model):
    """``eval.deterministic=false`` (course assignment 004's evaluation): the same sampled episodes each time, other
    ones than greedy actions give, and the generators training draws from are where they were."""
    import torch as th

    env_fn = partial(gym.make, "LunarLander-v3")
    th.manual_seed(5)
    np.random.seed(5)
    torch_before, numpy_before = th.random.get_rng_state(), np.random.get_state()[1].copy()
    first = evaluate(model, env_fn, n_episodes=4, base_seed=100, n_envs=2, deterministic=False)
    assert th.equal(th.random.get_rng_state(), torch_before)
    assert (np.random.get_state()[1] == numpy_before).all()
    again = evaluate(model, env_fn, n_episodes=4, base_seed=100, n_envs=2, deterministic=False)
    greedy = evaluate(model, env_fn, n_episodes=4, base_seed=100, n_envs=2)
    assert first.returns == again.returns and first.lengths == again.lengths
    assert first.returns != greedy.returns


def test_the_videos_bar_ends_full_at_the_episodes_frames(tmp_path, capsys, caplog) -> None:
    """The video's progress bar ended at "5% 55/1,001" for a CartPole episode of 55 steps (1,001: video.max_steps
    and the reset's frame): a video cut short, as it read. It now ends full, at the frames the episode had; the log
    says the most steps the episode can have (CartPole's 500, not video.max_steps's 1000)."""
    import logging

    caplog.set_level(logging.INFO, logger="lander.evaluation.video")
    from helpers import composed
    from lander.evaluation.video import write_video

    cfg = composed("env=cartpole")
    model = PPO("MlpPolicy", gym.make("CartPole-v1"), seed=0, device="cpu")
    model.policy.action_net.weight.data.zero_()  # action 0 always: the pole falls in about ten steps
    model.policy.action_net.bias.data[:] = torch.tensor([1.0, 0.0])
    written = write_video(model, cfg.env, cfg.video, tmp_path / "v.mp4", progress=True)
    shown = capsys.readouterr()
    lines = [line for line in (shown.out + shown.err).splitlines() if "video.mp4" in line]
    done = f"{written['frames']}/{written['frames']}"
    assert written["frames"] < 20 and lines and "100%" in lines[-1] and done in lines[-1], lines
    assert "recording v.mp4: one episode on seed 1000000, up to 500 steps ..." in caplog.messages
