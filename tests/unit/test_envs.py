"""The training envs of LunarLander without the wrapper stack (:class:`lander.envs.LunarLanderVecEnv`) are
Gymnasium's and SB3's envs step for step: the same observations, rewards, dones and infos as SB3's ``DummyVecEnv``
of ``Monitor``-ed ``gymnasium.make`` envs, for the discrete and the continuous game, through resets and time
limits; a PPO model trained on either ends with the same weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from helpers import composed
from lander.envs import (
    LeanLunarLander,
    LunarLanderVecEnv,
    is_plain_lunar_lander,
    lean_lunar_lander,
    make_env,
    make_train_env,
)
from lander.evaluation.policy import evaluate

ENV_ID = "LunarLander-v3"
VARIANTS = {
    "discrete": {},
    "continuous": {"continuous": True},
    "discrete-60-step-limit": {"max_episode_steps": 60},  # TimeLimit's truncation, often
    "continuous-wind-60-step-limit": {"continuous": True, "enable_wind": True, "max_episode_steps": 60},
    "registered-continuous": {"env_id": "LunarLanderContinuous-v3", "continuous": True},  # the id's kwarg given again
}


def wrapped(kwargs: dict, n_envs: int, seed: int, env_id: str = ENV_ID) -> DummyVecEnv:
    """What lander's training envs were before :class:`LunarLanderVecEnv`: SB3's ``make_vec_env``."""
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs={"render_mode": None, **kwargs})
    assert isinstance(env, DummyVecEnv)
    return env


def actions(rng: np.random.Generator, continuous: bool, n_envs: int) -> np.ndarray:
    """Random actions, the main engine more often than not (longer flights, landings and flights off screen)."""
    if continuous:
        return rng.uniform(-1.0, 1.0, size=(n_envs, 2)).astype(np.float32) + np.array([0.3, 0.0], dtype=np.float32)
    return rng.choice(4, size=n_envs, p=[0.25, 0.15, 0.45, 0.15])


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_lean_lunar_lander_steps_as_the_wrapped_envs(variant: str) -> None:
    kwargs, n_envs, seed = dict(VARIANTS[variant]), 4, 11
    env_id = kwargs.pop("env_id", ENV_ID)
    ref = wrapped(kwargs, n_envs, seed, env_id)
    lean = LunarLanderVecEnv(env_id, n_envs, seed, {"render_mode": None, **kwargs})
    assert lean.observation_space == ref.observation_space and lean.action_space == ref.action_space
    assert np.array_equal(lean.action_space.sample(), ref.action_space.sample())  # seeded as make_vec_env seeds it
    assert np.array_equal(lean.reset(), ref.reset())
    rng, episodes, truncations = np.random.default_rng(3), 0, 0
    for step in range(2500):  # 10,000 env steps, 50,000 over the variants
        chosen = actions(rng, "continuous" in kwargs, n_envs)
        obs_a, rew_a, done_a, infos_a = ref.step(chosen)
        obs_b, rew_b, done_b, infos_b = lean.step(chosen)
        assert np.array_equal(obs_a, obs_b) and obs_a.dtype == obs_b.dtype, step
        assert np.array_equal(rew_a, rew_b) and rew_a.dtype == rew_b.dtype, step
        assert np.array_equal(done_a, done_b), step
        for info_a, info_b in zip(infos_a, infos_b, strict=True):
            assert list(info_a) == list(info_b), step  # the same keys in the same order
            if "episode" in info_a:
                episodes += 1
                assert {k: info_a["episode"][k] for k in "rl"} == {k: info_b["episode"][k] for k in "rl"}, step
            if "terminal_observation" in info_a:
                assert np.array_equal(info_a["terminal_observation"], info_b["terminal_observation"]), step
            assert info_a["TimeLimit.truncated"] == info_b["TimeLimit.truncated"], step
            truncations += info_a["TimeLimit.truncated"]
    assert episodes > 50
    if "max_episode_steps" in kwargs:
        assert truncations > 10
    assert lean.env_is_wrapped(Monitor) == ref.env_is_wrapped(Monitor)


def world(game) -> list:
    """Everything of ``game``'s Box2D world a step reads: each body's kind, pose, velocities, mass and flags, each
    fixture's shape, material and collision filter, each joint's anchors, reference angle, limits and motor, in
    Box2D's own order of its lists."""

    def fixture(f) -> tuple:
        shape = f.shape
        geometry = [tuple(v) for v in shape.vertices] if hasattr(shape, "vertices") else None
        extra = (shape.hasVertex0, shape.hasVertex3) if hasattr(shape, "hasVertex0") else None
        filtered = (f.filterData.categoryBits, f.filterData.maskBits, f.filterData.groupIndex)
        return (
            type(shape).__name__,
            geometry,
            extra,
            shape.radius,
            f.density,
            f.friction,
            f.restitution,
            f.sensor,
            filtered,
        )

    def body(b) -> tuple:
        pose = (tuple(b.position), b.angle, tuple(b.linearVelocity), b.angularVelocity, b.mass, b.inertia)
        flags = (b.type, b.awake, b.sleepingAllowed, b.bullet, b.fixedRotation, b.linearDamping, b.angularDamping)
        return pose, flags, [fixture(f) for f in b.fixtures]

    def joint(j) -> tuple:
        limits = (j.limitEnabled, j.lowerLimit, j.upperLimit, j.motorEnabled, j.motorSpeed, j.GetMaxMotorTorque())
        return tuple(j.anchorA), tuple(j.anchorB), j.angle, j.collideConnected, limits

    w = game.world
    return [tuple(w.gravity), [body(b) for b in w.bodies], [joint(j) for j in w.joints]]


