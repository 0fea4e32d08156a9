"""K copies of one SB3 actor-critic MLP as one tensor ``flat [K, P]`` (:class:`StackedPolicy`), each layer of all K
one batched matrix product (:func:`affine`): the rollouts' actions and the evaluations of seeds trained side by
side."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from gymnasium import spaces
from numpy.lib.array_utils import byte_bounds
from numpy.lib.stride_tricks import as_strided
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor
from torch import nn

ELEMENTWISE = (nn.Tanh, nn.ReLU, nn.ELU, nn.LeakyReLU, nn.GELU, nn.SiLU, nn.Sigmoid, nn.Softplus, nn.Identity)
ACTIVATION_NAMES = ("torch.nn.Tanh", "torch.nn.ReLU", "torch.nn.Identity")  # what NumpyLoss differentiates


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
    """One layer of all K networks by NumPy: ``x [..., K, B, in]``, ``weight [..., K, out, in]``, ``bias [..., K,
    out]`` -> ``activation(x @ weight^T + bias)`` ``[..., K, B, out]`` (``"tanh"``, ``"relu"`` or None; the leading
    dimensions: the twin networks of :attr:`StackedPolicy.twin`). The rollouts' actions, the evaluations and
    :class:`NumpyLoss` all use it, so they round alike; NumPy's ``tanh`` is several times faster than torch's CPU
    kernel. NumPy's ``matmul`` multiplies each ``[B, in]`` by its ``[in, out]`` alone (one BLAS call each), so a
    network's numbers are the same whatever else is in the batch."""
    y: np.ndarray = np.matmul(x, np.swapaxes(weight, -1, -2))
    y += bias[..., None, :]
    if activation == "tanh":
        np.tanh(y, out=y)
    elif activation == "relu":
        np.maximum(y, 0.0, out=y)
    return y


