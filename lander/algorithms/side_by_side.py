"""Several seeds of one PPO configuration trained side by side in one process (``seeds_per_process: K``).

Each seed is a whole SB3 ``PPO`` of its own (:class:`SideBySidePPO`): its own envs, rollout buffer, callbacks,
logger, evaluations, checkpoints, ``model.zip`` (plain SB3, loadable by ``stable_baselines3.PPO.load``). What the
seeds share is the arithmetic of their networks: SB3 spends most of a small MLP's CPU on the overhead of one torch
call per layer per minibatch, so here the K networks are one flat parameter tensor ``[K, P]`` and each layer of
all K is one batched matrix product (:class:`StackedPolicy`), one Adam (:class:`StackedAdam`) updates all K (Adam
is elementwise: that is K independent Adams, each with its own step count, learning rate and moments), and
gradient clipping and ``target_kl`` stay per seed. The loss and its gradient are written out in NumPy, on the CPU
(:class:`NumpyLoss`: a minibatch is a few dozen tiny array operations, cheaper without autograd's bookkeeping): the
one implementation on the training path. Its oracle, the same loss differentiated by torch's autograd, is in the
tests (``tests/unit/test_side_by_side.py``); a GPU device or an activation other than Tanh, ReLU or Identity is
refused before a run starts (:func:`lander.config.checks.check_side_by_side`).

The seeds run as greenlets (:class:`lander.execution.lockstep.Lockstep`, the execution layer's): each seed's whole
training (lander's ``train``, SB3's ``learn`` and its callbacks) runs on its own stack, and where SB3 calls the policy
for the rollout's actions, or ``train()``, the seed hands the work to the lockstep (:func:`request`) and waits; once
every seed waits, the lockstep does the work of all of them in one batched call (:class:`SeedStack`) and gives each
its part. Nothing runs in parallel: one thread, so signals, logging and SB3 behave
as in a single run.

The update is SB3's ``PPO.train`` term by term (GAE from SB3's own buffer, advantage normalisation per minibatch,
clipped surrogate, value clipping, entropy bonus, gradient clipping, ``target_kl``, schedules), each seed with its
own random streams (actions: a ``torch.Generator``; minibatch order: a NumPy generator, both seeded from the seed).
Batched kernels round differently from SB3's, so results are statistically equivalent to SB3's, not identical
(BENCHMARKS.md); the default, one seed per process, is SB3 itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from greenlet import getcurrent
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor
from stable_baselines3.common.utils import explained_variance
from torch import nn

log = logging.getLogger(__name__)

ELEMENTWISE = (nn.Tanh, nn.ReLU, nn.ELU, nn.LeakyReLU, nn.GELU, nn.SiLU, nn.Sigmoid, nn.Softplus, nn.Identity)
ACTIVATION_NAMES = ("torch.nn.Tanh", "torch.nn.ReLU", "torch.nn.Identity")  # what NumpyLoss differentiates


# ---------------------------------------------------------------------------------------------------------------
# K policies as one tensor


@dataclass
class Layout:
    """Where each parameter of an SB3 policy lies in a row of the flat tensor: ``name -> (start, end, shape)``."""

    slices: dict[str, tuple[int, int, torch.Size]] = field(default_factory=dict)
    size: int = 0

    @classmethod
    def of(cls, policy: nn.Module) -> Layout:
        layout = cls()
        for name, param in policy.named_parameters():
            layout.slices[name] = (layout.size, layout.size + param.numel(), param.shape)
            layout.size += param.numel()
        return layout

    def flatten(self, tensors: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[P]``: the named tensors (each of its parameter's shape) in this layout's order."""
        return torch.cat([tensors[name].detach().reshape(-1) for name in self.slices])

    def unflatten(self, row: torch.Tensor) -> dict[str, torch.Tensor]:
        """The named parameters of one row ``[P]`` (views)."""
        return {name: row[start:end].view(shape) for name, (start, end, shape) in self.slices.items()}


def affine(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, activation: str | None) -> np.ndarray:
    """One layer of all K networks by NumPy: ``x [K, B, in]``, ``weight [K, out, in]``, ``bias [K, out]`` ->
    ``activation(x @ weight^T + bias)`` ``[K, B, out]`` (``"tanh"``, ``"relu"`` or None). The rollouts' actions,
    the evaluations and :class:`NumpyLoss` all use it, so they round alike; NumPy's ``tanh`` is several times
    faster than torch's CPU kernel."""
    y = np.matmul(x, weight.transpose(0, 2, 1))
    y += bias[:, None, :]
    if activation == "tanh":
        np.tanh(y, out=y)
    elif activation == "relu":
        np.maximum(y, 0.0, out=y)
    return y


def numpy_layer(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, tanh: bool) -> torch.Tensor:
    """:func:`affine` of CPU float32 tensors, without autograd (the rollouts' actions and the evaluations)."""
    out = affine(x.detach().numpy(), weight.detach().numpy(), bias.detach().numpy(), "tanh" if tanh else None)
    return torch.from_numpy(out)