@pytest.mark.parametrize("variant", ["discrete", "continuous-wind-60-step-limit"])
def test_the_lean_reset_builds_gymnasiums_world(variant: str) -> None:
    """The lean reset (definitions built once, the last world let go whole) builds the world Gymnasium's reset
    builds, the parts no trajectory above reaches included (the floor under the terrain, its friction)."""
    import gymnasium as gym

    kwargs = {k: v for k, v in VARIANTS[variant].items() if k != "max_episode_steps"}
    lean = lean_lunar_lander(ENV_ID, kwargs)[0]
    gymnasiums = gym.make(ENV_ID, **kwargs).unwrapped
    rng = np.random.default_rng(0)
    for seed in (0, 1, None, None):  # a seed, another, then two without (after episodes played to their end)
        assert np.array_equal(lean.reset(seed=seed)[0], gymnasiums.reset(seed=seed)[0])
        assert world(lean) == world(gymnasiums)
        for _ in range(400):
            chosen = actions(rng, "continuous" in kwargs, 1)[0]
            if lean.step(chosen)[2] | gymnasiums.step(chosen)[2]:
                break
        assert world(lean) == world(gymnasiums)


def test_a_model_trained_on_either_ends_with_the_same_weights() -> None:
    trained = []
    for env in (wrapped({}, 2, 5), LunarLanderVecEnv(ENV_ID, 2, 5, {"render_mode": None})):
        model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=5, device="cpu")
        model.learn(1024)
        trained.append(model.policy.state_dict())
    assert all(torch.equal(trained[0][k], trained[1][k]) for k in trained[0])


def test_the_lean_vec_env_refuses_to_render() -> None:
    """Its games step without drawing: a rendering LunarLander is left to Gymnasium's own envs (the video)."""
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        LunarLanderVecEnv(ENV_ID, 2, 0, {"render_mode": "rgb_array"})


@pytest.mark.parametrize(
    "overrides",
    [["env=lunar_lander"], ["env=lunar_lander_continuous"], ["+env.kwargs.max_episode_steps=60"]],
    ids=["discrete", "continuous", "60-step-limit"],
)
def test_the_evaluations_score_the_same_episodes(overrides: list[str]) -> None:
    """The evaluation envs (:func:`make_env`, not rendered) are lean too, and score a model as ``gymnasium.make``'s
    envs do: the same return and length for each episode seed, stochastic actions and time limits included."""
    import gymnasium as gym
    from gymnasium.error import ResetNeeded

    cfg = composed(*overrides)
    model = PPO("MlpPolicy", make_train_env(cfg.env, 2, 0), n_steps=64, batch_size=64, seed=1, device="cpu")
    model.learn(128)
    kwargs = {"render_mode": None, **cfg.env.kwargs}
    lean = make_env(cfg.env)
    assert isinstance(lean.unwrapped, LeanLunarLander)
    with pytest.raises(ResetNeeded):  # Gymnasium's OrderEnforcing rule
        lean.step(0)
    results = []
    for env_fn in (lambda: make_env(cfg.env), lambda: gym.make(ENV_ID, **kwargs)):
        for deterministic in (True, False):
            model.set_random_seed(2)  # the same draws for the sampled actions
            result = evaluate(model, env_fn, n_episodes=6, base_seed=100, n_envs=3, deterministic=deterministic)
            results.append((result.returns, result.lengths))
    assert results[0] == results[2] and results[1] == results[3]
    assert results[0] != results[1]  # greedy and sampled actions: two different evaluations compared
    limit = cfg.env.kwargs.get("max_episode_steps")
    assert limit is None or limit in results[0][1]  # some episodes cut by the time limit: its rule compared too


