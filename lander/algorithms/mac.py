"""MAC: an on-policy actor-critic whose critic is Q(s, .) and whose actor uses every action.

The actor maximises ``sum_a pi(a|s) * stopgrad(Q(s, a))`` (Mean Actor-Critic; course assignment 004, task 1),
or with ``advantage=True`` the same with ``Q(s, a) - sum_b pi(b|s) Q(s, b)`` (task 2). The critic has one
output per discrete action and is fitted on the actions taken, to n-step returns that bootstrap from
``V(s) = sum_a pi(a|s) Q(s, a)``. Everything else (rollouts, RMSprop, clipping, saving) is SB3's A2C.

Because ``sum_a grad pi(a|s) = 0``, subtracting ``V(s)`` leaves the actor's gradient unchanged up to
floating-point rounding: the two variants differ in the logged loss, not in what they learn.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, cast

import torch as th
from gymnasium import spaces
from stable_baselines3 import A2C
from stable_baselines3.common.distributions import CategoricalDistribution
from stable_baselines3.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy, BasePolicy
from stable_baselines3.common.type_aliases import PyTorchObs
from stable_baselines3.common.utils import explained_variance
from torch import nn
from torch.nn import functional as F


def mac_actor_loss(probs: th.Tensor, q_values: th.Tensor, advantage: bool = False) -> th.Tensor:
    """``-mean_s sum_a pi(a|s) * stopgrad(Q(s, a))`` (or of the advantage ``Q - sum_b pi(b|s) Q(s, b)``).

    :param probs: action probabilities, shape ``(batch, n_actions)``
    :param q_values: critic outputs, shape ``(batch, n_actions)``
    :param advantage: use ``Q(s, a) - V(s)`` instead of ``Q(s, a)``
    """
    target = q_values.detach()
    if advantage:
        target = target - (probs.detach() * target).sum(dim=-1, keepdim=True)
    return -(probs * target).sum(dim=-1).mean()


if TYPE_CHECKING:  # the mixin is only ever mixed into an actor-critic policy: type it as one
    _PolicyBase = ActorCriticPolicy
else:
    _PolicyBase = object


class QCriticMixin(_PolicyBase):
    """Turns an SB3 actor-critic policy's value head into ``Q(s, .)``: one output per discrete action.

    ``forward``, ``evaluate_actions`` and ``predict_values`` report ``V(s) = sum_a pi(a|s) Q(s, a)``
    as the value, which is what SB3's rollout buffer bootstraps n-step returns from.
    """

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        assert isinstance(self.action_space, spaces.Discrete), "a Q head needs a discrete action space"
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, int(self.action_space.n))
        if self.ortho_init:
            self.value_net.apply(partial(BasePolicy.init_weights, gain=1))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def distribution_and_q(self, obs: PyTorchObs) -> tuple[CategoricalDistribution, th.Tensor]:
        """The action distribution and ``Q(s, .)`` of shape ``(batch, n_actions)``."""
        features = self.extract_features(obs)
        if self.share_features_extractor:
            latent_pi, latent_vf = self.mlp_extractor(features)
        else:
            latent_pi = self.mlp_extractor.forward_actor(features[0])
            latent_vf = self.mlp_extractor.forward_critic(features[1])
        distribution = self._get_action_dist_from_latent(latent_pi)
        assert isinstance(distribution, CategoricalDistribution)  # Discrete actions (checked in _build)
        return distribution, self.value_net(latent_vf)

    @staticmethod
    def state_value(distribution: CategoricalDistribution, q_values: th.Tensor) -> th.Tensor:
        """``V(s) = sum_a pi(a|s) Q(s, a)``, shape ``(batch, 1)``."""
        return (distribution.distribution.probs * q_values).sum(dim=-1, keepdim=True)

    def forward(self, obs: PyTorchObs, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        distribution, q_values = self.distribution_and_q(obs)
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        return (
            actions.reshape((-1, *(self.action_space.shape or ()))),
            self.state_value(distribution, q_values),
            log_prob,
        )

    def evaluate_actions(self, obs: PyTorchObs, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        distribution, q_values = self.distribution_and_q(obs)
        return self.state_value(distribution, q_values), distribution.log_prob(actions), distribution.entropy()

    def predict_values(self, obs: PyTorchObs) -> th.Tensor:
        return self.state_value(*self.distribution_and_q(obs))


class MACPolicy(QCriticMixin, ActorCriticPolicy):
    """MLP actor and Q-critic (SB3's ``MlpPolicy`` with a Q head)."""


class MACCnnPolicy(QCriticMixin, ActorCriticCnnPolicy):
    """Nature-CNN actor and Q-critic sharing the CNN (SB3's ``CnnPolicy`` with a Q head)."""


class MAC(A2C):
    """A2C with a Q-critic and the all-actions policy gradient; see the module docstring.

    :param pg_coef: weight of the policy-gradient loss
    :param advantage: use ``Q(s, a) - V(s)`` in the actor's objective (``mac_adv``)
    :param kwargs: SB3 ``A2C`` arguments (``gae_lambda`` stays 1: plain n-step returns)
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": MACPolicy, "CnnPolicy": MACCnnPolicy}

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: Any,
        pg_coef: float = 1.0,
        advantage: bool = False,
        **kwargs: Any,
    ) -> None:
        space = getattr(env, "action_space", None)
        if space is not None and not isinstance(space, spaces.Discrete):
            raise ValueError(f"MAC needs a Discrete action space (one Q value per action), got {space}")
        self.pg_coef, self.advantage = pg_coef, advantage
        super().__init__(policy, env, **kwargs)

    def train(self) -> None:
        """One gradient step on the rollout: all-actions actor loss, Q loss on the taken actions, entropy."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        for rollout in self.rollout_buffer.get(batch_size=None):
            distribution, q_values = cast(QCriticMixin, self.policy).distribution_and_q(rollout.observations)
            probs = distribution.distribution.probs
            policy_loss = self.pg_coef * mac_actor_loss(probs, q_values, self.advantage)
            q_taken = q_values.gather(1, rollout.actions.long().reshape(-1, 1)).flatten()
            value_loss = F.mse_loss(rollout.returns, q_taken)
            entropy = distribution.entropy().mean()
            loss = policy_loss - self.ent_coef * entropy + self.vf_coef * value_loss
            self.policy.optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()

        self._n_updates += 1
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record(
            "train/explained_variance",
            explained_variance(self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten()),
        )
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/policy_loss", policy_loss.item())
        self.logger.record("train/value_loss", value_loss.item())
        self.logger.record("train/entropy", entropy.item())
        self.logger.record("train/mean_q", q_values.mean().item())
