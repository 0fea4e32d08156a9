"""A seed's model on the batched engine (:class:`SideBySidePPO`, :class:`SideBySideA2C`: SB3's PPO and A2C) and
the seeds' shared work (:class:`SeedStack`): where SB3 asks its policy for the rollout's actions, or calls
``train()``, the seed hands the work to its process's lockstep (:func:`request`), and :class:`SeedStack` does it for
every waiting seed at once."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from greenlet import getcurrent
from gymnasium import spaces
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from torch import nn

from lander.algorithms.batched.loss import NumpyLoss, clip_grad_norms, stacked_optimizer
from lander.algorithms.batched.stacked import Draws, StackedPolicy

log = logging.getLogger(__name__)


class SideBySide(OnPolicyAlgorithm):
    """What an SB3 on-policy algorithm does differently on the batched engine: its rollout actions, deterministic
    predictions and updates are computed together with the other seeds of its process
    (:class:`lander.execution.lockstep.Lockstep`), or alone (a run resumed by itself, or ``batched_engine``). The
    rest is SB3's own; saved and loaded exactly as SB3's class (:class:`SideBySidePPO`, :class:`SideBySideA2C`)."""

    # every update ends with a check that the seed's parameters are finite (SeedStack.finish: a seed whose are
    # not fails with FloatingPointError), so lander's NonFiniteGuard leaves these models alone
    checks_finite_updates = True

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_alone", "_stack"]

    def get_parameters(self) -> dict[str, dict[str, Any]]:
        """SB3's (what ``save`` writes), with the optimizer's state the engine keeps written into it first."""
        stack = self.__dict__.get("_stack")
        if stack is None:
            return super().get_parameters()
        stack.write_optimizer_state(stack.models.index(self))
        parameters = super().get_parameters()
        # each tensor of its own, as SB3 saves them (the policy's parameters are views of the seed's mirror)
        policy = parameters["policy"]  # torch's state dict (its _metadata kept)
        for name, tensor in policy.items():
            policy[name] = tensor.clone()
        return parameters

    def collect_rollouts(self, env: Any, callback: Any, rollout_buffer: RolloutBuffer, n_rollout_steps: int) -> bool:
        """SB3's ``OnPolicyAlgorithm.collect_rollouts``, step for step, for an MLP on vector observations on the CPU
        (what the engine takes): the same buffer, callbacks (``update_locals`` with the same names: ``obs_tensor``,
        ``actions``, ``values``, ``log_probs``, ``clipped_actions``, ``new_obs``, ``rewards``, ``dones``, ``infos``),
        ``ep_info_buffer`` and timeout bootstrapping. The actions come from the batched policy (:func:`request`),
        without the module call, the device moves and the copies SB3's generic loop makes. SB3's train/eval mode
        switch is left out: an MLP's layers act alike in both, and the update is the engine's."""
        assert self._last_obs is not None and isinstance(self._last_obs, np.ndarray), "No previous observation"
        assert self._last_episode_starts is not None
        n_steps = 0
        rollout_buffer.reset()
        callback.on_rollout_start()
        box = self.action_space if isinstance(self.action_space, spaces.Box) else None
        discrete = isinstance(self.action_space, spaces.Discrete)
        new_obs, dones = self._last_obs, self._last_episode_starts
        while n_steps < n_rollout_steps:
            obs_tensor = torch.from_numpy(self._last_obs)  # SB3's obs_as_tensor on the CPU: the same memory
            actions, values, log_probs = self._act(obs_tensor.numpy())
            clipped_actions = np.clip(actions, box.low, box.high) if box is not None else actions
            new_obs, rewards, dones, infos = env.step(clipped_actions)
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
            n_steps += 1
            if discrete:
                actions = actions.reshape(-1, 1)
            self._bootstrap_timeouts(rewards, dones, infos)
            self._store(rollout_buffer, actions, rewards, values, log_probs)
            self._last_obs, self._last_episode_starts = new_obs, dones
        values = request(self, ("values", new_obs))  # SB3's critic, the seeds' one after another (SeedStack.do)
        returns_and_advantages(rollout_buffer, values.numpy().flatten(), dones)
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    def _bootstrap_timeouts(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """SB3's: an episode cut by its time limit gets ``gamma`` times the value of its last observation."""
        if True not in dones.tolist():  # most steps (a list's search: 0.2 us; np.flatnonzero's: 2)
            return
        for idx in np.flatnonzero(dones):
            if infos[idx].get("terminal_observation") is not None and infos[idx].get("TimeLimit.truncated", False):
                terminal_value = self._values(infos[idx]["terminal_observation"][None])[0]
                rewards[idx] += self.gamma * terminal_value

    @torch.no_grad()
    def _values(self, obs: np.ndarray) -> torch.Tensor:
        """SB3's ``policy.predict_values`` of ``obs [N, D]``: ``[N, 1]``, by the same torch operations on the same
        parameters without the modules' calls (18 us against 41 for 8 observations in a loop; the engine's policies are
        MLPs on vector observations, :class:`StackedPolicy`): ``preprocess_obs``'s ``float()``, the
        ``FlattenExtractor``'s flatten, each ``nn.Linear``'s ``F.linear``, ``nn.Tanh``'s ``torch.tanh``."""
        x = torch.from_numpy(obs).float().flatten(1)
        for module in (*self.policy.mlp_extractor.value_net, self.policy.value_net):
            if isinstance(module, nn.Linear):
                x = F.linear(x, module.weight, module.bias)
            else:
                x = torch.tanh(x) if isinstance(module, nn.Tanh) else module(x)
        return x

    def _store(
        self,
        buffer: RolloutBuffer,
        actions: np.ndarray,
        rewards: np.ndarray,
        values: torch.Tensor,
        log_probs: torch.Tensor,
    ) -> None:
        """``RolloutBuffer.add``'s writes of this step (the observations and episode starts: this step's, not yet
        moved on), without its copies of arrays that nothing else holds."""
        pos = buffer.pos
        buffer.observations[pos] = self._last_obs
        buffer.actions[pos] = actions.reshape((buffer.n_envs, buffer.action_dim))
        buffer.rewards[pos] = rewards
        buffer.episode_starts[pos] = self._last_episode_starts
        buffer.values[pos] = values.numpy().reshape(-1)
        buffer.log_probs[pos] = log_probs.numpy()
        buffer.pos += 1
        buffer.full = buffer.pos == buffer.buffer_size

    def _act(self, obs: np.ndarray) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
        """The rollout's actions for ``obs [N, D]`` (NumPy, as SB3's loop makes them), and the values ``[N, 1]`` and
        log-probabilities ``[N]`` as the tensors SB3's policy returns."""
        actions, values, log_prob = request(self, ("act", obs))
        return actions, torch.from_numpy(values[:, None]), torch.from_numpy(log_prob)

    def predict(
        self,
        observation: Any,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3's ``predict``; deterministic actions for a batch of observations (the evaluations, the video) by the
        batched forward (:meth:`SeedStack.predict`): in a lockstep with the other seeds', and in a run alone on the
        engine by this seed's own stack (made by its rollouts), so that a seed evaluates alike alone and side by
        side. A model only loaded (``lander.evaluate``) predicts by SB3's policy."""
        space = self.observation_space
        alone = self.__dict__.get("_alone")
        if not (
            deterministic
            and (in_lockstep() or (alone is not None and alone is self.__dict__.get("_stack")))
            and isinstance(observation, np.ndarray)
            and space is not None
            and observation.shape[1:] == space.shape
        ):
            return super().predict(observation, state, episode_start, deterministic)
        if self.policy.training:  # SB3 sets it on every call: a walk over every module, 34 us, per step
            self.policy.set_training_mode(False)
        actions = request(self, ("predict", observation)).reshape((-1, *(self.action_space.shape or ())))
        if isinstance(self.action_space, spaces.Box):
            actions = np.clip(actions, self.action_space.low, self.action_space.high)
        return actions, None

    def train(self) -> None:
        """SB3's ``train`` for this seed (PPO's or A2C's), computed with the other seeds (:meth:`SeedStack.train`);
        the same ``train/`` records."""
        self._update_learning_rate(self.policy.optimizer)  # (not set_training_mode: see collect_rollouts)
        stats = request(self, ("train", None))
        values, returns = self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten()
        for key, value in stats.items():
            self.logger.record(f"train/{key}", value, exclude="tensorboard" if key == "n_updates" else None)
        self.logger.record("train/explained_variance", explained_variance(values, returns))
        if hasattr(self.policy, "log_std"):
            self.logger.record("train/std", torch.exp(self.policy.log_std).mean().item())


def returns_and_advantages(buffer: RolloutBuffer, last_values: np.ndarray, dones: np.ndarray) -> None:
    """SB3's ``RolloutBuffer.compute_returns_and_advantage`` (GAE), the same float32 operations on each element in
    the same order, with the steps' deltas ``[T, N]`` computed at once instead of step by step (one pass of the
    recursion stays a loop): ``last_values [N]`` (the values after the last step), ``dones [N]``."""
    steps = buffer.buffer_size
    next_non_terminal = np.empty_like(buffer.episode_starts)
    np.subtract(1.0, buffer.episode_starts[1:], out=next_non_terminal[:-1])
    next_non_terminal[-1] = 1.0 - dones.astype(np.float32)
    next_values = np.empty_like(buffer.values)
    next_values[:-1], next_values[-1] = buffer.values[1:], last_values
    delta = buffer.rewards + buffer.gamma * next_values * next_non_terminal - buffer.values
    decay = buffer.gamma * buffer.gae_lambda * next_non_terminal
    last_gae_lam: Any = 0
    for step in reversed(range(steps)):
        last_gae_lam = delta[step] + decay[step] * last_gae_lam
        buffer.advantages[step] = last_gae_lam
    buffer.returns = buffer.advantages + buffer.values


def explained_variance(y_pred: np.ndarray, y_true: np.ndarray) -> float:
    """SB3's ``explained_variance`` (``1 - Var[y_true - y_pred] / Var[y_true]``, NaN where ``Var[y_true]`` is 0)
    with :func:`variance` for ``np.var``: ``y_pred [N]``, ``y_true [N]``."""
    var_y = variance(y_true)
    return np.nan if var_y == 0 else float(1 - variance(y_true - y_pred) / var_y)


def variance(a: np.ndarray) -> Any:
    """``np.var(a)`` of a float array ``a [N]`` by the calls ``np.var`` makes (the same sums, divisions and their
    types: a float32 array's variance is a float32 scalar), without its wrappers: 5 us against 12."""
    count = np.intp(a.size)
    mean = np.add.reduce(a, axis=None, keepdims=True)
    np.true_divide(mean, count, out=mean, casting="unsafe")
    deviations = np.subtract(a, mean)
    np.square(deviations, out=deviations)
    total = np.add.reduce(deviations, axis=None)
    return total.dtype.type(total / count)


class SideBySidePPO(SideBySide, PPO):
    """SB3's PPO on the batched engine (:class:`SideBySide`); saved and loaded exactly as SB3's ``PPO``."""


class SideBySideA2C(SideBySide, A2C):
    """SB3's A2C on the batched engine (:class:`SideBySide`): one update a rollout, stepped by its RMSprop (torch's,
    or ``RMSpropTFLike``) or Adam; saved and loaded exactly as SB3's ``A2C``."""


def in_lockstep() -> bool:
    """Whether this code runs in a job of a lockstep (:class:`lander.execution.lockstep.Lockstep` marks its jobs'
    greenlets with ``lockstep``), not alone and not in the lockstep's own work: its parent greenlet then does the
    batched work (:func:`request`)."""
    return getattr(getcurrent(), "lockstep", None) is not None and getcurrent().parent is not None


def request(model: SideBySide, work: tuple[str, Any]) -> Any:
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
    """The K seeds' policies and optimizers as one (:class:`StackedPolicy`; :class:`StackedAdam` or
    :class:`StackedRMSprop`), each seed's random streams, and the batched work: :meth:`act`, :meth:`predict`,
    :meth:`train`. The seeds are all PPO or all A2C, of one configuration (one sweep job's seeds).

    :param models: the seeds' models, as they start (new, or loaded from a checkpoint)
    """

    def __init__(self, models: list[SideBySide]) -> None:
        self.models = models
        self.a2c = isinstance(models[0], A2C)
        self.policy = StackedPolicy([m.policy for m in models])
        self.optimizer = stacked_optimizer(models[0].policy.optimizer, self.policy.flat)
        if not NumpyLoss.supports(self.policy):
            raise ValueError(
                "side-by-side training computes its update with NumPy on the CPU in float32, for Tanh, ReLU or "
                "Identity activations only (device=cpu, policy_kwargs.activation_fn)"
            )
        self.numpy_loss = NumpyLoss(self.policy)
        for model in models:
            model.__dict__["_stack"] = self  # its optimizer's state is here (SideBySide.get_parameters)
        layout = self.policy.layout
        # each seed's SB3 parameters in the layout's order, the same tensors all training (found once: a walk over
        # every module), their values moved into one tensor of the seed's own in the same layout (its mirror), so
        # that writing a seed's row back after an update is one copy, not one a parameter (A2C updates every 5 steps)
        self.params: list[list[torch.Tensor]] = []
        self.mirrors: list[torch.Tensor] = []
        for row, model in enumerate(models):
            named = dict(model.policy.named_parameters())
            self.params.append([named[name] for name in layout.slices])
            self.mirrors.append(self.policy.flat[row].detach().clone())  # the flat row was made of these values
            for param, view in zip(self.params[row], layout.unflatten(self.mirrors[row]).values(), strict=True):
                param.data = view
            state = model.policy.optimizer.state
            if all(param in state for param in self.params[row]):  # a loaded model's: it goes on from where it was
                for key, moment in self.optimizer.moments.items():
                    moment[row] = layout.flatten({n: state[p][key] for n, p in named.items()})
                self.optimizer.steps[row] = int(next(iter(state.values()))["step"])
        # each seed's random streams, seeded as lander seeds a run (a resumed one from seed + its step)
        starts = [int(m.seed or 0) + int(m.num_timesteps) for m in models]
        self.draws = [Draws(torch.Generator().manual_seed(start)) for start in starts]
        self.orders = [np.random.default_rng(start) for start in starts]

    def do(self, work: dict[int, tuple[str, Any]]) -> dict[int, Any]:
        """The waiting seeds' work (row -> ``("act", obs)``, ``("predict", obs)``, ``("values", obs)`` or
        ``("train", None)``), batched by kind: row -> its result, or the exception to raise in that seed.

        ``values`` (a rollout's last values, by SB3's critic: :meth:`SideBySide._values`) is computed seed after
        seed, each as it would be alone: after the first seed's, torch's code is still in the caches that the env
        steps between two of a seed's own calls empty (in a run, the median call of the second to the fourth
        seed costs 45 us, the first's 66)."""
        results: dict[int, Any] = {}
        acting = {row: obs for row, (kind, obs) in work.items() if kind == "act"}
        predicting = {row: obs for row, (kind, obs) in work.items() if kind == "predict"}
        training = [row for row, (kind, _) in work.items() if kind == "train"]
        if acting:
            results.update(self.act(acting))
        if predicting:
            results.update(self.predict(predicting))
        results.update({row: self.models[row]._values(obs) for row, (kind, obs) in work.items() if kind == "values"})
        if training:
            results.update(self.train(training))
        return results

    def act(self, obs: dict[int, np.ndarray]) -> dict[int, tuple[np.ndarray, ...]]:
        """Rollout actions, values and log-probabilities of the seeds in ``obs`` (row -> ``[N, D]``); the others'
        rows compute on zeros and draw nothing from their generators (:meth:`StackedPolicy.act`)."""
        if len(obs) == self.policy.k:  # every seed (the rule in a rollout)
            batch = np.stack([obs[row] for row in range(self.policy.k)])
        else:
            first = next(iter(obs.values()))
            batch = np.zeros((self.policy.k, *first.shape), dtype=np.float32)
            for row, rows_obs in obs.items():
                batch[row] = rows_obs
        draws = [each if row in obs else None for row, each in enumerate(self.draws)]  # the acting seeds' alone
        actions, values, log_prob = self.policy.act(batch, draws)
        return {row: (actions[row], values[row], log_prob[row]) for row in obs}

    def predict(self, obs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Deterministic actions (SB3's: the most likely action, or the mean) of the seeds in ``obs`` (row ->
        ``[N_row, D]``, each its own N: padded with zeros, as the other rows)."""
        first, n = next(iter(obs.values())), max(rows_obs.shape[0] for rows_obs in obs.values())
        batch = np.zeros((self.policy.k, n, *first.shape[1:]), dtype=np.float32)
        for row, rows_obs in obs.items():
            batch[row, : rows_obs.shape[0]] = rows_obs
        out, _ = self.policy.heads(batch, values=False)
        actions = out.argmax(-1) if self.policy.discrete else out
        return {row: actions[row, : rows_obs.shape[0]] for row, rows_obs in obs.items()}

    def train(self, rows: list[int]) -> dict[int, Any]:
        """SB3's ``PPO.train`` or ``A2C.train`` for the seeds ``rows`` at once; the others' parameters and optimizer
        state untouched."""
        k = self.policy.k
        active = np.zeros(k, dtype=bool)
        active[rows] = True
        lr = np.zeros(k)
        clip, clip_vf = np.zeros((k, 1), dtype=np.float32), np.zeros((k, 1), dtype=np.float32)  # as torch's
        for row in rows:  # each seed's schedules at its own progress
            model, progress = self.models[row], self.models[row]._current_progress_remaining
            lr[row] = model.lr_schedule(progress)
            if isinstance(model, PPO):
                clip[row] = model.clip_range(progress)  # type: ignore[operator]
                if model.clip_range_vf is not None:
                    clip_vf[row] = model.clip_range_vf(progress)  # type: ignore[operator]
        if self.a2c:
            return self.a2c_update(rows, active, lr)
        return self.update(rows, active, lr, clip, clip_vf)

    def a2c_update(self, rows: list[int], active: np.ndarray, lr: np.ndarray) -> dict[int, Any]:
        """A2C's one gradient step over the whole rollout (:meth:`train`): ``active [K]``, ``lr [K]``."""
        first = self.models[rows[0]]
        assert isinstance(first, A2C)
        coefs = (float(first.ent_coef), float(first.vf_coef), bool(first.normalize_advantage))
        numbers = self.numpy_loss.a2c(self.rollouts(rows), coefs, active)
        norms = clip_grad_norms(self.policy.grad, first.max_grad_norm)
        self.optimizer.step(self.policy.grad, lr, None if bool(active.all()) else active)
        records = {}
        for row in rows:
            policy, value, entropy = (float(x) for x in numbers[:, row])
            records[row] = {"policy_loss": policy, "value_loss": value, "entropy_loss": entropy}
            # train/loss as lander records it for SB3's A2C (lander.training.callbacks.A2CLoss), and grad_norm
            records[row] |= {"loss": policy + first.ent_coef * entropy + first.vf_coef * value}
            records[row] |= {"grad_norm": float(norms[row])}
        return self.finish(rows, records, dict.fromkeys(rows, 1))

    def update(
        self, rows: list[int], active: np.ndarray, lr: np.ndarray, clip: np.ndarray, clip_vf: np.ndarray
    ) -> dict[int, Any]:
        """The epochs and minibatches of one update (:meth:`train`): ``active [K]``, ``lr [K]``, ``clip [K, 1]``.

        The minibatches ``[K, B, ...]`` are NumPy views, their loss and gradient :class:`NumpyLoss`'s (a seed's KL
        past ``1.5 * target_kl`` stops it before the step, as SB3 breaks); the gradient's norm, its clipping and
        the optimizer's step are torch's, on the gradient buffer both share."""
        k, first = self.policy.k, self.models[rows[0]]
        assert isinstance(first, PPO)
        data = self.rollouts(rows)
        size = data["advantages"].shape[1]
        stats = Statistics(k)
        active_rows = active
        training = active_rows.copy()  # rows still training (target_kl stops a row for the rest of this update)
        everyone = bool(active_rows.all()) and first.target_kl is None
        loss = np.zeros(k, dtype=np.float32)  # each seed's last minibatch loss: SB3 logs the one target_kl stopped
        coefs = (float(first.ent_coef), float(first.vf_coef), bool(first.normalize_advantage), first.target_kl)
        clips = clip, None if first.clip_range_vf is None else clip_vf
        grad, row_index = self.policy.grad, np.arange(k)[:, None]
        for _ in range(first.n_epochs):
            stats.start_epoch(training)
            order = np.stack([self.orders[r].permutation(size) if active_rows[r] else np.arange(size)
                              for r in range(k)])  # fmt: skip
            shuffled = {key: value[row_index, order] for key, value in data.items()}
            for start in range(0, size, first.batch_size):
                batch = {key: value[:, start : start + first.batch_size] for key, value in shuffled.items()}
                minibatch_loss, stepping, numbers = self.numpy_loss.minibatch(batch, coefs, *clips, training)
                stats.add(None if everyone else training, numbers)
                # a seed stopped earlier keeps its own
                loss = minibatch_loss if everyone else np.where(training, minibatch_loss, loss)
                norms = clip_grad_norms(grad, first.max_grad_norm)
                stats.add_grad_norm(None if everyone else stepping, norms)  # before clipping, the seeds stepping
                self.optimizer.step(grad, lr, None if everyone else stepping)
                training = stepping
            if not training.any():
                break
        records = {}
        for row in rows:
            records[row] = stats.means(row) | {"loss": float(loss[row]), "clip_range": float(clip[row, 0])}
            if first.clip_range_vf is not None:
                records[row]["clip_range_vf"] = float(clip_vf[row, 0])
        return self.finish(rows, records, {row: int(stats.epochs[row]) for row in rows})

    def rollouts(self, rows: list[int]) -> dict[str, np.ndarray]:
        """The seeds' rollout buffers as SB3's ``RolloutBuffer.get`` flattens them, stacked: ``[K, T, ...]``
        (zeros for a seed not in ``rows``), NumPy arrays as :class:`NumpyLoss` takes them."""
        keys = ("observations", "actions", "values", "log_probs", "advantages", "returns")
        names = ("observations", "actions", "old_values", "old_log_prob", "advantages", "returns")
        stacked, k = {}, self.policy.k
        for key, name in zip(keys, names, strict=True):
            arrays = {row: getattr(self.models[row].rollout_buffer, key) for row in rows}  # [T, N, ...] each
            steps, envs, *rest = arrays[rows[0]].shape
            if name == "actions" and self.policy.discrete:
                rest = []  # [K, N * T]: one action each
            # each seed's swap_and_flatten ([N * T, ...]: env by env) written into its row; zeros for a seed not
            # in rows (made only where one is missing)
            value = (np.empty if len(rows) == k else np.zeros)((k, envs * steps, *rest), dtype=arrays[rows[0]].dtype)
            for row, array in arrays.items():
                value[row].reshape(envs, steps, *rest)[...] = array.swapaxes(0, 1).reshape(envs, steps, *rest)
            stacked[name] = value
        return stacked

    def finish(self, rows: list[int], records: dict[int, dict[str, float]], updates: dict[int, int]) -> dict[int, Any]:
        """After an update: each seed's SB3 policy and optimizer state set to its row (what ``model.save``, the
        evaluations and checkpoints read), its ``n_updates`` counted on by ``updates`` and its ``train/`` records
        (``records``) returned; a seed whose parameters are no longer finite gets an error (its run fails, the others
        go on)."""
        results: dict[int, Any] = {}
        flat = self.policy.flat.numpy()
        finite = np.isfinite(flat.max(axis=1)) & np.isfinite(flat.min(axis=1))  # NaN is the max and the min
        for row in rows:
            model = self.models[row]
            model._n_updates += updates[row]
            if not bool(finite[row]):
                results[row] = FloatingPointError(
                    f"non-finite policy parameters after the update at {model.num_timesteps} timesteps"
                )
                continue
            self.write_back(row)
            results[row] = records[row] | {"n_updates": model._n_updates}
        return results

    @torch.no_grad()
    def write_back(self, row: int) -> None:
        """Seed ``row``'s parameters into its SB3 policy (what its evaluations, SB3's value predictions and the
        video read), after each update: one copy into the tensor its parameters are views of (its mirror); its
        optimizer's state is written when the model is saved (:meth:`write_optimizer_state`, from
        :meth:`SideBySide.get_parameters`)."""
        self.mirrors[row].copy_(self.policy.flat[row])

    @torch.no_grad()
    def write_optimizer_state(self, row: int) -> None:
        """Seed ``row``'s optimizer state into its SB3 optimizer (the state's types as that optimizer keeps them:
        ``RMSpropTFLike`` counts its steps in an int, torch's in a tensor)."""
        model, layout = self.models[row], self.policy.layout
        moments = {key: layout.unflatten(moment[row]) for key, moment in self.optimizer.moments.items()}
        steps = int(self.optimizer.steps[row])
        step: Any = steps if isinstance(model.policy.optimizer, RMSpropTFLike) else torch.tensor(float(steps))
        for name, param in zip(layout.slices, self.params[row], strict=True):
            state: dict[str, Any] = {key: moment[name].clone() for key, moment in moments.items()}
            state["step"] = step if isinstance(step, int) else step.clone()
            model.policy.optimizer.state[param] = state


class Statistics:
    """SB3's ``train/`` statistics of an update, per seed: means over the minibatches each seed trained on
    (``approx_kl``: over its last epoch's), summed in float32 as the minibatches come."""

    def __init__(self, k: int) -> None:
        self.sums = np.zeros((5, k), dtype=np.float32)  # policy, value, entropy losses, clip fraction, approx_kl
        self.counts = np.zeros((2, k), dtype=np.float32)  # minibatches trained on: all, this epoch's
        self.epochs = np.zeros(k, dtype=np.int64)
        self.grad_norms = np.zeros(k, dtype=np.float32)  # gradient norms before clipping, summed
        self.steps = np.zeros(k, dtype=np.float32)  # steps taken

    def start_epoch(self, training: np.ndarray) -> None:
        """``training [K]`` bool: the seeds that train in this epoch."""
        self.sums[4, training] = 0
        self.counts[1, training] = 0
        self.epochs += training

    def add(self, training: np.ndarray | None, values: np.ndarray) -> None:
        """``values [5, K]``: the minibatch's policy, value and entropy losses, clip fraction and KL, counted for
        the seeds ``training [K]`` (None: every seed)."""
        if training is None:  # the same sums as with a weight of ones
            self.sums += values.astype(np.float32, copy=False)
            self.counts += 1
            return
        weight = training.astype(np.float32)
        self.sums += values.astype(np.float32, copy=False) * weight
        self.counts += weight

    def add_grad_norm(self, stepping: np.ndarray | None, norms: np.ndarray) -> None:
        """``norms [K]``: each seed's gradient norm before clipping, counted for the seeds ``stepping [K]`` (None:
        every seed)."""
        if stepping is None:
            self.grad_norms += norms
            self.steps += 1
            return
        weight = stepping.astype(np.float32)
        self.grad_norms += norms * weight
        self.steps += weight

    def means(self, row: int) -> dict[str, float]:
        count = float(self.counts[0, row])
        names = ("policy_gradient_loss", "value_loss", "entropy_loss", "clip_fraction")
        record = {name: float(self.sums[i, row]) / count for i, name in enumerate(names)}
        record["approx_kl"] = float(self.sums[4, row]) / max(float(self.counts[1, row]), 1.0)
        if float(self.steps[row]):  # as lander's GradientNorms records it for SB3: over the steps taken
            record["grad_norm"] = float(self.grad_norms[row]) / float(self.steps[row])
        return record