@dataclass
class Layer:
    """A step of an MLP of SB3's: the linear layer with parameter prefix ``linear`` (None: none), then the
    elementwise ``activation`` (None: none)."""

    linear: str | None
    activation: nn.Module | None = None


def mlp_program(net: nn.Module, prefix: str) -> list[Layer]:
    """SB3's ``nn.Sequential`` of linear layers and elementwise activations as :class:`Layer` steps, each linear
    layer with the activation that follows it."""
    program: list[Layer] = []
    for index, module in enumerate(net.children() if isinstance(net, nn.Sequential) else [net]):
        if isinstance(module, nn.Linear):
            program.append(Layer(f"{prefix}.{index}" if isinstance(net, nn.Sequential) else prefix))
        elif isinstance(module, ELEMENTWISE):
            if program and program[-1].activation is None:
                program[-1].activation = module
            else:
                program.append(Layer(None, module))
        else:
            raise ValueError(f"side-by-side training cannot batch {type(module).__name__} layers ({prefix})")
    return program


class StackedPolicy:
    """K copies of one SB3 ``ActorCriticPolicy`` (MLP) as one tensor ``flat [K, P]``, whose parameters
    (:attr:`params`, views of ``flat``) are the leaves that gradients are taken for.

    :param policies: the K policies, same architecture (their parameters are copied, not shared)
    """

    def __init__(self, policies: list[ActorCriticPolicy]) -> None:
        first = policies[0]
        for policy in policies:
            if not isinstance(policy.pi_features_extractor, FlattenExtractor) or policy.use_sde:
                raise ValueError("side-by-side training needs an MlpPolicy on vector observations, without gSDE")
        self.layout = Layout.of(first)
        self.k = len(policies)
        rows = [self.layout.flatten(dict(policy.named_parameters())) for policy in policies]
        self.flat = torch.stack(rows).to(first.device)
        self.grad = torch.empty_like(self.flat)  # reused: a new [K, P] each step would be a new mmap of the heap
        # each parameter of all K a view of flat (NumpyLoss writes its gradient into the same layout of grad)
        slices = self.layout.slices.items()
        self.params = {name: self.flat[:, start:end].view(self.k, *shape) for name, (start, end, shape) in slices}
        self.pi = mlp_program(first.mlp_extractor.policy_net, "mlp_extractor.policy_net")
        self.vf = mlp_program(first.mlp_extractor.value_net, "mlp_extractor.value_net")
        self.discrete = isinstance(first.action_space, spaces.Discrete)
        if not self.discrete and not isinstance(first.action_space, spaces.Box):
            raise ValueError(f"side-by-side training supports Discrete and Box actions, not {first.action_space}")

    def param(self, name: str) -> torch.Tensor:
        """``[K, *shape]``: parameter ``name`` of every copy (a view of :attr:`flat`)."""
        return self.params[name]

    def heads(self, obs: torch.Tensor, values: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``obs [K, B, D]`` -> (logits or means ``[K, B, A]``, values ``[K, B]`` or None if not ``values``)."""
        features = obs.reshape(self.k, obs.shape[1], -1).float()
        out = self._mlp(self._mlp(features, self.pi), [Layer("action_net")])
        if not values:
            return out, None
        return out, self._mlp(self._mlp(features, self.vf), [Layer("value_net")]).squeeze(-1)

    def _mlp(self, x: torch.Tensor, program: list[Layer]) -> torch.Tensor:
        for layer in program:
            activation = layer.activation
            if layer.linear is not None:
                weight, bias = self.param(f"{layer.linear}.weight"), self.param(f"{layer.linear}.bias")
                if x.device.type == "cpu" and x.dtype == weight.dtype == torch.float32:  # no autograd here
                    tanh = isinstance(activation, nn.Tanh)
                    x = numpy_layer(x, weight, bias, tanh)  # [K, B, out]
                    activation = None if tanh else activation
                else:
                    x = torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))  # [K, B, out]
            if activation is not None:
                x = activation(x)
        return x

    def log_std(self) -> torch.Tensor:
        """``[K, 1, A]``: the state-independent log standard deviations (Box actions)."""
        return self.param("log_std").unsqueeze(1)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, generators: list[torch.Generator]) -> tuple[torch.Tensor, ...]:
        """One rollout step of all K, each sampling with its own generator: ``obs [K, N, D]`` -> actions
        (``[K, N]`` or ``[K, N, A]``), values ``[K, N]``, log-probabilities ``[K, N]``."""
        out, values = self.heads(obs)
        assert values is not None
        n = obs.shape[1]
        if self.discrete:
            log_p = torch.log_softmax(out, dim=-1)
            uniform = torch.stack([torch.rand(n, generator=g) for g in generators]).to(out.device)
            cdf = log_p.exp().cumsum(-1)
            actions = (cdf < uniform.unsqueeze(-1) * cdf[..., -1:]).sum(-1).clamp(max=out.shape[-1] - 1)
            return actions, values, log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        log_std = self.log_std()
        noise = torch.stack([torch.randn(out.shape[1:], generator=g) for g in generators]).to(out.device)
        actions = out + log_std.exp() * noise
        return actions, values, gaussian_log_prob(actions, out, log_std)


def gaussian_log_prob(actions: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log-density of a diagonal Gaussian, summed over the action dims: ``[K, B, A]`` -> ``[K, B]``."""
    var = torch.exp(2 * log_std)
    return (-((actions - mean) ** 2) / (2 * var) - log_std - 0.5 * np.log(2 * np.pi)).sum(-1)


ACTIVATIONS = {nn.Tanh: "tanh", nn.ReLU: "relu", nn.Identity: None}


@dataclass
class NumpyLinear:
    """One linear layer of all K networks as NumPy views: the parameters ``weight [K, out, in]`` and ``bias
    [K, out]`` (of :attr:`StackedPolicy.flat`), their gradients (of :attr:`StackedPolicy.grad`), and the activation
    after it (``"tanh"``, ``"relu"`` or None)."""

    weight: np.ndarray
    bias: np.ndarray
    grad_weight: np.ndarray
    grad_bias: np.ndarray
    activation: str | None


class NumpyLoss:
    """SB3's PPO loss for all K seeds and its gradient, written out by hand in NumPy: the CPU path of the update.

    A minibatch of a 64x64 MLP is a few dozen tiny array operations; through torch's autograd each one costs more
    in dispatch and graph bookkeeping than in arithmetic. Here the forward keeps what the backward needs and the
    backward is the chain rule of the same terms, each gradient written straight into :attr:`StackedPolicy.grad`
    (``[K, P]``). Its semantics are torch's where they choose: the gradient of ``min(a, b)`` goes to the smaller
    (half to each on a tie), ``clamp`` passes it inside its bounds inclusive, the entropy of a Categorical is
    ``-sum(p log p)``. Rounding differs from torch's by float32 ulps (``tests/unit/test_side_by_side.py`` compares
    whole updates with SB3's).

    :param policy: the stacked policy on the CPU in float32, whose activations are all Tanh, ReLU or Identity
        (:meth:`supports`)
    """

    def __init__(self, policy: StackedPolicy) -> None:
        flat, grad = policy.flat.detach().numpy(), policy.grad.numpy()
        self.discrete = policy.discrete
        self.k = policy.k

        def views(name: str) -> tuple[np.ndarray, np.ndarray]:
            start, end, shape = policy.layout.slices[name]
            param, gradient = flat[:, start:end].reshape(self.k, *shape), grad[:, start:end].reshape(self.k, *shape)
            assert np.may_share_memory(param, flat) and np.may_share_memory(gradient, grad)  # views, not copies
            return param, gradient

        def linear(prefix: str, activation: str | None) -> NumpyLinear:
            weight, grad_weight = views(f"{prefix}.weight")
            bias, grad_bias = views(f"{prefix}.bias")
            return NumpyLinear(weight, bias, grad_weight, grad_bias, activation)

        def net(program: list[Layer], head: str) -> list[NumpyLinear]:
            layers = [linear(layer.linear, None if layer.activation is None else ACTIVATIONS[type(layer.activation)])
                      for layer in program if layer.linear is not None]  # fmt: skip
            return [*layers, linear(head, None)]

        self.pi, self.vf = net(policy.pi, "action_net"), net(policy.vf, "value_net")
        self.log_std: np.ndarray | None = None
        self.grad_log_std: np.ndarray | None = None
        if "log_std" in policy.layout.slices:  # Box actions
            self.log_std, self.grad_log_std = views("log_std")

    @staticmethod
    def supports(policy: StackedPolicy) -> bool:
        """Whether :class:`NumpyLoss` computes ``policy``'s update: on the CPU in float32, activations Tanh, ReLU
        or Identity only, each after a linear layer."""
        programs = [*policy.pi, *policy.vf]
        return (
            policy.flat.device.type == "cpu"
            and policy.flat.dtype == torch.float32
            and all(layer.linear is not None for layer in programs)
            and all(layer.activation is None or type(layer.activation) in ACTIVATIONS for layer in programs)
        )

    @staticmethod
    def forward(x: np.ndarray, layers: list[NumpyLinear]) -> list[np.ndarray]:
        """``x [K, B, in]`` through ``layers``: every layer's input and the last layer's output."""
        kept = [x]
        for layer in layers:
            kept.append(affine(kept[-1], layer.weight, layer.bias, layer.activation))
        return kept

    @staticmethod
    def backward(grad: np.ndarray, layers: list[NumpyLinear], kept: list[np.ndarray]) -> None:
        """The gradient ``grad [K, B, out]`` of the last layer's output back through ``layers`` (``kept``: what
        :meth:`forward` returned) into each layer's gradient views."""
        for index in range(len(layers) - 1, -1, -1):
            layer, x, y = layers[index], kept[index], kept[index + 1]
            if layer.activation == "tanh":  # tanh' = 1 - tanh^2
                slope = y * y
                np.subtract(1.0, slope, out=slope)
                grad = grad * slope
            elif layer.activation == "relu":
                grad = grad * (y > 0)
            np.matmul(grad.transpose(0, 2, 1), x, out=layer.grad_weight)
            np.sum(grad, axis=1, out=layer.grad_bias)
            if index:
                grad = np.matmul(grad, layer.weight)

    def distribution(self, out: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        """The log-probabilities of ``actions`` and the entropies, each ``[K, B]``, of the distributions the heads
        ``out`` give (logits ``[K, B, A]`` of a Categorical, or means of a diagonal Gaussian with the state-independent
        ``log_std``), and what :meth:`distribution_backward` needs."""
        if self.discrete:
            shifted = out - out.max(-1, keepdims=True)
            probs = np.exp(shifted)
            total = probs.sum(-1, keepdims=True)
            log_p = shifted - np.log(total)
            probs /= total
            taken = actions.astype(np.int64)[..., None]
            entropy = -(probs * log_p).sum(-1)
            kept = {"probs": probs, "log_p": log_p, "taken": taken, "entropy": entropy}
            return np.take_along_axis(log_p, taken, -1)[..., 0], entropy, kept
        assert self.log_std is not None
        log_std = self.log_std[:, None, :]
        inverse_var = np.exp(-2.0 * log_std)
        diff = actions - out
        log_prob = (-(diff * diff) * (0.5 * inverse_var) - log_std - np.float32(0.5 * np.log(2 * np.pi))).sum(-1)
        entropy = np.broadcast_to((np.float32(0.5 + 0.5 * np.log(2 * np.pi)) + log_std).sum(-1), log_prob.shape)
        return log_prob, entropy, {"diff": diff, "inverse_var": inverse_var}

    def distribution_backward(self, kept: dict, grad_log_prob: np.ndarray, grad_entropy: np.ndarray) -> np.ndarray:
        """The gradient of the heads' output ``[K, B, A]`` from those of the log-probabilities ``[K, B]`` and of
        each entropy term ``[K, 1]`` (:meth:`distribution`'s ``kept``); a Gaussian's ``log_std`` gradient goes
        into its view."""
        if self.discrete:
            # d log p[a] / d out = onehot(a) - p;  d entropy / d out = -p (log p + entropy)
            probs, log_p, taken = kept["probs"], kept["log_p"], kept["taken"]
            grad_out = -probs * (
                grad_log_prob[..., None] + grad_entropy[..., None] * (log_p + kept["entropy"][..., None])
            )
            np.put_along_axis(grad_out, taken, np.take_along_axis(grad_out, taken, -1) + grad_log_prob[..., None], -1)
            return grad_out
        assert self.grad_log_std is not None
        scaled = kept["diff"] * kept["inverse_var"]  # d log_prob / d mean
        # d log_prob / d log_std = diff^2 / var - 1;  d entropy / d log_std = 1 for each of the B terms
        np.einsum("kb,kba->ka", grad_log_prob, kept["diff"] * scaled - 1, out=self.grad_log_std)
        self.grad_log_std += grad_entropy * grad_log_prob.shape[1]
        return grad_log_prob[..., None] * scaled

    def minibatch(
        self,
        batch: dict[str, np.ndarray],
        coefs: tuple[float, float, bool, float | None],
        clip: np.ndarray,
        clip_vf: np.ndarray | None,
        training: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One minibatch of every seed: its loss, and the gradient of the seeds that step into the policy's
        gradient buffer.

        :param batch: ``[K, B, ...]`` arrays: observations, actions, old_values, old_log_prob, advantages, returns
        :param coefs: ``(ent_coef, vf_coef, normalize_advantage, target_kl)``
        :param clip: ``[K, 1]`` clip range of each seed
        :param clip_vf: ``[K, 1]`` value clip range of each seed, or None (no value clipping)
        :param training: ``[K]`` bool, the seeds still training in this update
        :return: each seed's loss ``[K]``, which seeds step ``[K]`` (``training`` less those whose KL passed
            ``1.5 * target_kl``), and the statistics ``[5, K]``: policy, value and entropy losses, clip fraction,
            approx. KL
        """
        ent_coef, vf_coef, normalize, target_kl = coefs
        obs, size = batch["observations"], batch["advantages"].shape[1]
        features = obs.reshape(self.k, obs.shape[1], -1).astype(np.float32, copy=False)
        pi, vf = self.forward(features, self.pi), self.forward(features, self.vf)
        values = vf[-1][..., 0]
        log_prob, entropy, kept = self.distribution(pi[-1], batch["actions"])
        advantages = batch["advantages"]
        if normalize and size > 1:
            advantages = (advantages - advantages.mean(1, keepdims=True)) / (
                advantages.std(1, ddof=1, keepdims=True) + np.float32(1e-8)
            )
        # the losses (SB3's PPO.train)
        log_ratio = log_prob - batch["old_log_prob"]
        ratio = np.exp(log_ratio)
        surrogate, clipped_ratio = advantages * ratio, np.clip(ratio, 1 - clip, 1 + clip)
        clipped_surrogate = advantages * clipped_ratio
        policy_loss = -np.minimum(surrogate, clipped_surrogate).mean(1)
        predicted = values
        if clip_vf is not None:
            old = batch["old_values"]
            predicted = old + np.clip(values - old, -clip_vf, clip_vf)
        value_error = predicted - batch["returns"]
        value_loss = (value_error * value_error).mean(1)
        entropy_loss = -entropy.mean(1)
        loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss
        kl = ((ratio - 1) - log_ratio).mean(1)
        stepping = training if target_kl is None else training & ~(kl > 1.5 * target_kl)
        stats = np.stack([policy_loss, value_loss, entropy_loss, (np.abs(ratio - 1) > clip).mean(1), kl])
        # the gradient of sum(loss of the seeds stepping)
        weight = (stepping / size).astype(np.float32)[:, None]  # d loss / d (each term of a mean)
        inside = (ratio >= 1 - clip) & (ratio <= 1 + clip)  # clamp passes the gradient; min takes the smaller
        grad_log_prob = -weight * advantages * (inside | (surrogate < clipped_surrogate)) * ratio
        grad_values = (2 * vf_coef) * weight * value_error
        if clip_vf is not None:
            change = values - batch["old_values"]
            grad_values *= (change >= -clip_vf) & (change <= clip_vf)
        grad_out = self.distribution_backward(kept, grad_log_prob, -ent_coef * weight)
        self.backward(grad_out.astype(np.float32, copy=False), self.pi, pi)
        self.backward(grad_values[..., None].astype(np.float32, copy=False), self.vf, vf)
        return loss, stepping, stats


class StackedAdam:
    """torch's Adam (no weight decay, no AMSGrad) for K parameter rows at once, each row with its own step count
    and learning rate; a row not ``active`` is left exactly as it was.

    :param flat: ``[K, P]`` parameters
    :param betas: Adam's betas
    :param eps: Adam's epsilon (SB3's PPO: 1e-5)
    """

    def __init__(self, flat: torch.Tensor, betas: tuple[float, float], eps: float) -> None:
        self.flat, self.betas, self.eps = flat, betas, eps
        self.exp_avg = torch.zeros_like(flat, requires_grad=False)
        self.exp_avg_sq = torch.zeros_like(flat, requires_grad=False)
        self.steps = np.zeros(flat.shape[0], dtype=np.int64)
        self.denom, self.update = torch.empty_like(flat), torch.empty_like(flat)  # reused each step

    @torch.no_grad()
    def step(self, grad: torch.Tensor, lr: np.ndarray, active: torch.Tensor | None) -> None:
        """One update of every active row: ``grad [K, P]``, ``lr [K]``, ``active [K]`` bool (None: all)."""
        beta1, beta2 = self.betas
        if active is None:
            self.steps += 1
        else:
            self.steps += active.cpu().numpy()
        steps = np.maximum(self.steps, 1)
        step_size = torch.as_tensor(lr / (1 - beta1**steps), dtype=grad.dtype, device=grad.device).unsqueeze(1)
        bias2_sqrt = torch.as_tensor(np.sqrt(1 - beta2**steps), dtype=grad.dtype, device=grad.device).unsqueeze(1)
        mask = None if active is None else active.unsqueeze(1)
        kept = None if mask is None else (self.exp_avg.clone(), self.exp_avg_sq.clone())
        # torch's Adam, in place
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        torch.sqrt(self.exp_avg_sq, out=self.denom).div_(bias2_sqrt).add_(self.eps)
        torch.div(self.exp_avg, self.denom, out=self.update).mul_(step_size)
        if mask is not None and kept is not None:  # the rows not active keep their parameters and moments
            self.exp_avg.copy_(torch.where(mask, self.exp_avg, kept[0]))
            self.exp_avg_sq.copy_(torch.where(mask, self.exp_avg_sq, kept[1]))
            self.update.masked_fill_(~mask, 0.0)
        self.flat.sub_(self.update)


# ---------------------------------------------------------------------------------------------------------------
# the seeds' models and what they share


class SideBySidePPO(PPO):
    """SB3's PPO whose rollout actions and updates are computed together with the other seeds of its process
    (:class:`lander.execution.lockstep.Lockstep`), or alone (a run resumed by itself). Saved and loaded exactly as
    SB3's ``PPO``."""

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_alone"]

    def collect_rollouts(self, env: Any, callback: Any, rollout_buffer: RolloutBuffer, n_rollout_steps: int) -> bool:
        # SB3's own loop; only the policy call for the actions (policy(obs)) goes to the batched policy
        self.policy.forward = self._act  # type: ignore[method-assign]
        try:
            return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)
        finally:
            del self.policy.forward

    def _act(self, obs: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        actions, values, log_prob = request(self, ("act", obs))
        return actions, values.unsqueeze(-1), log_prob

    def predict(
        self,
        observation: Any,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3's ``predict``; in a lockstep, deterministic actions for a batch of observations (the evaluations,
        the video) are computed with the other seeds' (:meth:`SeedStack.predict`)."""
        space = self.observation_space
        if not (
            deterministic
            and in_lockstep()
            and isinstance(observation, np.ndarray)
            and space is not None
            and observation.shape[1:] == space.shape
        ):
            return super().predict(observation, state, episode_start, deterministic)
        if self.policy.training:  # SB3 sets it on every call: a walk over every module, 34 us, per step
            self.policy.set_training_mode(False)
        obs = torch.as_tensor(observation, dtype=torch.float32, device=self.device)
        actions = request(self, ("predict", obs)).cpu().numpy().reshape((-1, *(self.action_space.shape or ())))
        if isinstance(self.action_space, spaces.Box):
            actions = np.clip(actions, self.action_space.low, self.action_space.high)
        return actions, None

    def train(self) -> None:
        """SB3's ``PPO.train`` for this seed, computed with the other seeds (:meth:`SeedStack.train`); the same
        ``train/`` records."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        stats = request(self, ("train", None))
        values, returns = self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten()
        for key, value in stats.items():
            self.logger.record(f"train/{key}", value, exclude="tensorboard" if key == "n_updates" else None)
        self.logger.record("train/explained_variance", explained_variance(values, returns))
        if hasattr(self.policy, "log_std"):
            self.logger.record("train/std", torch.exp(self.policy.log_std).mean().item())


def in_lockstep() -> bool:
    """Whether this code runs in a job of a lockstep (:class:`lander.execution.lockstep.Lockstep` marks its jobs'
    greenlets with ``lockstep``), not alone and not in the lockstep's own work: its parent greenlet then does the
    batched work (:func:`request`)."""
    return getattr(getcurrent(), "lockstep", None) is not None and getcurrent().parent is not None


def request(model: SideBySidePPO, work: tuple[str, Any]) -> Any:
    """Hand ``work`` for ``model`` to the process's lockstep and wait for this seed's part of the result;
    without one (a run alone), do it here."""
    hub = getcurrent().parent
    if in_lockstep() and hub is not None:
        result = hub.switch((model, work))
    else:
        alone = model.__dict__.get("_alone")
        if alone is None or alone.models[0] is not model:
            alone = model.__dict__["_alone"] = SeedStack([model])
        result = alone.do({0: work})[0]
    if isinstance(result, BaseException):
        raise result
    return result


class SeedStack:
    """The K seeds' policies and Adams as one (:class:`StackedPolicy`, :class:`StackedAdam`), each seed's random
    streams, and the batched work: :meth:`act`, :meth:`train`.

    :param models: the seeds' models, as they start (new, or loaded from a checkpoint)
    """

    def __init__(self, models: list[SideBySidePPO]) -> None:
        self.models = models
        self.policy = StackedPolicy([m.policy for m in models])
        group = models[0].policy.optimizer.param_groups[0]
        if type(models[0].policy.optimizer) is not torch.optim.Adam or group["weight_decay"] or group["amsgrad"]:
            raise ValueError("side-by-side training implements Adam without weight decay or AMSGrad only")
        self.adam = StackedAdam(self.policy.flat, group["betas"], group["eps"])
        if not NumpyLoss.supports(self.policy):
            raise ValueError(
                "side-by-side training computes its update with NumPy on the CPU in float32, for Tanh, ReLU or "
                "Identity activations only (device=cpu, policy_kwargs.activation_fn)"
            )
        self.numpy_loss = NumpyLoss(self.policy)
        for row, model in enumerate(models):  # a loaded model's optimizer state goes on from where it was
            state = model.policy.optimizer.state
            named = dict(model.policy.named_parameters())
            if all(named[name] in state for name in self.policy.layout.slices):
                self.adam.exp_avg[row] = self.policy.layout.flatten({n: state[p]["exp_avg"] for n, p in named.items()})
                self.adam.exp_avg_sq[row] = self.policy.layout.flatten(
                    {n: state[p]["exp_avg_sq"] for n, p in named.items()}
                )
                self.adam.steps[row] = int(next(iter(state.values()))["step"])
        # each seed's random streams, seeded as lander seeds a run (a resumed one from seed + its step)
        starts = [int(m.seed or 0) + int(m.num_timesteps) for m in models]
        self.generators = [torch.Generator().manual_seed(start) for start in starts]
        self.orders = [np.random.default_rng(start) for start in starts]

    def do(self, work: dict[int, tuple[str, Any]]) -> dict[int, Any]:
        """The waiting seeds' work (row -> ``("act", obs)``, ``("predict", obs)`` or ``("train", None)``), batched
        by kind: row -> its result, or the exception to raise in that seed."""
        results: dict[int, Any] = {}
        acting = {row: obs for row, (kind, obs) in work.items() if kind == "act"}
        predicting = {row: obs for row, (kind, obs) in work.items() if kind == "predict"}
        training = [row for row, (kind, _) in work.items() if kind == "train"]
        if acting:
            results.update(self.act(acting))
        if predicting:
            results.update(self.predict(predicting))
        if training:
            results.update(self.train(training))
        return results

    def act(self, obs: dict[int, torch.Tensor]) -> dict[int, tuple[torch.Tensor, ...]]:
        """Rollout actions of the seeds in ``obs`` (row -> ``[N, D]``); the others' rows compute on zeros."""
        if len(obs) == self.policy.k:  # every seed (the rule in a rollout)
            batch = torch.stack([obs[row] for row in range(self.policy.k)]).float()
        else:
            first = next(iter(obs.values()))
            batch = torch.zeros((self.policy.k, *first.shape), dtype=torch.float32, device=first.device)
            for row, rows_obs in obs.items():
                batch[row] = rows_obs
        actions, values, log_prob = (out.unbind(0) for out in self.policy.act(batch, self.generators))
        return {row: (actions[row], values[row], log_prob[row]) for row in obs}

    @torch.no_grad()
    def predict(self, obs: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        """Deterministic actions (SB3's: the most likely action, or the mean) of the seeds in ``obs`` (row ->
        ``[N_row, D]``, each its own N: padded with zeros, as the other rows)."""
        first, n = next(iter(obs.values())), max(rows_obs.shape[0] for rows_obs in obs.values())
        batch = torch.zeros((self.policy.k, n, *first.shape[1:]), dtype=torch.float32, device=first.device)
        for row, rows_obs in obs.items():
            batch[row, : rows_obs.shape[0]] = rows_obs
        out, _ = self.policy.heads(batch, values=False)
        actions = out.argmax(-1) if self.policy.discrete else out
        return {row: actions[row, : rows_obs.shape[0]] for row, rows_obs in obs.items()}

    def train(self, rows: list[int]) -> dict[int, Any]:
        """SB3's ``PPO.train`` for the seeds ``rows`` at once; the others' parameters and Adam state untouched."""
        k = self.policy.k
        active = torch.zeros(k, dtype=torch.bool)
        active[rows] = True
        lr = np.zeros(k)
        clip, clip_vf = torch.zeros(k, 1), torch.zeros(k, 1)
        for row in rows:  # each seed's schedules at its own progress
            model, progress = self.models[row], self.models[row]._current_progress_remaining
            lr[row] = model.lr_schedule(progress)
            clip[row] = model.clip_range(progress)  # type: ignore[operator]
            if model.clip_range_vf is not None:
                clip_vf[row] = model.clip_range_vf(progress)  # type: ignore[operator]
        return self.update(rows, active, lr, clip, clip_vf)

    def update(
        self, rows: list[int], active: torch.Tensor, lr: np.ndarray, clip: torch.Tensor, clip_vf: torch.Tensor
    ) -> dict[int, Any]:
        """The epochs and minibatches of one update (:meth:`train`): ``active [K]``, ``lr [K]``, ``clip [K, 1]``."""
        k, first = self.policy.k, self.models[rows[0]]
        data = self.rollouts(rows)
        size = data["advantages"].shape[1]
        stats = Statistics(k)
        training = active.clone()  # rows still training (target_kl stops a row for the rest of this update)
        everyone = bool(active.all()) and first.target_kl is None
        loss = torch.zeros(k)  # each seed's last minibatch loss: SB3 logs the one at which target_kl stopped it
        for _ in range(first.n_epochs):
            stats.start_epoch(training)
            order = torch.from_numpy(np.stack([self.orders[r].permutation(size) if active[r] else np.arange(size)
                                               for r in range(k)]))  # fmt: skip
            shuffled = {key: value[torch.arange(k).unsqueeze(1), order] for key, value in data.items()}
            for start in range(0, size, first.batch_size):
                batch = {key: value[:, start : start + first.batch_size] for key, value in shuffled.items()}
                minibatch_loss, stepping, grad = self.minibatch(batch, first, clip, clip_vf, training, stats)
                loss = torch.where(training, minibatch_loss, loss)  # a seed stopped earlier keeps its own
                norms = grad.norm(dim=1)  # each seed's clip_grad_norm_
                grad.mul_(torch.clamp(first.max_grad_norm / (norms + 1e-6), max=1.0).unsqueeze(1))
                self.adam.step(grad, lr, None if everyone else stepping)
                training = stepping
            if not bool(training.any()):
                break
        return self.finish(rows, stats, loss, clip, clip_vf)

    def minibatch(
        self,
        batch: dict[str, torch.Tensor],
        first: SideBySidePPO,
        clip: torch.Tensor,
        clip_vf: torch.Tensor,
        training: torch.Tensor,
        stats: Statistics,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One minibatch ``[K, B, ...]`` of every seed, by :class:`NumpyLoss`.

        :return: each seed's loss ``[K]``, which seeds take this step ``[K]`` (those training, less those whose
            KL passed ``1.5 * target_kl`` now, as SB3 breaks before the step), and the gradient ``[K, P]``
        """
        coefs = (float(first.ent_coef), float(first.vf_coef), bool(first.normalize_advantage), first.target_kl)
        loss, stepping, numbers = self.numpy_loss.minibatch(
            {key: value.numpy() for key, value in batch.items()},
            coefs,
            clip.numpy(),
            None if first.clip_range_vf is None else clip_vf.numpy(),
            training.numpy(),
        )
        stats.add(training, torch.from_numpy(numbers))
        return torch.from_numpy(loss), torch.from_numpy(stepping), self.policy.grad

    def rollouts(self, rows: list[int]) -> dict[str, torch.Tensor]:
        """The seeds' rollout buffers as SB3's ``RolloutBuffer.get`` flattens them, stacked: ``[K, T, ...]``
        (zeros for a seed not in ``rows``)."""
        keys = ("observations", "actions", "values", "log_probs", "advantages", "returns")
        names = ("observations", "actions", "old_values", "old_log_prob", "advantages", "returns")
        template = {key: RolloutBuffer.swap_and_flatten(getattr(self.models[rows[0]].rollout_buffer, key))
                    for key in keys}  # fmt: skip
        stacked = {}
        for key, name in zip(keys, names, strict=True):
            per_row = [
                RolloutBuffer.swap_and_flatten(getattr(self.models[row].rollout_buffer, key))
                if row in rows
                else np.zeros_like(template[key])
                for row in range(self.policy.k)
            ]
            value = torch.from_numpy(np.stack(per_row)).to(self.policy.flat.device)
            if name in ("old_values", "old_log_prob", "advantages", "returns") or (
                name == "actions" and self.policy.discrete
            ):
                value = value.reshape(value.shape[0], value.shape[1])
            stacked[name] = value
        return stacked

    def finish(
        self, rows: list[int], stats: Statistics, loss: torch.Tensor, clip: torch.Tensor, clip_vf: torch.Tensor
    ) -> dict[int, Any]:
        """After an update: each seed's SB3 policy and optimizer state set to its row (what ``model.save``, the
        evaluations and checkpoints read) and its ``train/`` statistics; a seed whose parameters are no longer
        finite gets an error (its run fails, the others go on)."""
        results: dict[int, Any] = {}
        flat = self.policy.flat.detach()
        finite = torch.isfinite(flat).all(dim=1)
        for row in rows:
            model = self.models[row]
            model._n_updates += int(stats.epochs[row])
            if not bool(finite[row]):
                results[row] = FloatingPointError(
                    f"non-finite policy parameters after the update at {model.num_timesteps} timesteps"
                )
                continue
            self.write_back(row)
            record = stats.means(row)
            record.update(loss=float(loss[row]), n_updates=model._n_updates, clip_range=float(clip[row]))
            if model.clip_range_vf is not None:
                record["clip_range_vf"] = float(clip_vf[row])
            results[row] = record
        return results

    @torch.no_grad()
    def write_back(self, row: int) -> None:
        """Seed ``row``'s parameters and Adam state into its SB3 policy and optimizer."""
        model, layout = self.models[row], self.policy.layout
        named = dict(model.policy.named_parameters())
        moments = layout.unflatten(self.adam.exp_avg[row]), layout.unflatten(self.adam.exp_avg_sq[row])
        step = torch.tensor(float(self.adam.steps[row]))
        for name, value in layout.unflatten(self.policy.flat.detach()[row]).items():
            named[name].copy_(value)
            model.policy.optimizer.state[named[name]] = {
                "step": step.clone(),
                "exp_avg": moments[0][name].clone(),
                "exp_avg_sq": moments[1][name].clone(),
            }


class Statistics:
    """SB3's ``train/`` statistics of an update, per seed: means over the minibatches each seed trained on
    (``approx_kl``: over its last epoch's), kept as tensors until the end (no sync per minibatch)."""

    def __init__(self, k: int) -> None:
        self.sums = torch.zeros(5, k)  # policy, value, entropy losses, clip fraction, approx_kl (this epoch's)
        self.counts = torch.zeros(2, k)  # minibatches trained on: all, this epoch's
        self.epochs = torch.zeros(k, dtype=torch.int64)

    def start_epoch(self, training: torch.Tensor) -> None:
        self.sums[4, training] = 0
        self.counts[1, training] = 0
        self.epochs += training.long()

    def add(self, training: torch.Tensor, values: torch.Tensor) -> None:
        """``values [5, K]``: the minibatch's policy, value and entropy losses, clip fraction and KL."""
        weight = training.float()
        self.sums.add_(values.to(self.sums) * weight)
        self.counts.add_(weight)

    def means(self, row: int) -> dict[str, float]:
        count = float(self.counts[0, row])
        names = ("policy_gradient_loss", "value_loss", "entropy_loss", "clip_fraction")
        record = {name: float(self.sums[i, row]) / count for i, name in enumerate(names)}
        record["approx_kl"] = float(self.sums[4, row]) / max(float(self.counts[1, row]), 1.0)
        return record


# ---------------------------------------------------------------------------------------------------------------
# the seeds' stacks, side by side
