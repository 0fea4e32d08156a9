"""Tabular epsilon-greedy Q-learning (course assignment 003, task 2) as an SB3 ``BaseAlgorithm``.

The Q-table is a buffer of the policy module, so the model saves, loads, checkpoints and resumes like
any SB3 model, and SB3 callbacks (lander's evaluation, checkpoints, logging) run on every step.
Observations must be ``Discrete``; Blackjack's tuple is numbered by ``lander.envs.TupleToDiscrete``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import PyTorchObs
from stable_baselines3.common.utils import LinearSchedule

from lander.algorithms import dump_logs


def q_learning_update(
    q_table: np.ndarray,
    state: int,
    action: int,
    reward: float,
    next_state: int,
    terminated: bool,
    alpha: float,
    gamma: float,
) -> float:
    """``Q[s, a] += alpha * (r + gamma * max_b Q[s', b] * (1 - terminated) - Q[s, a])``; returns the TD error.

    A truncated episode (time limit) still bootstraps from ``s'``; a terminated one does not.
    """
    target = reward + (0.0 if terminated else gamma * float(q_table[next_state].max()))
    td_error = target - float(q_table[state, action])
    q_table[state, action] += alpha * td_error
    return td_error


def first_value(space: Any) -> int:
    """The first value of a ``Discrete`` space (``start``, 0 unless the env says otherwise)."""
    return int(space.start)


class QTablePolicy(BasePolicy):
    """Greedy policy over a table ``Q[state, action]`` (float64, all zeros at the start)."""

    q_table: th.Tensor

    def __init__(self, observation_space: spaces.Space[Any], action_space: spaces.Space[Any], **kwargs: Any) -> None:
        super().__init__(observation_space, action_space, **kwargs)
        if not isinstance(observation_space, spaces.Discrete) or not isinstance(action_space, spaces.Discrete):
            raise ValueError(
                "tabular Q-learning needs Discrete observations and actions, got "
                f"{observation_space} and {action_space} (a Tuple of Discrete observations: wrap the "
                "env in lander.envs.TupleToDiscrete, as lander/conf/env/blackjack.yaml does)"
            )
        self.register_buffer("q_table", th.zeros(int(observation_space.n), int(action_space.n), dtype=th.float64))

    @property
    def table(self) -> np.ndarray:
        """The Q-table as a NumPy array sharing the buffer's memory (updates change the buffer)."""
        return self.q_table.numpy()

    def state_index(self, observation: Any) -> np.ndarray:
        """Row indices of observations (a batch, or one)."""
        return np.asarray(observation, dtype=np.int64) - first_value(self.observation_space)

    def _predict(self, observation: PyTorchObs, deterministic: bool = True) -> th.Tensor:
        assert isinstance(observation, th.Tensor)
        return self.q_table[observation.long().flatten() - first_value(self.observation_space)].argmax(dim=1)

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        """Greedy actions (the lowest-numbered action among ties) for one observation or a batch."""
        actions = self.table[self.state_index(observation)].argmax(axis=-1) + first_value(self.action_space)
        return actions, state


class QLearning(BaseAlgorithm):
    """Tabular Q-learning with epsilon-greedy exploration, updated after every env step.

    :param policy: ``"TabularPolicy"``
    :param env: the training env (VecEnvs with several envs update the table from each in turn)
    :param alpha: learning rate of the table update
    :param gamma: discount factor
    :param exploration_initial_eps: epsilon at the start
    :param exploration_final_eps: epsilon at the end of the decay (equal to the start: constant epsilon)
    :param exploration_fraction: fraction of training over which epsilon decays linearly
    :param kwargs: SB3 ``BaseAlgorithm`` arguments (``seed``, ``verbose``, ``device`` is always cpu)
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"TabularPolicy": QTablePolicy}
    policy: QTablePolicy
    # a signal stops it at its next rollout (step), not within one: its episode count moves before the callbacks
    # see the step (lander.training.callbacks.SignalCheck)
    stops_at_rollouts = True

    def __init__(
        self,
        policy: str | type[QTablePolicy],
        env: Any,
        alpha: float = 0.1,
        gamma: float = 0.99,
        exploration_initial_eps: float = 0.1,
        exploration_final_eps: float = 0.1,
        exploration_fraction: float = 1.0,
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("device", None)  # a NumPy-backed table lives on the CPU
        super().__init__(
            policy,
            env,
            learning_rate=alpha,
            device="cpu",
            support_multi_env=True,
            supported_action_spaces=(spaces.Discrete,),
            **kwargs,
        )
        self.alpha, self.gamma = alpha, gamma
        self.exploration_initial_eps, self.exploration_final_eps = exploration_initial_eps, exploration_final_eps
        self.exploration_fraction = exploration_fraction
        self.exploration_rate = exploration_initial_eps
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        self.policy = self.policy_class(self.observation_space, self.action_space)  # type: ignore[assignment]
        self.exploration_schedule = LinearSchedule(
            self.exploration_initial_eps, self.exploration_final_eps, self.exploration_fraction
        )

    def explore(self, observations: np.ndarray) -> np.ndarray:
        """Epsilon-greedy actions for a batch: random with probability epsilon, else greedy (ties broken at random)."""
        table, actions = self.policy.table, []
        for row in table[self.policy.state_index(observations)]:
            if np.random.random() < self.exploration_rate:
                actions.append(self.action_space.sample())
            else:
                actions.append(np.random.choice(np.flatnonzero(row == row.max())) + first_value(self.action_space))
        return np.asarray(actions, dtype=np.int64)

    def learn(
        self,
        total_timesteps: int,
        callback: Any = None,
        log_interval: int = 100,
        tb_log_name: str = "QLearning",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> QLearning:
        """Step the envs until ``total_timesteps``, updating the table from every transition.

        Callbacks see one rollout per env step: ``on_rollout_start``, the step, ``on_step``,
        ``on_rollout_end``, then the update, so a checkpoint at a rollout start holds every update so far.
        """
        total_timesteps, callback = self._setup_learn(
            total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar
        )
        callback.on_training_start(locals(), globals())
        assert self.env is not None and self._last_obs is not None
        next_log = (self._episode_num // log_interval + 1) * log_interval
        while self.num_timesteps < total_timesteps:
            callback.on_rollout_start()
            obs = np.asarray(self._last_obs)
            actions = self.explore(obs)
            new_obs, rewards, dones, infos = self.env.step(actions)
            self.num_timesteps += self.env.num_envs
            self._update_info_buffer(infos, dones)
            self._episode_num += int(np.sum(dones))
            callback.update_locals(locals())
            if not self.continue_after(callback):
                break
            self.train_step(obs, actions, rewards, new_obs, dones, infos)  # type: ignore[arg-type]  # Discrete obs
            self._last_obs = new_obs  # type: ignore[assignment]
            self._update_current_progress_remaining(self.num_timesteps, total_timesteps)
            self.exploration_rate = self.exploration_schedule(self._current_progress_remaining)
            if log_interval and self._episode_num >= next_log:
                next_log = (self._episode_num // log_interval + 1) * log_interval
                dump_logs(self, **{"rollout/exploration_rate": self.exploration_rate})
        callback.on_training_end()
        return self

    @staticmethod
    def continue_after(callback: BaseCallback) -> bool:
        """``on_step`` then ``on_rollout_end``; False if a callback asked to stop."""
        keep_going = callback.on_step()
        callback.on_rollout_end()
        return keep_going

    def train_step(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        new_obs: np.ndarray,
        dones: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """The Q-learning update for each env's transition (an ended episode's next state is in its info)."""
        table, index, first_action = self.policy.table, self.policy.state_index, first_value(self.action_space)
        for i in range(len(actions)):
            terminated = bool(dones[i]) and not infos[i].get("TimeLimit.truncated", False)
            next_obs = infos[i]["terminal_observation"] if dones[i] else new_obs[i]
            td_error = q_learning_update(
                table,
                int(index(obs[i])),
                int(actions[i]) - first_action,
                float(rewards[i]),
                int(index(next_obs)),
                terminated,
                self.alpha,
                self.gamma,
            )
            self.logger.record_mean("train/abs_td_error", abs(td_error))