def twin(owner: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray | None:
    """``[2, *shape]``: one view of two views of ``owner``'s memory alike in shape and strides (``[0]`` is
    ``first``, ``[1]`` is ``second``), or None where they are not alike."""
    if first.shape != second.shape or first.strides != second.strides or first.dtype != second.dtype:
        return None
    low, high = byte_bounds(owner)
    if not all(low <= byte_bounds(view)[0] and byte_bounds(view)[1] <= high for view in (first, second)):
        return None
    gap = second.__array_interface__["data"][0] - first.__array_interface__["data"][0]
    both: np.ndarray = as_strided(first, (2, *first.shape), (gap, *first.strides), writeable=True)
    assert both[1].__array_interface__ == second.__array_interface__
    return both


@dataclass
class Layer:
    """A step of an MLP of SB3's: the linear layer with parameter prefix ``linear`` (None: none), then the
    elementwise ``activation`` (None: none)."""

    linear: str | None
    activation: nn.Module | None = None
    weight: str = field(init=False)  # the linear layer's parameters' names
    bias: str = field(init=False)

    def __post_init__(self) -> None:
        self.weight, self.bias = f"{self.linear}.weight", f"{self.linear}.bias"


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
    """K copies of one SB3 ``ActorCriticPolicy`` (MLP) as one tensor ``flat [K, P]``: its parameters are views of
    ``flat`` (:attr:`params`; as NumPy arrays :attr:`arrays`, which the forward reads, on the CPU in float32), their
    gradient is ``grad`` in the same layout (:class:`lander.algorithms.batched.loss.NumpyLoss` writes it).

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
        # the same views as NumPy arrays, for the forward by NumPy (:func:`affine`) on CPU float32: made once, as
        # each conversion costs a microsecond or two and a rollout step's forward makes six layers
        on_cpu = self.flat.device.type == "cpu" and self.flat.dtype == torch.float32
        self.arrays = {name: param.detach().numpy() for name, param in self.params.items()} if on_cpu else {}
        self.pi = mlp_program(first.mlp_extractor.policy_net, "mlp_extractor.policy_net")
        self.vf = mlp_program(first.mlp_extractor.value_net, "mlp_extractor.value_net")
        self.action_net, self.value_net = [Layer("action_net")], [Layer("value_net")]
        # the policy's and the value's hidden layers as twins where the nets are alike (SB3's default): their
        # weights and biases [2, K, ...] views, so that one NumPy call computes a layer of both nets
        self.twin = self.twins(self.flat.numpy()) if on_cpu else None
        self.discrete = isinstance(first.action_space, spaces.Discrete)
        self.grids: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # batch size -> (grid)
        if not self.discrete and not isinstance(first.action_space, spaces.Box):
            raise ValueError(f"side-by-side training supports Discrete and Box actions, not {first.action_space}")

    def twins(self, owner: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, str | None]] | None:
        """The hidden layers of the policy's and the value's nets as twins: ``(weight [2, K, out, in], bias [2, K,
        out], activation)`` of each layer, views of ``owner`` (the parameters, or their gradient: ``[K, P]`` in the
        same layout), where both nets have the same layers, each linear, with Tanh or no activation after it; else
        None (each net computed alone, as the twins compute it)."""
        if not self.pi or len(self.pi) != len(self.vf):
            return None
        layers = []
        for first, second in zip(self.pi, self.vf, strict=True):
            kinds = {type(first.activation), type(second.activation)}
            if first.linear is None or second.linear is None or len(kinds) > 1 or not kinds <= {nn.Tanh, type(None)}:
                return None
            weight = twin(owner, self.view(owner, first.weight), self.view(owner, second.weight))
            bias = twin(owner, self.view(owner, first.bias), self.view(owner, second.bias))
            if weight is None or bias is None:
                return None
            layers.append((weight, bias, "tanh" if isinstance(first.activation, nn.Tanh) else None))
        return layers

    def view(self, owner: np.ndarray, name: str) -> np.ndarray:
        """``[K, *shape]``: parameter ``name``'s part of ``owner`` (``[K, P]`` in this layout: the parameters, or
        their gradient), a view."""
        start, end, shape = self.layout.slices[name]
        return owner[:, start:end].reshape(self.k, *shape)

    def param(self, name: str) -> torch.Tensor:
        """``[K, *shape]``: parameter ``name`` of every copy (a view of :attr:`flat`)."""
        return self.params[name]

    def heads(self, obs: np.ndarray, values: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """``obs [K, B, D]`` -> (logits or means ``[K, B, A]``, values ``[K, B]`` or None if not ``values``), by
        NumPy in float32 (the forward's parameters are :attr:`arrays`: on the CPU only)."""
        assert self.arrays, "the batched forward runs on the CPU in float32"
        x = obs.reshape(self.k, obs.shape[1], -1).astype(np.float32, copy=False)
        if values and self.twin:  # both nets' hidden layers at once
            hidden = x
            for weight, bias, activation in self.twin:
                hidden = affine(hidden, weight, bias, activation)
            return self._mlp(hidden[0], self.action_net), self._mlp(hidden[1], self.value_net)[..., 0]
        out = self._mlp(self._mlp(x, self.pi), self.action_net)
        if not values:
            return out, None
        return out, self._mlp(self._mlp(x, self.vf), self.value_net)[..., 0]

    def _mlp(self, x: np.ndarray, program: list[Layer]) -> np.ndarray:
        """``x [K, B, in]`` through ``program`` by :func:`affine` (Tanh in it; any other activation torch's)."""
        for layer in program:
            activation = layer.activation
            if layer.linear is not None:
                tanh = isinstance(activation, nn.Tanh)
                x = affine(x, self.arrays[layer.weight], self.arrays[layer.bias], "tanh" if tanh else None)
                activation = None if tanh else activation  # [K, B, out]
            if activation is not None:
                x = activation(torch.from_numpy(x)).numpy()
        return x

    def grid(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The indices ``[K, 1]`` and ``[1, N]`` that pick, with an index ``[K, N]``, each entry's own element of a
        ``[K, N, A]`` array (made once a size)."""
        if n not in self.grids:
            self.grids[n] = (np.arange(self.k)[:, None], np.arange(n)[None, :])
        return self.grids[n]

    def log_std(self) -> torch.Tensor:
        """``[K, 1, A]``: the state-independent log standard deviations (Box actions)."""
        return self.param("log_std").unsqueeze(1)

    def act(self, obs: np.ndarray, draws: list[Draws | None]) -> tuple[np.ndarray, ...]:
        """One rollout step of all K, each sampling from its own generator (``draws``): ``obs [K, N, D]`` ->
        actions (``[K, N]`` or ``[K, N, A]``), values ``[K, N]``, log-probabilities ``[K, N]``. A row whose draws
        are None is not acting (its seed evaluates, or waits for an update): it draws nothing, so that each seed's
        draws are its own whatever its neighbours do, and its outputs are meaningless. The draws, the
        log-softmax, its exponential and the Gaussian's terms are torch's (as SB3 rounds them), the rest NumPy's."""
        out, values = self.heads(obs)
        assert values is not None
        n = obs.shape[1]
        if self.discrete:
            log_p = torch.log_softmax(torch.from_numpy(out), dim=-1)
            uniform = np.stack([each.uniform(n) if each is not None else np.zeros(n, np.float32) for each in draws])
            # torch's cumsum of float32 adds in double; the action is the first whose cumulative mass passes u
            mass = np.cumsum(log_p.exp().numpy(), -1, dtype=np.float64).astype(np.float32)
            chosen = (mass < uniform[..., None] * mass[..., -1:]).sum(-1)
            np.minimum(chosen, out.shape[-1] - 1, out=chosen)
            rows, columns = self.grid(n)
            return chosen, values, log_p.numpy()[rows, columns, chosen]
        mean, log_std = torch.from_numpy(out), self.log_std()
        shape = out.shape[1:]
        noise = torch.stack([each.normal(shape) if each is not None else torch.zeros(shape) for each in draws])
        actions = mean + log_std.exp() * noise
        return actions.numpy(), values, gaussian_log_prob(actions, mean, log_std).numpy()


class Draws:
    """A seed's random draws for its rollout's actions, from its own generator. ``uniform(n)`` gives the numbers
    ``torch.rand(n, generator=generator)`` gives, handed out of a block drawn ahead (``BLOCK`` at a time): torch's
    CPU kernel of ``rand`` draws one number after another, so ``rand(m)`` then ``rand(n)`` are the numbers of
    ``rand(m + n)`` (``tests/unit/test_side_by_side.py`` checks it), and a step's draw is a slice instead of a
    torch call. ``normal(shape)`` is ``torch.randn``'s, drawn when asked (its kernel draws by 16 above 16 numbers,
    so a block would give others). A seed draws from one of the two: its actions are discrete or continuous.

    :param generator: the seed's generator
    """

    BLOCK = 4096

    def __init__(self, generator: torch.Generator) -> None:
        self.generator = generator
        self.block = np.empty(0, dtype=np.float32)
        self.at = 0  # the next number of the block to hand out

    def uniform(self, n: int) -> np.ndarray:
        """``[n]`` float32: what ``torch.rand(n, generator=self.generator)`` would give now."""
        if self.at + n > self.block.size:  # what is left of the block, then the next block
            ahead = torch.rand(max(self.BLOCK, n), generator=self.generator).numpy()
            self.block, self.at = np.concatenate([self.block[self.at :], ahead]), 0
        numbers = self.block[self.at : self.at + n]
        self.at += n
        return numbers

    def normal(self, shape: tuple[int, ...]) -> torch.Tensor:
        """``torch.randn(shape, generator=self.generator)``."""
        assert self.at == self.block.size, "a seed draws uniform or normal numbers, not both"
        return torch.randn(shape, generator=self.generator)


def gaussian_log_prob(actions: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log-density of a diagonal Gaussian, summed over the action dims: ``[K, B, A]`` -> ``[K, B]``."""
    var = torch.exp(2 * log_std)
    density: torch.Tensor = -((actions - mean) ** 2) / (2 * var) - log_std - 0.5 * np.log(2 * np.pi)
    return density.sum(-1)
