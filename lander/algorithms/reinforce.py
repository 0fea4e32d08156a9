"""REINFORCE, Monte-Carlo policy gradient (course assignment 003, task 1 and its extra tasks), as an SB3 algorithm.

Each update uses ``batch_episodes`` complete episodes. Every step's log-probability is weighted by

- ``return_type="episode"``: the episode's whole discounted return ``sum_t gamma^t r_t`` (gamma=1: the plain
  sum of rewards, the assignment's first version), or
- ``return_type="reward_to_go"``: the discounted return from that step on, ``G_t = sum_{k>=t} gamma^(k-t) r_k``,

minus, with ``baseline=True``, a learned value ``V(s_t)`` fitted to the same returns. The policy is SB3's
``ActorCriticPolicy`` (its value head is the baseline), so discrete and continuous actions and image
observations work, and the model saves and loads like any SB3 model.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy, BasePolicy
from stable_baselines3.common.utils import obs_as_tensor
from torch.nn import functional as F

from lander.algorithms import dump_logs

RETURN_TYPES = ("episode", "reward_to_go")


def returns_to_go(rewards: list[float] | np.ndarray, gamma: float) -> np.ndarray:
    """``G_t = r_t + gamma * G_{t+1}`` for every step of one episode."""
    out, running = np.zeros(len(rewards)), 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def step_weights(rewards: list[float] | np.ndarray, gamma: float, return_type: str) -> np.ndarray:
    """The return each step of one episode is weighted by: ``G_t``, or ``G_0`` for every step."""
    to_go = returns_to_go(rewards, gamma)
    return to_go if return_type == "reward_to_go" else np.full(len(rewards), to_go[0] if len(to_go) else 0.0)


class Reinforce(BaseAlgorithm):
    """Monte-Carlo policy gradient; see the module docstring.

    :param policy: ``"MlpPolicy"`` or ``"CnnPolicy"`` (SB3's actor-critic policies)
    :param env: the training env; with several envs, episodes still running at an update finish under
        the updated policy and count for the next one
    :param learning_rate: Adam's learning rate
    :param gamma: discount factor
    :param batch_episodes: complete episodes per update
    :param return_type: ``"episode"`` or ``"reward_to_go"``
    :param baseline: subtract a learned value ``V(s_t)`` (trained with weight ``vf_coef``)
    :param normalize: standardise the weights of each batch (mean 0, std 1)
    :param ent_coef: entropy bonus
    :param vf_coef: weight of the baseline's squared error
    :param max_grad_norm: gradient clipping (None: none)
    :param kwargs: SB3 ``BaseAlgorithm`` arguments (``seed``, ``device``, ``policy_kwargs``, ``verbose``)
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": ActorCriticPolicy,
        "CnnPolicy": ActorCriticCnnPolicy,
    }
    policy: ActorCriticPolicy

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: Any,
        learning_rate: float = 0.01,
        gamma: float = 0.99,
        batch_episodes: int = 25,
        return_type: str = "reward_to_go",
        baseline: bool = True,
        normalize: bool = True,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float | None = None,
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        if return_type not in RETURN_TYPES:
            raise ValueError(f"return_type={return_type!r} is not allowed: one of {', '.join(RETURN_TYPES)}")
        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            support_multi_env=True,
            supported_action_spaces=(spaces.Discrete, spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary),
            **kwargs,
        )
        self.gamma, self.batch_episodes, self.return_type = gamma, batch_episodes, return_type
        self.baseline, self.normalize, self.ent_coef, self.vf_coef = baseline, normalize, ent_coef, vf_coef
        self.max_grad_norm = max_grad_norm
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        self.policy = self.policy_class(
            self.observation_space,
            self.action_space,
            self.lr_schedule,  # type: ignore
            **self.policy_kwargs,
        ).to(self.device)
        self._partial: list[list[tuple[Any, Any, float]]] = []

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_partial"]  # half-collected episodes are not saved

    def learn(
        self,
        total_timesteps: int,
        callback: Any = None,
        log_interval: int = 1,
        tb_log_name: str = "Reinforce",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> Reinforce:
        """Collect ``batch_episodes`` episodes (one rollout for the callbacks), update, until ``total_timesteps``."""
        fresh_episodes = reset_num_timesteps or self._last_obs is None  # SB3 resets the envs in these cases
        total_timesteps, callback = self._setup_learn(
            total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar
        )
        callback.on_training_start(locals(), globals())
        assert self.env is not None
        if fresh_episodes or len(self._partial) != self.env.num_envs:  # else: episodes go on from the last call
            self._partial = [[] for _ in range(self.env.num_envs)]
        iteration = 0
        while self.num_timesteps < total_timesteps:
            episodes = self.collect_episodes(callback)
            if episodes is None:
                break
            self._update_current_progress_remaining(self.num_timesteps, total_timesteps)
            self.train(episodes)
            iteration += 1
            if log_interval and iteration % log_interval == 0:
                dump_logs(self, **{"time/iterations": iteration})
        callback.on_training_end()
        return self

    def collect_episodes(self, callback: Any) -> list[list[tuple[Any, Any, float]]] | None:
        """Step the envs until ``batch_episodes`` episodes have ended; None if a callback stopped training."""
        assert self.env is not None
        callback.on_rollout_start()
        self.policy.set_training_mode(False)
        finished: list[list[tuple[Any, Any, float]]] = []
        while len(finished) < self.batch_episodes:
            with th.no_grad():
                actions, _, _ = self.policy(obs_as_tensor(self._last_obs, self.device))  # type: ignore[arg-type]
            actions = actions.cpu().numpy()
            env_actions = actions
            if isinstance(self.action_space, spaces.Box):
                env_actions = np.clip(actions, self.action_space.low, self.action_space.high)
            new_obs, rewards, dones, infos = self.env.step(env_actions)
            self.num_timesteps += self.env.num_envs
            self._update_info_buffer(infos, dones)
            callback.update_locals(locals())
            if not callback.on_step():
                return None
            for i, done in enumerate(dones):
                self._partial[i].append((np.array(self._last_obs[i]), actions[i], float(rewards[i])))  # type: ignore[index]
                if done:
                    finished.append(self._partial[i])
                    self._partial[i] = []
                    self._episode_num += 1
            self._last_obs = new_obs  # type: ignore[assignment]
        callback.on_rollout_end()
        return finished

    def train(self, episodes: list[list[tuple[Any, Any, float]]]) -> None:
        """One gradient step on the episodes' policy-gradient loss (and the baseline's squared error)."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        steps = [step for episode in episodes for step in episode]
        obs = obs_as_tensor(np.stack([s[0] for s in steps]), self.device)
        actions = th.as_tensor(np.stack([s[1] for s in steps]), device=self.device)
        if isinstance(self.action_space, spaces.Discrete):
            actions = actions.long().flatten()
        weights = np.concatenate([step_weights([s[2] for s in ep], self.gamma, self.return_type) for ep in episodes])
        returns = th.as_tensor(weights, dtype=th.float32, device=self.device)
        values, log_prob, entropy = self.policy.evaluate_actions(obs, actions)
        values = values.flatten()
        advantages = returns - values.detach() if self.baseline else returns
        if self.normalize and len(advantages) > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        policy_loss = -(log_prob * advantages).mean()
        value_loss = F.mse_loss(values, returns) if self.baseline else th.zeros((), device=self.device)
        entropy_mean = entropy.mean() if entropy is not None else -log_prob.mean()
        loss = policy_loss + self.vf_coef * value_loss - self.ent_coef * entropy_mean
        self.policy.optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        if self.max_grad_norm is not None:
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
        self.policy.optimizer.step()
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/policy_loss", policy_loss.item())
        self.logger.record("train/value_loss", value_loss.item())
        self.logger.record("train/entropy", entropy_mean.item())
        self.logger.record("train/batch_steps", len(steps))
        self.logger.record("train/batch_return", float(np.mean([sum(s[2] for s in ep) for ep in episodes])))