@pytest.mark.parametrize("overrides", [["env=lunar_lander"], ["env=lunar_lander_continuous"]])
def test_the_videos_env_renders_the_same_frames(overrides: list[str]) -> None:
    """The video's env (:func:`make_env` with ``rgb_array``) is lean and gives ``gymnasium.make``'s frames, pixel for
    pixel, with the same episodes: a landing (Gymnasium's heuristic pilot, engines and particles) and a crash."""
    import gymnasium as gym
    from gymnasium.envs.box2d.lunar_lander import heuristic

    cfg = composed(*overrides)
    lean = make_env(cfg.env, render_mode="rgb_array")
    gymnasiums = gym.make(ENV_ID, **cfg.env.kwargs, render_mode="rgb_array")
    assert isinstance(lean.unwrapped, LeanLunarLander)
    rng, frames, ends = np.random.default_rng(0), 0, []
    for seed, pilot in ((3, "heuristic"), (4, "random")):
        (obs, _), (expected_obs, _) = lean.reset(seed=seed), gymnasiums.reset(seed=seed)
        while True:
            frame, expected = lean.render(), gymnasiums.render()
            assert frame.shape == expected.shape == (400, 600, 3) and frame.dtype == expected.dtype == np.uint8
            assert np.array_equal(frame, expected) and np.array_equal(obs, expected_obs)
            frames += 1
            if pilot == "heuristic":
                action = heuristic(lean.unwrapped, obs)
            else:
                action = rng.uniform(-1, 1, 2) if cfg.env.kwargs.get("continuous") else rng.integers(4)
            obs, reward, terminated, truncated, _ = lean.step(action)
            expected_obs, expected_reward, expected_terminated, expected_truncated, _ = gymnasiums.step(action)
            assert (reward, terminated, truncated) == (expected_reward, expected_terminated, expected_truncated)
            if terminated or truncated:
                ends.append(reward)
                break
    assert ends[0] == 100 and ends[1] == -100 and frames > 200  # landed, then crashed: both drawn and compared


@pytest.mark.parametrize(
    "overrides,lean",
    [
        ([], True),
        (["env=lunar_lander_continuous"], True),
        (["env=cartpole"], False),
        (["+env.kwargs.render_mode=rgb_array"], False),  # the test that rendering changes nothing renders its envs
    ],
)
def test_the_lean_envs_train_plain_lunar_lander_only(overrides: list[str], lean: bool) -> None:
    cfg = composed(*overrides)
    assert is_plain_lunar_lander(cfg.env) is lean
    env = make_train_env(cfg.env, 2, 0)
    assert isinstance(env, LunarLanderVecEnv) is lean
    env.close()


def test_env_processes_left_open_do_not_hold_the_exit() -> None:
    """The env processes of ``vec_env=subproc`` leave SIGTERM to the run, and multiprocessing ends its children at
    exit by SIGTERM, then waits for them: a process that exits with its envs still open (never closed on some path)
    waited for ever. lander ends them first."""
    import subprocess
    import sys

    script = (
        "from functools import partial\n"
        "import gymnasium\n"
        "from lander.envs import SubprocEnvs\n"
        "envs = SubprocEnvs([partial(gymnasium.make, 'CartPole-v1')] * 2, start_method='forkserver')\n"
        "envs.reset()\n"
        "print('open', flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "open\n", proc.stderr[-3000:]
