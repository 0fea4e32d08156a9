"""SB3's PPO and A2C losses and their gradients for K seeds at once, written out in NumPy (:class:`NumpyLoss`), and
the optimizers SB3 steps with, for K parameter rows: torch's Adam (:class:`StackedAdam`), torch's RMSprop and SB3's
``RMSpropTFLike`` (:class:`StackedRMSprop`): the numerics of a batched update, no SB3 model in them. The same losses
differentiated by torch's autograd are the tests' oracle (``tests/unit/test_side_by_side.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from torch import nn

from lander.algorithms.batched.stacked import Layer, StackedPolicy, affine

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
    """SB3's PPO loss (:meth:`minibatch`) and A2C loss (:meth:`a2c`) for all K seeds and their gradients, written
    out by hand in NumPy: the CPU path of the update.

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
        self.grid = policy.grid  # each sample's own action's indices (StackedPolicy.grid)

        def views(name: str) -> tuple[np.ndarray, np.ndarray]:
            """The parameter's NumPy view (the policy's own, :attr:`StackedPolicy.arrays`) and its gradient's."""
            param, gradient = policy.arrays[name], policy.view(grad, name)
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
        # both nets' hidden layers as twins (StackedPolicy.twins), their gradients' views alike: where there are
        # twins, a layer of the forward and of the backward is one NumPy call for both nets
        self.twin: list[NumpyLinear] | None = None
        if policy.twin is not None and (gradients := policy.twins(grad)) is not None:
            self.twin = [NumpyLinear(weight, bias, grad_weight, grad_bias, activation)
                         for (weight, bias, activation), (grad_weight, grad_bias, _) in zip(policy.twin, gradients,
                                                                                             strict=True)]  # fmt: skip
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
        """The gradient ``grad [..., K, B, out]`` of the last layer's output back through ``layers`` (``kept``: what
        :meth:`forward` returned) into each layer's gradient views."""
        for index in range(len(layers) - 1, -1, -1):
            layer, x, y = layers[index], kept[index], kept[index + 1]
            if layer.activation == "tanh":  # tanh' = 1 - tanh^2
                slope = y * y
                np.subtract(1.0, slope, out=slope)
                grad = grad * slope
            elif layer.activation == "relu":
                grad = grad * (y > 0)
            np.matmul(np.swapaxes(grad, -1, -2), x, out=layer.grad_weight)
            np.sum(grad, axis=-2, out=layer.grad_bias)
            if index:
                grad = np.matmul(grad, layer.weight)

    def forward_nets(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[list[np.ndarray]]]:
        """``x [K, B, in]`` through the policy's and the value's nets: the heads' outputs (logits or means ``[K, B,
        A]``; values ``[K, B, 1]``) and what :meth:`backward_nets` needs."""
        if self.twin is None:
            pi, vf = self.forward(x, self.pi), self.forward(x, self.vf)
            return pi[-1], vf[-1], [pi, vf]
        hidden = self.forward(x, self.twin)  # [x, then each layer's [2, K, B, out]]
        heads = [[hidden[-1][index]] for index in (0, 1)]
        for kept, head in zip(heads, (self.pi[-1], self.vf[-1]), strict=True):
            kept.append(affine(kept[0], head.weight, head.bias, None))
        return heads[0][-1], heads[1][-1], [hidden, *heads]

    def backward_nets(self, grad_pi: np.ndarray, grad_vf: np.ndarray, kept: list[list[np.ndarray]]) -> None:
        """The gradients of the heads' outputs (``[K, B, A]``, ``[K, B, 1]``) back through both nets (``kept``: what
        :meth:`forward_nets` returned) into their gradient views."""
        if self.twin is None:
            self.backward(grad_pi, self.pi, kept[0])
            self.backward(grad_vf, self.vf, kept[1])
            return
        hidden, *heads = kept
        grad = np.empty(hidden[-1].shape, dtype=np.float32)  # of both nets' last hidden layer
        for index, (grad_out, head) in enumerate(((grad_pi, self.pi[-1]), (grad_vf, self.vf[-1]))):
            np.matmul(np.swapaxes(grad_out, -1, -2), heads[index][0], out=head.grad_weight)
            np.sum(grad_out, axis=-2, out=head.grad_bias)
            np.matmul(grad_out, head.weight, out=grad[index])
        self.backward(grad, self.twin, hidden)

    def distribution(self, out: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """The log-probabilities of ``actions`` and the entropies, each ``[K, B]``, of the distributions the heads
        ``out`` give (logits ``[K, B, A]`` of a Categorical, or means of a diagonal Gaussian with the state-independent
        ``log_std``), and what :meth:`distribution_backward` needs."""
        if self.discrete:
            shifted = out - out.max(-1, keepdims=True)
            probs = np.exp(shifted)
            total = probs.sum(-1, keepdims=True)
            log_p = shifted - np.log(total)
            probs /= total
            taken = (*self.grid(actions.shape[1]), actions.reshape(actions.shape[:2]).astype(np.int64))
            entropy = -(probs * log_p).sum(-1)
            kept = {"probs": probs, "log_p": log_p, "taken": taken, "entropy": entropy}
            return log_p[taken], entropy, kept
        assert self.log_std is not None
        log_std = self.log_std[:, None, :]
        inverse_var = np.exp(-2.0 * log_std)
        diff = actions - out
        log_prob = (-(diff * diff) * (0.5 * inverse_var) - log_std - np.float32(0.5 * np.log(2 * np.pi))).sum(-1)
        entropy = np.broadcast_to((np.float32(0.5 + 0.5 * np.log(2 * np.pi)) + log_std).sum(-1), log_prob.shape)
        return log_prob, entropy, {"diff": diff, "inverse_var": inverse_var}

    def distribution_backward(
        self, kept: dict[str, Any], grad_log_prob: np.ndarray, grad_entropy: np.ndarray
    ) -> np.ndarray:
        """The gradient of the heads' output ``[K, B, A]`` from those of the log-probabilities ``[K, B]`` and of
        each entropy term ``[K, 1]`` (:meth:`distribution`'s ``kept``); a Gaussian's ``log_std`` gradient goes
        into its view."""
        if self.discrete:
            # d log p[a] / d out = onehot(a) - p;  d entropy / d out = -p (log p + entropy)
            probs, log_p, taken = kept["probs"], kept["log_p"], kept["taken"]
            grad_out = -probs * (
                grad_log_prob[..., None] + grad_entropy[..., None] * (log_p + kept["entropy"][..., None])
            )
            grad_out[taken] += grad_log_prob  # each (seed, sample) once
            return cast(np.ndarray, grad_out)
        assert self.grad_log_std is not None
        scaled = kept["diff"] * kept["inverse_var"]  # d log_prob / d mean
        # d log_prob / d log_std = diff^2 / var - 1;  d entropy / d log_std = 1 for each of the B terms
        np.einsum("kb,kba->ka", grad_log_prob, kept["diff"] * scaled - 1, out=self.grad_log_std)
        self.grad_log_std += grad_entropy * grad_log_prob.shape[1]
        return cast(np.ndarray, grad_log_prob[..., None] * scaled)

    def evaluate(
        self, batch: dict[str, np.ndarray], normalize: bool
    ) -> tuple[list[list[np.ndarray]], np.ndarray, np.ndarray, np.ndarray, dict[str, Any], np.ndarray]:
        """The forward of a batch ``[K, B, ...]`` for a loss: what the nets kept (:meth:`forward_nets`), the values
        ``[K, B]``, the log-probabilities of its actions and the entropies ``[K, B]``, what
        :meth:`distribution_backward` needs, and the advantages ``[K, B]``, normalised over each seed's batch if
        ``normalize`` (torch's ``std``: ddof 1)."""
        obs = batch["observations"]
        features = obs.reshape(self.k, obs.shape[1], -1).astype(np.float32, copy=False)
        out, values, nets = self.forward_nets(features)
        log_prob, entropy, kept = self.distribution(out, batch["actions"])
        advantages = standardized(batch["advantages"]) if normalize else batch["advantages"]
        return nets, values[..., 0], log_prob, entropy, kept, advantages

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
        size = batch["advantages"].shape[1]
        nets, values, log_prob, entropy, kept, advantages = self.evaluate(batch, normalize and size > 1)
        # the losses (SB3's PPO.train)
        log_ratio = log_prob - batch["old_log_prob"]
        ratio = np.exp(log_ratio)
        surrogate, clipped_ratio = advantages * ratio, np.minimum(np.maximum(ratio, 1 - clip), 1 + clip)
        clipped_surrogate = advantages * clipped_ratio
        policy_loss = -row_means(np.minimum(surrogate, clipped_surrogate))
        predicted = values
        if clip_vf is not None:
            old = batch["old_values"]
            predicted = old + np.minimum(np.maximum(values - old, -clip_vf), clip_vf)
        value_error = predicted - batch["returns"]
        value_loss = row_means(value_error * value_error)
        entropy_loss = -row_means(entropy)
        loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss
        kl = row_means((ratio - 1) - log_ratio)
        stepping = training if target_kl is None else training & ~(kl > 1.5 * target_kl)
        stats = np.empty((5, self.k), dtype=np.float32)  # as Statistics sums them: float32
        stats[0], stats[1], stats[2], stats[4] = policy_loss, value_loss, entropy_loss, kl
        stats[3] = row_means(np.abs(ratio - 1) > clip)
        # the gradient of sum(loss of the seeds stepping)
        weight = (stepping / size).astype(np.float32)[:, None]  # d loss / d (each term of a mean)
        inside = (ratio >= 1 - clip) & (ratio <= 1 + clip)  # clamp passes the gradient; min takes the smaller
        grad_log_prob = -weight * advantages * (inside | (surrogate < clipped_surrogate)) * ratio
        grad_values = (2 * vf_coef) * weight * value_error
        if clip_vf is not None:
            change = values - batch["old_values"]
            grad_values *= (change >= -clip_vf) & (change <= clip_vf)
        grad_out = self.distribution_backward(kept, grad_log_prob, -ent_coef * weight)
        self.backward_nets(
            grad_out.astype(np.float32, copy=False), grad_values[..., None].astype(np.float32, copy=False), nets
        )
        return loss, stepping, stats

    def a2c(self, batch: dict[str, np.ndarray], coefs: tuple[float, float, bool], training: np.ndarray) -> np.ndarray:
        """SB3's ``A2C.train`` loss of the whole rollout of every seed, and the gradient of the seeds ``training``
        into the policy's gradient buffer (the others' rows: zeros).

        :param batch: ``[K, T, ...]`` arrays: observations, actions, advantages, returns
        :param coefs: ``(ent_coef, vf_coef, normalize_advantage)``
        :param training: ``[K]`` bool, the seeds that take this step
        :return: the statistics ``[3, K]``: policy, value and entropy losses (A2C's ``train/loss`` is made of them,
            :class:`lander.training.callbacks.A2CLoss`)
        """
        ent_coef, vf_coef, normalize = coefs
        size = batch["advantages"].shape[1]
        nets, values, log_prob, entropy, kept, advantages = self.evaluate(batch, normalize)
        # the losses (SB3's A2C.train)
        policy_loss = -row_means(advantages * log_prob)
        value_error = values - batch["returns"]
        value_loss = row_means(value_error * value_error)
        entropy_loss = -row_means(entropy)
        # the gradient of sum(policy_loss + ent_coef * entropy_loss + vf_coef * value_loss of the seeds training)
        weight = (training / size).astype(np.float32)[:, None]  # d loss / d (each term of a mean)
        grad_out = self.distribution_backward(kept, -weight * advantages, -ent_coef * weight)
        grad_values = (2 * vf_coef) * weight * value_error
        self.backward_nets(
            grad_out.astype(np.float32, copy=False), grad_values[..., None].astype(np.float32, copy=False), nets
        )
        return np.stack([policy_loss, value_loss, entropy_loss])


def row_means(x: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """``x.mean(1)`` of ``x [K, B]`` (``[K]``, or ``[K, 1]`` with ``keepdims``) by the operations NumPy's ``mean``
    makes (a sum, in float64 for booleans, then a division by the count into it), without its checks: the same
    numbers, a few microseconds less each."""
    total: np.ndarray = np.add.reduce(x, axis=1, dtype=np.float64 if x.dtype == np.bool_ else None)
    np.true_divide(total, np.intp(x.shape[1]), out=total, casting="unsafe")
    return total[:, None] if keepdims else total


def standardized(x: np.ndarray) -> np.ndarray:
    """``(x - x.mean(1)) / (x.std(1, ddof=1) + 1e-8)`` for ``x [K, B]`` float32 (SB3's advantage normalisation; torch's
    ``std`` has ddof 1), by the operations NumPy's ``mean`` and ``std`` make, with the mean computed once: the same
    numbers, without the methods' checks (9 us of a minibatch's few hundred)."""
    deviation: np.ndarray = np.subtract(x, row_means(x, keepdims=True))
    variance = np.add.reduce(np.square(deviation), axis=1, keepdims=True)
    np.true_divide(variance, np.maximum(np.intp(x.shape[1]) - 1, 0), out=variance, casting="unsafe")
    np.sqrt(variance, out=variance)
    variance += np.float32(1e-8)
    np.divide(deviation, variance, out=deviation)
    return deviation


def clip_grad_norms(grad: torch.Tensor, max_norm: float) -> np.ndarray:
    """Each seed's ``torch.nn.utils.clip_grad_norm_``, in place on ``grad [K, P]``: the rows' norms before clipping
    ``[K]``. The norm is torch's (its reduction's rounding); the scale ``max_norm / (norm + 1e-6)``, at most 1, is
    NumPy's on the same float32 numbers, as torch computes it (``__rdiv__``: the reciprocal, times ``max_norm``)."""
    norms: np.ndarray = torch.linalg.vector_norm(grad, dim=1).numpy()
    scale = np.reciprocal(norms + np.float32(1e-6))
    scale *= np.float32(max_norm)
    np.minimum(scale, np.float32(1.0), out=scale)
    gradient = grad.numpy()
    gradient *= scale[:, None]
    return norms


class StackedAdam:
    """torch's Adam (no weight decay, no AMSGrad) for K parameter rows at once, each row with its own step count
    and learning rate; a row not ``active`` is left exactly as it was.

    :param flat: ``[K, P]`` parameters
    :param betas: Adam's betas
    :param eps: Adam's epsilon (SB3's PPO: 1e-5)
    """

    def __init__(self, flat: torch.Tensor, betas: tuple[float, float], eps: float) -> None:
        self.betas, self.eps = betas, eps
        self.exp_avg = torch.zeros_like(flat, requires_grad=False)
        self.exp_avg_sq = torch.zeros_like(flat, requires_grad=False)
        self.moments = {"exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq}  # torch's state names: [K, P]
        self.steps = np.zeros(flat.shape[0], dtype=np.int64)
        # NumPy views of the same memory, and buffers reused each step
        self.arrays = flat.detach().numpy(), self.exp_avg.numpy(), self.exp_avg_sq.numpy()
        self.root = torch.empty_like(flat)  # torch's square root (not NumPy's: they round differently)
        self.denom, self.update = self.root.numpy(), np.empty_like(self.arrays[0])

    def step(self, grad: torch.Tensor, lr: np.ndarray, active: np.ndarray | None) -> None:
        """One update of every active row: ``grad [K, P]``, ``lr [K]``, ``active [K]`` bool (None: all).

        torch's Adam: its moments by torch's ``lerp_`` and ``addcmul_`` (fused multiply-adds NumPy cannot repeat) and
        the square root by torch's (which rounds otherwise than NumPy's in about a sixth of the elements), the rest
        by NumPy on the same float32 numbers, operation for operation (a few microseconds less each than a torch
        call)."""
        beta1, beta2 = self.betas
        flat, exp_avg, exp_avg_sq = self.arrays
        self.steps += 1 if active is None else active
        steps = np.maximum(self.steps, 1)
        step_size = (lr / (1 - beta1**steps)).astype(np.float32)[:, None]  # as torch.as_tensor rounds them
        bias2_sqrt = np.sqrt(1 - beta2**steps).astype(np.float32)[:, None]
        kept = None if active is None else (exp_avg.copy(), exp_avg_sq.copy())
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        torch.sqrt(self.exp_avg_sq, out=self.root)  # self.denom: its NumPy view
        self.denom /= bias2_sqrt
        self.denom += np.float32(self.eps)  # torch adds a Python number to float32 in float32
        np.divide(exp_avg, self.denom, out=self.update)
        self.update *= step_size
        if active is not None and kept is not None:  # the rows not active keep their parameters and moments
            idle = ~active
            exp_avg[idle], exp_avg_sq[idle] = kept[0][idle], kept[1][idle]
            self.update[idle] = 0.0
        flat -= self.update


class StackedRMSprop:
    """torch's RMSprop, or SB3's ``RMSpropTFLike`` (``tf_like``: the square average starts at 1 and epsilon goes
    inside the square root, as TensorFlow's), without momentum, centering or weight decay, for K parameter rows at
    once, each row with its own step count and learning rate; a row not ``active`` is left exactly as it was.

    :param flat: ``[K, P]`` parameters
    :param alpha: the square average's smoothing constant (SB3's A2C: 0.99)
    :param eps: epsilon (SB3's A2C: ``rms_prop_eps``, 1e-5)
    :param tf_like: ``RMSpropTFLike``'s semantics, not torch's
    """

    def __init__(self, flat: torch.Tensor, alpha: float, eps: float, tf_like: bool) -> None:
        self.alpha, self.eps, self.tf_like = alpha, eps, tf_like
        self.square_avg = torch.ones_like(flat) if tf_like else torch.zeros_like(flat)
        self.moments = {"square_avg": self.square_avg}  # the optimizers' state name: [K, P]
        self.steps = np.zeros(flat.shape[0], dtype=np.int64)
        self.arrays = flat.detach().numpy(), self.square_avg.numpy()  # NumPy views of the same memory
        self.root = torch.empty_like(flat)  # torch's square root (not NumPy's: they round differently), reused
        self.avg, self.update = self.root.numpy(), np.empty_like(self.arrays[0])

    def step(self, grad: torch.Tensor, lr: np.ndarray, active: np.ndarray | None) -> None:
        """One update of every active row: ``grad [K, P]``, ``lr [K]``, ``active [K]`` bool (None: all). The square
        average by torch's ``addcmul_`` (a fused multiply-add) and the square root by torch's, the rest by NumPy on
        the same float32 numbers, as :class:`StackedAdam`."""
        flat, square_avg = self.arrays
        self.steps += 1 if active is None else active
        kept = None if active is None else square_avg.copy()
        self.square_avg.mul_(self.alpha).addcmul_(grad, grad, value=1 - self.alpha)
        if self.tf_like:
            np.add(square_avg, np.float32(self.eps), out=self.avg)
            self.root.sqrt_()  # self.avg: its NumPy view
        else:
            torch.sqrt(self.square_avg, out=self.root)
            self.avg += np.float32(self.eps)
        np.divide(grad.numpy(), self.avg, out=self.update)
        self.update *= lr.astype(np.float32)[:, None]
        if active is not None and kept is not None:
            idle = ~active
            square_avg[idle] = kept[idle]
            self.update[idle] = 0.0
        flat -= self.update


def stacked_optimizer(optimizer: torch.optim.Optimizer, flat: torch.Tensor) -> StackedAdam | StackedRMSprop:
    """The K-row optimizer that steps as the seed's SB3 ``optimizer`` does: torch's Adam (no weight decay, no
    AMSGrad), torch's RMSprop or SB3's ``RMSpropTFLike`` (no momentum, centering or weight decay); else
    ``ValueError`` naming what is not implemented."""
    group = optimizer.param_groups[0]
    plain = not group["weight_decay"] and not group.get("maximize", False)
    if type(optimizer) is torch.optim.Adam and plain and not group["amsgrad"]:
        return StackedAdam(flat, group["betas"], group["eps"])
    rmsprop = type(optimizer) in (torch.optim.RMSprop, RMSpropTFLike)
    if rmsprop and plain and not group["momentum"] and not group["centered"]:
        return StackedRMSprop(flat, group["alpha"], group["eps"], tf_like=type(optimizer) is RMSpropTFLike)
    settings = {key: value for key, value in group.items() if key != "params"}
    raise ValueError(
        "the batched engine implements Adam without weight decay or AMSGrad, and RMSprop (torch's or SB3's "
        f"RMSpropTFLike) without momentum, centering or weight decay; not {type(optimizer).__name__} {settings}"
    )
