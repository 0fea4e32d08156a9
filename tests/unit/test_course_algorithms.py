"""The course algorithms' maths, checked against hand-computed values (assignments 003 and 004)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.utils import ConstantSchedule

from lander.algorithms.mac import MAC, MACPolicy, mac_actor_loss
from lander.algorithms.q_learning import QLearning, q_learning_update
from lander.algorithms.reinforce import Reinforce, returns_to_go, step_weights
from lander.envs import TupleToDiscrete


def small_mac_policy() -> tuple[MACPolicy, th.Tensor]:
    th.manual_seed(0)
    obs_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    policy = MACPolicy(obs_space, gym.spaces.Discrete(3), ConstantSchedule(1e-3), net_arch=[8])
    return policy, th.randn(6, 4)  # a fixed batch of 6 states


def actor_grads(policy: MACPolicy, loss: th.Tensor) -> list[th.Tensor]:
    params = [*policy.mlp_extractor.policy_net.parameters(), *policy.action_net.parameters()]
    return list(th.autograd.grad(loss, params, allow_unused=True, retain_graph=True))


@pytest.mark.parametrize("advantage", [False, True])
def test_mac_actor_gradient_is_the_analytic_all_actions_gradient(advantage):
    policy, obs = small_mac_policy()
    distribution, q = policy.distribution_and_q(obs)
    probs = distribution.distribution.probs
    weights = q.detach() - (probs * q).sum(-1, keepdim=True).detach() if advantage else q.detach()
    # analytic: -(1/B) sum_s sum_a grad pi(a|s) * weight(s, a), one action's gradient at a time
    analytic = None
    for a in range(3):
        grads = actor_grads(policy, -(probs[:, a] * weights[:, a]).sum() / len(obs))
        analytic = grads if analytic is None else [x + g for x, g in zip(analytic, grads, strict=False)]
    autograd = actor_grads(policy, mac_actor_loss(probs, q, advantage))
    for got, want in zip(autograd, analytic, strict=False):
        assert th.allclose(got, want, atol=1e-7)
    assert any(g.abs().sum() > 0 for g in autograd)


def test_mac_actor_loss_leaves_the_critic_alone_and_the_baseline_does_not_change_the_gradient():
    policy, obs = small_mac_policy()
    distribution, q = policy.distribution_and_q(obs)
    probs = distribution.distribution.probs
    critic = [*policy.mlp_extractor.value_net.parameters(), *policy.value_net.parameters()]
    assert all(
        g is None for g in th.autograd.grad(mac_actor_loss(probs, q), critic, allow_unused=True, retain_graph=True)
    )
    # sum_a grad pi(a|s) = 0, so subtracting V(s) changes the loss but not the gradient
    plain, adv = actor_grads(policy, mac_actor_loss(probs, q)), actor_grads(policy, mac_actor_loss(probs, q, True))
    assert not th.isclose(mac_actor_loss(probs, q), mac_actor_loss(probs, q, True))
    for x, y in zip(plain, adv, strict=False):
        assert th.allclose(x, y, atol=1e-6)


def test_mac_value_is_the_policy_weighted_q_and_the_model_round_trips(tmp_path):
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = MAC("MlpPolicy", env, n_steps=5, seed=0, advantage=True)
    obs = th.as_tensor(env.reset())
    distribution, q = model.policy.distribution_and_q(obs)
    assert q.shape == (2, 2)
    expected = (distribution.distribution.probs * q).sum(-1, keepdim=True)
    assert th.allclose(model.policy.predict_values(obs), expected)
    model.learn(200)
    model.save(tmp_path / "mac.zip")
    loaded = MAC.load(tmp_path / "mac.zip")
    assert loaded.advantage is True and loaded.pg_coef == model.pg_coef
    assert np.array_equal(
        loaded.predict(obs.numpy(), deterministic=True)[0], model.predict(obs.numpy(), deterministic=True)[0]
    )


def test_mac_refuses_a_continuous_action_space():
    with pytest.raises(ValueError, match="MAC needs a Discrete action space"):
        MAC("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=1))


def test_q_learning_update_matches_a_hand_computed_step():
    q = np.zeros((3, 2))
    q[0, 1], q[2] = 1.0, [0.5, 2.0]
    td = q_learning_update(q, state=0, action=1, reward=1.0, next_state=2, terminated=False, alpha=0.1, gamma=0.9)
    assert td == pytest.approx(1.0 + 0.9 * 2.0 - 1.0)  # target 2.8, old value 1.0
    assert q[0, 1] == pytest.approx(1.18)
    td = q_learning_update(q, state=0, action=0, reward=-1.0, next_state=2, terminated=True, alpha=0.5, gamma=0.9)
    assert td == pytest.approx(-1.0) and q[0, 0] == pytest.approx(-0.5)  # terminal: no bootstrap
    assert q[2].tolist() == [0.5, 2.0]


def test_q_learning_solves_the_deterministic_frozen_lake_and_round_trips(tmp_path):
    env = make_vec_env("FrozenLake-v1", n_envs=1, seed=0, env_kwargs={"is_slippery": False})
    model = QLearning(
        "TabularPolicy",
        env,
        alpha=0.5,
        gamma=0.95,
        seed=0,
        exploration_initial_eps=1.0,
        exploration_final_eps=0.1,
        exploration_fraction=0.5,
    ).learn(3000)
    play = gym.make("FrozenLake-v1", is_slippery=False)
    obs, _ = play.reset(seed=0)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = play.step(int(model.predict(obs)[0]))
        total, done = total + reward, terminated or truncated
    assert total == 1.0
    model.save(tmp_path / "q.zip")
    assert np.array_equal(QLearning.load(tmp_path / "q.zip").policy.table, model.policy.table)


@pytest.mark.parametrize("seed,same", [(0, True), (1, False)])
def test_q_learning_is_reproducible_from_its_seed(seed, same):
    def table(seed: int) -> np.ndarray:
        env = make_vec_env("FrozenLake-v1", n_envs=2, seed=seed)
        return QLearning("TabularPolicy", env, alpha=0.5, seed=seed).learn(2000).policy.table.copy()

    assert np.array_equal(table(0), table(seed)) is same


def test_tuple_observations_are_numbered_as_one_discrete_state():
    env = TupleToDiscrete(gym.make("Blackjack-v1", sab=True))
    assert env.observation_space == gym.spaces.Discrete(32 * 11 * 2)
    assert env.observation((0, 0, 0)) == 0 and env.observation((0, 0, 1)) == 1 and env.observation((0, 1, 0)) == 2
    assert env.observation((31, 10, 1)) == 703 and env.observation((14, 3, 1)) == 14 * 22 + 3 * 2 + 1


def test_reinforce_returns_to_go_match_hand_computed_values():
    assert returns_to_go([1.0, 2.0, 3.0], gamma=0.5).tolist() == [2.75, 3.5, 3.0]  # 1 + .5*2 + .25*3, 2 + .5*3, 3
    assert returns_to_go([1.0, 1.0, 1.0, 1.0], gamma=1.0).tolist() == [4.0, 3.0, 2.0, 1.0]
    assert step_weights([1.0, 2.0, 3.0], 0.5, "reward_to_go").tolist() == [2.75, 3.5, 3.0]
    assert step_weights([1.0, 2.0, 3.0], 0.5, "episode").tolist() == [2.75, 2.75, 2.75]  # G_0 for every step


def test_reinforce_rejects_an_unknown_return_type():
    with pytest.raises(ValueError, match="return_type='total' is not allowed: one of episode, reward_to_go"):
        Reinforce("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), return_type="total")
