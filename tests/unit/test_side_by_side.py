"""The batched PPO update (``seeds_per_process``) is SB3's ``PPO.train``, term by term: from the same parameters and
the same rollout, one update of each ends at the same parameters and Adam state (to float rounding), for discrete
and continuous actions, value clipping, ``target_kl``, schedules; and seeds side by side are independent."""

from __future__ import annotations

import copy
import io
import time
import zipfile
from collections.abc import Callable
from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.utils import explained_variance as sb3_explained_variance

from lander.algorithms.batched.loss import NumpyLoss
from lander.algorithms.batched.model import (
    SeedStack,
    SideBySideA2C,
    SideBySidePPO,
    explained_variance,
    in_lockstep,
    returns_and_advantages,
    variance,
)
from lander.algorithms.batched.stacked import Draws, Layer, StackedPolicy
from lander.execution.lockstep import Lockstep
from lander.training.callbacks import GradientNorms

CASES = {
    "discrete": ("CartPole-v1", {"ent_coef": 0.01}),  # the entropy bonus: SB3's default 0.0 leaves it untested
    "continuous": ("Pendulum-v1", {"ent_coef": 0.01, "policy_kwargs": {"log_std_init": -0.5, "net_arch": [32, 16]}}),
    "value-clipping-schedules": ("CartPole-v1", {"clip_range_vf": 0.1, "learning_rate": lambda p: 1e-3 * p}),
    "target-kl": ("CartPole-v1", {"target_kl": 1e-4, "learning_rate": 3e-3}),
    "relu-no-advantage-normalisation": (
        "Pendulum-v1",
        {"normalize_advantage": False, "policy_kwargs": {"activation_fn": torch.nn.ReLU, "ortho_init": False}},
    ),
    "unlike-nets": ("CartPole-v1", {"ent_coef": 0.01, "policy_kwargs": {"net_arch": {"pi": [32, 32], "vf": [16]}}}),
}


def models(env_id: str, kwargs: dict, seed: int = 0) -> tuple[PPO, SideBySidePPO]:
    """SB3's PPO and the side-by-side one, same seed (same initial weights), one whole-rollout minibatch (so the
    minibatch order, which each draws from its own generator, does not matter) and three epochs."""
    built = []
    for cls in (PPO, SideBySidePPO):
        env = make_vec_env(env_id, n_envs=4, seed=seed)
        model = cls("MlpPolicy", env, n_steps=32, batch_size=128, n_epochs=3, seed=seed, **kwargs)
        model.set_logger(configure(None, []))
        built.append(model)
    return built[0], built[1]  # type: ignore[return-value]


def rollout(model: PPO) -> None:
    """One rollout collected by SB3's own loop."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Nothing(BaseCallback):
        def _on_step(self) -> bool:
            return True

    model._setup_learn(model.n_steps * model.n_envs, Nothing())
    callback = Nothing()
    callback.init_callback(model)
    PPO.collect_rollouts(model, model.env, callback, model.rollout_buffer, model.n_steps)  # SB3's policy call
    model._current_progress_remaining = 0.75


@pytest.mark.parametrize("case", CASES)
def test_one_update_is_sb3s_update(case: str) -> None:
    env_id, kwargs = CASES[case]
    sb3, batched = models(env_id, kwargs)
    for a, b in zip(sb3.policy.parameters(), batched.policy.parameters(), strict=True):
        assert torch.equal(a, b)  # the same initial weights: SB3 builds both
    rollout(sb3)
    batched.rollout_buffer = copy.deepcopy(sb3.rollout_buffer)
    batched._current_progress_remaining = sb3._current_progress_remaining
    norms = GradientNorms()  # lander's train/grad_norm for SB3 (the batched update records its own)
    norms.init_callback(sb3)
    norms._on_training_start()
    sb3.train()
    norms.remove()
    batched.train()
    batched.get_parameters()  # what save reads: the engine's optimizer state written into SB3's
    for (name, a), b in zip(sb3.policy.named_parameters(), batched.policy.parameters(), strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6), name
        assert not torch.equal(a, sb3.policy.optimizer.state[a]["exp_avg"] * 0), name  # it did train
        state_a, state_b = sb3.policy.optimizer.state[a], batched.policy.optimizer.state[b]
        assert float(state_a["step"]) == float(state_b["step"]), name
        assert torch.allclose(state_a["exp_avg"], state_b["exp_avg"], rtol=1e-4, atol=1e-7), name
        assert torch.allclose(state_a["exp_avg_sq"], state_b["exp_avg_sq"], rtol=1e-3, atol=1e-10), name
    logged_a, logged_b = sb3.logger.name_to_value, batched.logger.name_to_value
    assert set(logged_a) == set(logged_b)
    for key, value in logged_a.items():
        assert logged_b[key] == pytest.approx(value, rel=1e-3, abs=1e-6), key


def test_target_kl_stops_each_seed_on_its_own() -> None:
    """With a tiny ``target_kl`` SB3 stops after the first minibatch's KL check; so does the batched update."""
    sb3, batched = models("CartPole-v1", {"target_kl": 1e-9, "learning_rate": 1e-2})
    rollout(sb3)
    batched.rollout_buffer = copy.deepcopy(sb3.rollout_buffer)
    batched._current_progress_remaining = sb3._current_progress_remaining
    sb3.train()
    batched.train()
    assert sb3._n_updates == batched._n_updates
    for a, b in zip(sb3.policy.parameters(), batched.policy.parameters(), strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def cartpole(seed: int) -> SideBySidePPO:
    """A small side-by-side PPO on CartPole (4 envs, 64 steps each a rollout)."""
    env = make_vec_env("CartPole-v1", n_envs=4, seed=seed)
    return SideBySidePPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=2, seed=seed)


def seed_run(seed: int, steps: int) -> dict[str, np.ndarray]:
    model = cartpole(seed)
    model.learn(steps)
    return {name: p.detach().numpy().copy() for name, p in model.policy.named_parameters()}


def test_seeds_side_by_side_twice_end_with_the_same_weights() -> None:
    """Reproducible: the same seeds side by side again, in this process, end with identical weights (bit for bit)."""
    ends = []
    for _ in range(2):
        trained: dict[int, dict[str, np.ndarray]] = {}

        def job(seed: int, into: dict[int, dict[str, np.ndarray]] = trained) -> int:
            into[seed] = seed_run(seed, 256)
            return 0

        assert Lockstep().run([lambda: job(5), lambda: job(6)], ended=lambda index, code: None) == [0, 0]
        ends.append(trained)
    for seed in (5, 6):
        assert all(np.array_equal(ends[0][seed][name], ends[1][seed][name]) for name in ends[0][seed]), seed


def test_a_seed_side_by_side_trains_as_it_does_alone() -> None:
    """Each seed has its own random streams and rows: seed 3 trained beside seed 4 ends where seed 3 alone does."""
    alone = seed_run(3, 512)
    trained: dict[int, dict[str, np.ndarray]] = {}

    def job(seed: int) -> int:
        trained[seed] = seed_run(seed, 512)
        return 0

    codes = Lockstep().run([lambda: job(3), lambda: job(4)], ended=lambda index, code: None)
    assert codes == [0, 0]
    for name, value in alone.items():
        np.testing.assert_allclose(trained[3][name], value, rtol=1e-5, atol=1e-6, err_msg=name)
        assert not np.allclose(trained[4][name], value), name


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_a_seed_ends_as_alone_when_its_neighbour_evaluates_mid_rollout(env_id: str) -> None:
    """A seed that evaluates (deterministic ``predict``, as lander's evaluations) waits while its neighbours act:
    their rollout steps must not draw from its generator. Seed 3 beside such a seed 4 ends with the weights seed 3
    alone ends with, bit for bit (before the fix, a neighbour's lone steps advanced every seed's generator)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Evaluates(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps in (40, 200):  # mid-rollout: a few predictions, then the rollout goes on
                obs = np.zeros((2, *self.model.observation_space.shape), dtype=np.float32)
                for _ in range(3):
                    self.model.predict(obs, deterministic=True)
            return True

    def run(seed: int, into: dict[int, dict[str, np.ndarray]], evaluates: bool = False) -> int:
        model = SideBySidePPO("MlpPolicy", make_vec_env(env_id, n_envs=4, seed=seed), n_steps=64, batch_size=64,
                              n_epochs=2, seed=seed)  # fmt: skip
        model.learn(512, callback=Evaluates() if evaluates else None)
        into[seed] = {name: p.detach().numpy().copy() for name, p in model.policy.named_parameters()}
        return 0

    alone: dict[int, dict[str, np.ndarray]] = {}
    beside: dict[int, dict[str, np.ndarray]] = {}
    assert Lockstep().run([lambda: run(3, alone)], ended=lambda index, code: None) == [0]
    jobs = [lambda: run(3, beside), lambda: run(4, beside, evaluates=True)]
    assert Lockstep().run(jobs, ended=lambda index, code: None) == [0, 0]
    for name, value in alone[3].items():
        assert np.array_equal(beside[3][name], value), name


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_a_seed_evaluates_alone_as_it_does_side_by_side(env_id: str) -> None:
    """The evaluations' deterministic actions of a seed alone on the engine (``batched_engine``, no lockstep) are
    those of the same seed side by side, bit for bit: both by the batched forward. (Before, alone they were SB3's
    forward's, whose means differ from it in the last bits.)"""
    observations = np.random.default_rng(0).normal(size=(64, *gym.make(env_id).observation_space.shape))

    def run(seed: int, into: dict[int, np.ndarray]) -> int:
        model = SideBySidePPO("MlpPolicy", make_vec_env(env_id, n_envs=4, seed=seed), n_steps=64, batch_size=64,
                              n_epochs=2, seed=seed)  # fmt: skip
        model.learn(256)
        into[seed] = model.predict(observations.astype(np.float32), deterministic=True)[0]
        return 0

    alone: dict[int, np.ndarray] = {}
    beside: dict[int, np.ndarray] = {}
    run(3, alone)
    assert Lockstep().run([lambda: run(3, beside), lambda: run(4, beside)], ended=lambda index, code: None) == [0, 0]
    assert alone[3].tobytes() == beside[3].tobytes()
    assert not np.array_equal(beside[4], beside[3])


def engine_forward(model: SideBySidePPO, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SB3's ``policy.forward`` (actions, values, log-probabilities as tensors) answered by the engine's ``_act``."""
    actions, values, log_probs = model._act(obs.numpy())
    return torch.from_numpy(actions), values, log_probs


@pytest.mark.parametrize(("cls", "env_id"), [(SideBySidePPO, "CartPole-v1"), (SideBySideA2C, "Pendulum-v1")])
def test_the_engines_rollout_loop_is_sb3s(cls: type[SideBySidePPO], env_id: str) -> None:
    """The engine's own ``collect_rollouts`` fills the buffer, counts the steps and episodes and hands the callbacks
    what SB3's ``OnPolicyAlgorithm.collect_rollouts`` does with the same actions: two models of one seed (the same
    weights and generator), one through each loop, over rollouts whose episodes end by their time limit
    (bootstrapped with the value of the last observation) and by failing."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Record(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[dict[str, object]] = []

        def _on_step(self) -> bool:
            keys = ("actions", "clipped_actions", "new_obs", "rewards", "dones", "values", "log_probs", "obs_tensor")
            self.seen.append({key: copy.deepcopy(self.locals[key]) for key in keys} | {"infos": self.locals["infos"]})
            return True

        def _on_rollout_end(self) -> None:
            self.seen.append({"last values": self.locals["values"].clone(), "dones": self.locals["dones"].copy()})

    ends = []
    for own_loop in (True, False):
        env = make_vec_env(env_id, n_envs=3, seed=2, env_kwargs={"max_episode_steps": 23})
        model = cls("MlpPolicy", env, n_steps=40, seed=2)
        record = Record()
        model._setup_learn(10**6, record)
        record.init_callback(model)
        for _ in range(3):
            if own_loop:
                model.collect_rollouts(model.env, record, model.rollout_buffer, model.n_steps)
            else:  # SB3's loop, its policy call answered by the engine as the engine's loop asks it
                model.policy.forward = partial(engine_forward, model)  # type: ignore[method-assign]
                OnPolicyAlgorithm.collect_rollouts(model, model.env, record, model.rollout_buffer, model.n_steps)
                del model.policy.forward
        buffer = model.rollout_buffer
        arrays = {key: getattr(buffer, key).copy() for key in ("observations", "actions", "rewards", "episode_starts",
                  "values", "log_probs", "returns", "advantages")}  # fmt: skip
        ends.append((arrays, model.num_timesteps, list(model.ep_info_buffer), record.seen, buffer.pos, buffer.full))
    (mine, steps, episodes, seen, pos, full), (sb3s, *rest) = ends
    assert (steps, pos, full) == (rest[0], rest[3], rest[4]) and steps == 3 * 40 * 3 and full
    assert len(episodes) > 3 and [(e["r"], e["l"]) for e in episodes] == [(e["r"], e["l"]) for e in rest[1]]
    assert any(e["l"] == 23 for e in episodes)  # some episodes ended by the time limit: bootstrapped
    for key, value in mine.items():
        assert np.array_equal(value, sb3s[key]), key
    assert len(seen) == len(rest[2])
    for mine_step, sb3_step in zip(seen, rest[2], strict=True):
        assert mine_step.keys() == sb3_step.keys()
        for key, value in mine_step.items():
            other = sb3_step[key]
            assert type(value) is type(other), key
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, other), key  # type: ignore[arg-type]
            elif isinstance(value, np.ndarray):
                assert value.dtype == other.dtype and np.array_equal(value, other), key  # type: ignore[union-attr]
            else:  # the infos: Monitor's episode records hold the wall time ("t"), which differs
                timeless = [[{k: {**v, "t": 0} if k == "episode" else v for k, v in info.items()} for info in infos]
                            for infos in (value, other)]  # type: ignore[attr-defined]  # fmt: skip
                assert repr(timeless[0]) == repr(timeless[1]), key


def test_a_seeds_uniform_draws_are_torch_rands_step_by_step() -> None:
    """:class:`Draws` hands out of a block drawn ahead exactly what one ``torch.rand(n)`` a step gives (torch's CPU
    kernel draws one number after another), across the blocks' ends and for steps larger than a block."""
    for sizes in ([8] * 2000, [16] * 700, [1, 5, 4095, 3, 4096, 9000, 7] * 3):
        draws, generator = Draws(torch.Generator().manual_seed(7)), torch.Generator().manual_seed(7)
        for n in sizes:
            assert draws.uniform(n).tobytes() == torch.rand(n, generator=generator).numpy().tobytes(), n
    continuous = Draws(torch.Generator().manual_seed(7))
    assert torch.equal(continuous.normal((16, 2)), torch.randn((16, 2), generator=torch.Generator().manual_seed(7)))


@pytest.mark.parametrize("gae_lambda", [0.95, 1.0])
def test_the_engines_rollout_end_is_sb3s_to_the_bit(gae_lambda: float) -> None:
    """The engine's returns and advantages (:func:`returns_and_advantages`), its critic's values
    (``SideBySide._values``) and its ``train/explained_variance`` are SB3's, byte for byte, on rollouts of a
    thousand steps with episode starts, at A2C's GAE lambda and PPO's."""
    rng = np.random.default_rng(3)
    model = SideBySideA2C("MlpPolicy", make_vec_env("LunarLander-v3", n_envs=8, seed=0), n_steps=1000, seed=0)
    for _ in range(3):
        ours, sb3s = (RolloutBuffer(1000, model.observation_space, model.action_space, gamma=0.995,
                                    gae_lambda=gae_lambda, n_envs=8) for _ in range(2))  # fmt: skip
        ours.rewards[:] = rng.standard_normal((1000, 8)).astype(np.float32) * 50
        ours.values[:] = rng.standard_normal((1000, 8)).astype(np.float32) * 30
        ours.episode_starts[:] = rng.random((1000, 8)) < 0.01
        sb3s.rewards[:], sb3s.values[:], sb3s.episode_starts[:] = ours.rewards, ours.values, ours.episode_starts
        obs = rng.standard_normal((8, 8)).astype(np.float32)
        dones = rng.random(8) < 0.3
        with torch.no_grad():
            values = model.policy.predict_values(torch.from_numpy(obs))
        assert torch.equal(model._values(obs), values)
        sb3s.compute_returns_and_advantage(values, dones)
        returns_and_advantages(ours, values.numpy().flatten(), dones)
        for key in ("advantages", "returns"):
            assert getattr(ours, key).tobytes() == getattr(sb3s, key).tobytes(), key
        predicted, returned = ours.values.flatten(), ours.returns.flatten()
        assert repr(explained_variance(predicted, returned)) == repr(sb3_explained_variance(predicted, returned))
        assert explained_variance(returned, returned) == 1.0
    for size in (1, 2, 40, 1000, 16384):
        sample = (rng.standard_normal(size) * 100).astype(np.float32)
        assert variance(sample).dtype == np.float32 and variance(sample).tobytes() == np.var(sample).tobytes()
    assert np.isnan(explained_variance(np.ones(5, np.float32), np.zeros(5, np.float32)))


@pytest.mark.parametrize("case", ["discrete", "continuous"])
def test_deterministic_actions_side_by_side_are_sb3s(case: str) -> None:
    """The evaluations' and the video's ``predict`` (deterministic) is computed for the seeds together in a
    lockstep: each seed gets the actions SB3's own ``predict`` gives for its parameters, whatever the other seeds'
    batch sizes."""
    env_id, kwargs = CASES[case]
    got: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def job(seed: int, n: int) -> int:
        model = SideBySidePPO("MlpPolicy", make_vec_env(env_id, n_envs=2, seed=seed), n_steps=32, batch_size=32,
                              n_epochs=1, seed=seed, **kwargs)  # fmt: skip
        model.learn(128)  # parameters moved by the batched updates
        assert in_lockstep()  # so predict below is the batched one
        obs = np.random.default_rng(seed).normal(size=(n, *model.observation_space.shape)).astype(np.float32)
        got[seed] = (model.predict(obs, deterministic=True)[0], PPO.predict(model, obs, deterministic=True)[0])
        return 0

    assert Lockstep().run([lambda: job(0, 3), lambda: job(1, 7)], ended=lambda index, code: None) == [0, 0]
    for batched, sb3 in got.values():
        assert batched.shape == sb3.shape
        np.testing.assert_allclose(batched, sb3, rtol=1e-5, atol=1e-6)


def test_each_seed_is_counted_the_cpu_seconds_of_its_own_turns() -> None:
    """The lockstep counts each job the CPU seconds this thread spends in it (``train_cpu_seconds``, the
    throughput's CPU): two jobs that burn 0.3 and 0.1 CPU seconds get those, and each sees its own while it runs."""
    from lander.process.clock import cpu_seconds

    seen: dict[int, float] = {}

    def job(index: int, seconds: float) -> Callable[[], int]:
        def run() -> int:
            start = time.thread_time()
            while time.thread_time() - start < seconds:
                pass
            seen[index] = cpu_seconds()
            return 0

        return run

    lockstep = Lockstep()
    assert lockstep.run([job(0, 0.3), job(1, 0.1)], lambda index, code: None) == [0, 0]
    own = [lockstep.contexts[let].cpu for let in lockstep.lets]
    assert 0.3 <= own[0] < 0.35 and 0.1 <= own[1] < 0.15, own
    assert 0.3 <= seen[0] < 0.35 and 0.1 <= seen[1] < 0.15, seen  # what each job's own clock said (and no hub)


def test_a_failed_seed_leaves_the_others_training() -> None:
    """A seed whose env raises mid-rollout fails alone; the other ends as it would have."""
    alone = seed_run(5, 512)
    trained: dict[int, dict[str, np.ndarray]] = {}

    def broken() -> int:
        model = cartpole(6)
        model.env.step = None  # type: ignore[method-assign,union-attr]  # its next step fails
        try:
            model.learn(512)
        except TypeError:
            return 1
        return 0

    def good() -> int:
        trained[5] = seed_run(5, 512)
        return 0

    assert Lockstep().run([broken, good], ended=lambda index, code: None) == [1, 0]
    for name, value in alone.items():
        np.testing.assert_allclose(trained[5][name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_seed_stack_refuses_other_optimizers() -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = SideBySidePPO("MlpPolicy", env, policy_kwargs={"optimizer_class": torch.optim.SGD})
    with pytest.raises(ValueError, match="Adam"):
        SeedStack([model])


def test_a_seed_whose_parameters_turn_nan_fails_alone() -> None:
    """A seed whose update leaves non-finite parameters gets an error (its run fails); its neighbour's rows,
    gradients and Adam state are its own: it ends as it does alone."""
    alone = seed_run(7, 512)
    trained: dict[int, dict[str, np.ndarray]] = {}
    errors: list[str] = []

    def diverging() -> int:
        model = cartpole(8)
        with torch.no_grad():
            model.policy.value_net.weight.fill_(float("nan"))
        try:
            model.learn(512)
        except FloatingPointError as exc:
            errors.append(str(exc))
            return 1
        return 0

    def good() -> int:
        trained[7] = seed_run(7, 512)
        return 0

    assert Lockstep().run([diverging, good], ended=lambda index, code: None) == [1, 0]
    assert errors == ["non-finite policy parameters after the update at 256 timesteps"]
    for name, value in alone.items():
        np.testing.assert_allclose(trained[7][name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def final_returns(cls: type[PPO], seeds: list[int]) -> list[float]:
    """CartPole, 10,240 steps: each seed's mean return over 10 fixed-seed deterministic episodes."""
    from stable_baselines3.common.evaluation import evaluate_policy

    returns: list[float] = []

    def job(seed: int) -> int:
        env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
        model = cls("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=4, seed=seed, learning_rate=2e-3)
        model.learn(10_240)
        eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=1000 + seed)
        returns.append(float(evaluate_policy(model, eval_env, n_eval_episodes=10)[0]))
        return 0

    if cls is SideBySidePPO:
        assert Lockstep().run([lambda s=s: job(s) for s in seeds], ended=lambda index, code: None) == [0] * len(seeds)
    else:
        for seed in seeds:
            job(seed)
    return returns


@pytest.mark.slow  # 12 s; the exact update tests below catch each mutation it catches (docs/development.md)
def test_side_by_side_learns_cartpole_as_sb3_does() -> None:
    """On the same seeds and budget the batched learner reaches SB3's range of returns (a random policy: ~22; 500
    is the most). Each draws its own random streams, so returns differ seed by seed: BENCHMARKS.md compares the two
    distributions on 10 seeds of the default experiment."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as lander runs (torch_threads=1): more threads only contend for small MLPs
    try:
        sb3, batched = final_returns(PPO, [0, 1, 2]), final_returns(SideBySidePPO, [0, 1, 2])
    finally:
        torch.set_num_threads(threads)
    assert min(sb3) > 150 and min(batched) > 150, (sb3, batched)  # untrained: 9-60
    assert abs(np.mean(batched) - np.mean(sb3)) < 120, (sb3, batched)


# ---------------------------------------------------------------------------------------------------------------
# The oracle: the same loss differentiated by torch's autograd, and SB3's own update with the same minibatches


def autograd_minibatch(
    policy: StackedPolicy,
    batch: dict[str, torch.Tensor],
    coefs: tuple,
    clip: torch.Tensor,
    clip_vf: torch.Tensor | None,
    training: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SB3's PPO loss of every seed's minibatch ``[K, B, ...]``, differentiated by autograd: each seed's loss
    ``[K]``, which seeds step ``[K]`` (KL within ``1.5 * target_kl``) and the gradient ``[K, P]`` of the sum of the
    stepping seeds' losses, in the layout of ``policy.flat``."""
    ent_coef, vf_coef, normalize, target_kl = coefs
    params = {name: policy.param(name).detach().clone().requires_grad_(True) for name in policy.layout.slices}

    def mlp(x: torch.Tensor, program: list[Layer]) -> torch.Tensor:
        for layer in program:
            if layer.linear is not None:
                weight, bias = params[f"{layer.linear}.weight"], params[f"{layer.linear}.bias"]
                x = torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
            if layer.activation is not None:
                x = layer.activation(x)
        return x

    obs = batch["observations"]
    features = obs.reshape(policy.k, obs.shape[1], -1).float()
    out = mlp(mlp(features, policy.pi), [Layer("action_net")])
    values = mlp(mlp(features, policy.vf), [Layer("value_net")]).squeeze(-1)
    if policy.discrete:
        log_p = torch.log_softmax(out, dim=-1)
        log_prob = log_p.gather(-1, batch["actions"].long().unsqueeze(-1)).squeeze(-1)
        entropy = -(log_p * log_p.exp()).sum(-1)
    else:
        log_std = params["log_std"].unsqueeze(1)
        distribution = torch.distributions.Normal(out, log_std.exp())
        log_prob = distribution.log_prob(batch["actions"]).sum(-1)
        entropy = distribution.entropy().sum(-1)
    advantages = batch["advantages"]
    if normalize:
        advantages = (advantages - advantages.mean(1, keepdim=True)) / (advantages.std(1, keepdim=True) + 1e-8)
    log_ratio = log_prob - batch["old_log_prob"]
    ratio = torch.exp(log_ratio)
    policy_loss = -torch.min(advantages * ratio, advantages * torch.clamp(ratio, 1 - clip, 1 + clip)).mean(1)
    if clip_vf is not None:
        values = batch["old_values"] + torch.clamp(values - batch["old_values"], -clip_vf, clip_vf)
    value_loss = ((batch["returns"] - values) ** 2).mean(1)
    loss = policy_loss + ent_coef * -entropy.mean(1) + vf_coef * value_loss
    kl = ((ratio - 1) - log_ratio).mean(1).detach()
    stepping = training if target_kl is None else training & ~(kl > 1.5 * target_kl)
    grads = torch.autograd.grad(torch.where(stepping, loss, torch.zeros_like(loss)).sum(), list(params.values()))
    return loss.detach(), stepping, torch.cat([g.reshape(policy.k, -1) for g in grads], dim=1)


@pytest.mark.parametrize("case", ["discrete", "continuous"])
def test_twin_nets_compute_what_each_net_computes_alone(case: str) -> None:
    """Where the policy's and the value's nets are alike, their hidden layers are computed as twins (one NumPy call
    for both nets): a minibatch's loss, statistics and gradient, and a rollout step's actions, values and
    log-probabilities, are bit for bit what each net computed alone gives (and unlike nets have no twins)."""
    env_id, kwargs = CASES[case]
    seeds = [models(env_id, kwargs, seed)[1] for seed in (0, 1)]
    policy = StackedPolicy([m.policy for m in seeds])
    loss = NumpyLoss(policy)
    twins = policy.twin, loss.twin
    assert twins[0] is not None and twins[1] is not None and len(twins[0]) == 2  # two hidden layers each
    k, b, rng = 2, 64, np.random.default_rng(0)
    shape = seeds[0].observation_space.shape
    actions = rng.integers(0, 2, size=(k, b)) if policy.discrete else rng.normal(size=(k, b, 1))
    batch = {"observations": rng.normal(size=(k, b, *shape)), "actions": actions.astype(np.float32)}
    batch |= {key: rng.normal(size=(k, b)).astype(np.float32)
              for key in ("old_log_prob", "old_values", "advantages", "returns")}  # fmt: skip
    batch["observations"] = batch["observations"].astype(np.float32)
    clip, clip_vf, training = np.full((k, 1), 0.2, np.float32), np.full((k, 1), 0.1, np.float32), np.ones(k, bool)
    got = []
    for together in (True, False):
        policy.twin, loss.twin = twins if together else (None, None)
        policy.grad.zero_()
        outputs = [*loss.minibatch(batch, (0.01, 0.5, True, None), clip, clip_vf, training)]
        outputs.append(policy.grad.numpy().copy())
        outputs.append(loss.a2c(batch, (0.01, 0.5, True), training))
        outputs.append(policy.grad.numpy().copy())
        draws = [Draws(torch.Generator().manual_seed(seed)) for seed in (0, 1)]
        step = policy.act(batch["observations"][:, :16], draws)
        got.append([*outputs, *step])
    for twin_result, alone in zip(*got, strict=True):
        assert twin_result.dtype == alone.dtype and twin_result.tobytes() == alone.tobytes()
    unlike = StackedPolicy([m.policy for m in (models(*CASES["unlike-nets"], seed)[1] for seed in (0, 1))])
    assert unlike.twin is None and NumpyLoss(unlike).twin is None


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_the_numpy_gradient_is_the_autograd_oracles_where_ratios_and_values_clip(env_id: str) -> None:
    """Three seeds (their own weights and clip ranges) on a minibatch where every seed's ratios leave the clip range
    on both sides with advantages of both signs, its values leave the value clip range on both sides, and seed 2's
    KL passes ``1.5 * target_kl``: NumPy's loss, stepping and gradient equal autograd's (seed 2's gradient zero)."""
    seeds = [cartpole_or_pendulum(env_id, seed) for seed in (0, 1, 2)]
    policy = StackedPolicy([m.policy for m in seeds])
    k, b, rng = 3, 64, np.random.default_rng(0)
    obs = torch.from_numpy(rng.normal(size=(k, b, *seeds[0].observation_space.shape)).astype(np.float32))
    if policy.discrete:
        actions = torch.from_numpy(rng.integers(0, 2, size=(k, b)).astype(np.float32))
    else:
        actions = torch.from_numpy(rng.normal(size=(k, b, 1)).astype(np.float32))
    batch = {"observations": obs, "actions": actions, "advantages": torch.from_numpy(rng.normal(size=(k, b)))}
    zero_grad = {"old_log_prob": torch.zeros(k, b), "old_values": torch.zeros(k, b), "returns": torch.zeros(k, b)}
    current, _, _ = autograd_minibatch(policy, batch | zero_grad, (0.0, 0.0, True, None), torch.ones(k, 1), None,
                                       torch.ones(k, dtype=torch.bool))  # fmt: skip
    del current
    log_prob, values = current_log_prob_and_values(policy, batch)
    spread = torch.tensor([[0.6], [0.6], [2.0]])  # seed 2's ratios far apart: its KL passes the threshold
    batch |= {
        "old_log_prob": log_prob - spread * (2 * torch.from_numpy(rng.random((k, b))).float() - 1),
        "old_values": values + (2 * torch.from_numpy(rng.random((k, b))).float() - 1),
        "returns": values + torch.from_numpy(rng.normal(size=(k, b))).float(),
    }
    batch = {key: value.float() for key, value in batch.items()}
    clip, clip_vf = torch.tensor([[0.1], [0.2], [0.3]]), torch.tensor([[0.2], [0.1], [0.2]])
    coefs, training = (0.01, 0.5, True, 0.2), torch.ones(k, dtype=torch.bool)
    ratio = torch.exp(log_prob - batch["old_log_prob"])
    for row in range(k):  # the case this test is about
        for side in (ratio[row] < 1 - clip[row], ratio[row] > 1 + clip[row]):
            assert (side & (batch["advantages"][row] > 0)).any() and (side & (batch["advantages"][row] < 0)).any()
        change = values[row] - batch["old_values"][row]
        assert (change > clip_vf[row]).any() and (change < -clip_vf[row]).any()
    loss, stepping, grad = autograd_minibatch(policy, batch, coefs, clip, clip_vf, training)
    assert stepping.tolist() == [True, True, False]
    numpy_loss = NumpyLoss(policy)
    got_loss, got_stepping, _ = numpy_loss.minibatch({key: value.numpy() for key, value in batch.items()}, coefs,
                                                     clip.numpy(), clip_vf.numpy(), training.numpy())  # fmt: skip
    assert got_stepping.tolist() == stepping.tolist()
    np.testing.assert_allclose(got_loss, loss.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(policy.grad.numpy(), grad.numpy(), rtol=1e-4, atol=1e-6)
    assert not policy.grad[2].any() and policy.grad[:2].abs().sum() > 0


def cartpole_or_pendulum(env_id: str, seed: int) -> SideBySidePPO:
    kwargs = {"policy_kwargs": {"log_std_init": -0.5}} if env_id == "Pendulum-v1" else {}
    return SideBySidePPO("MlpPolicy", make_vec_env(env_id, n_envs=2, seed=seed), n_steps=32, seed=seed, **kwargs)


@torch.no_grad()
def current_log_prob_and_values(policy: StackedPolicy, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The log-probabilities of the batch's actions and the values, by the policy as it is (no gradient)."""
    ones = torch.ones(policy.k, batch["advantages"].shape[1])
    probe = batch | {"old_log_prob": ones * 0, "old_values": ones * 0, "returns": ones * 0}
    out, values = (None if x is None else torch.from_numpy(x) for x in policy.heads(probe["observations"].numpy()))
    if policy.discrete:
        log_prob = torch.log_softmax(out, -1).gather(-1, batch["actions"].long().unsqueeze(-1)).squeeze(-1)
    else:
        std = policy.param("log_std").unsqueeze(1).exp()
        log_prob = torch.distributions.Normal(out, std).log_prob(batch["actions"]).sum(-1)
    assert values is not None
    return log_prob.float(), values.float()


class OrderedRolloutBuffer(RolloutBuffer):
    """SB3's rollout buffer whose minibatch order comes from a NumPy generator of its own (``order``), the stream
    a seed side by side draws its order from: SB3's update with the same minibatches (SB3's ``get`` as it is, but
    for where the permutation comes from)."""

    order: np.random.Generator

    def get(self, batch_size: int | None = None):  # type: ignore[override]
        assert self.full
        indices = self.order.permutation(self.buffer_size * self.n_envs)
        if not self.generator_ready:
            for name in ("observations", "actions", "values", "log_probs", "advantages", "returns"):
                self.__dict__[name] = self.swap_and_flatten(self.__dict__[name])
            self.generator_ready = True
        size = batch_size or self.buffer_size * self.n_envs
        for start in range(0, self.buffer_size * self.n_envs, size):
            yield self._get_samples(indices[start : start + size])


def test_three_seeds_with_their_own_learning_rates_take_sb3s_update_each() -> None:
    """K = 3 seeds with learning rates 3e-4, 1e-3 and 1e-2, four minibatches an epoch, clip ranges small enough to
    clip (0.1, and 0.1 for the values), ``target_kl`` that stops the fast seed mid-update while the others go on:
    each seed ends where SB3's own update of it does (the same minibatches), parameters and Adam state, with SB3's
    ``train/loss`` (the stopping minibatch's) and update count."""
    rates, common = (3e-4, 1e-3, 1e-2), {"n_steps": 64, "batch_size": 64, "n_epochs": 4, "clip_range": 0.1,
                                         "clip_range_vf": 0.1, "target_kl": 0.002, "ent_coef": 0.01}  # fmt: skip
    sb3s, batched = [], []
    for seed, rate in enumerate(rates):
        sb3 = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=4, seed=seed), seed=seed, learning_rate=rate,
                  rollout_buffer_class=OrderedRolloutBuffer, **common)  # fmt: skip
        mine = SideBySidePPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=4, seed=seed), seed=seed,
                             learning_rate=rate, **common)  # fmt: skip
        for model in (sb3, mine):
            model.set_logger(configure(None, []))
        rollout(sb3)
        mine.rollout_buffer = copy.deepcopy(sb3.rollout_buffer)
        mine._current_progress_remaining = sb3._current_progress_remaining
        sb3.rollout_buffer.order = np.random.default_rng(seed)  # the stream SeedStack gives this seed
        sb3s.append(sb3)
        batched.append(mine)
    for sb3 in sb3s:
        sb3.train()
    records = SeedStack(batched).train([0, 1, 2])
    updates = [sb3._n_updates for sb3 in sb3s]
    assert updates[0] == 4 and updates[2] < 4, updates  # the slow seed trains every epoch, the fast one stops
    for seed, (sb3, mine) in enumerate(zip(sb3s, batched, strict=True)):
        logged = sb3.logger.name_to_value
        assert logged["train/clip_fraction"] > 0  # the clip really clipped
        assert mine._n_updates == sb3._n_updates and records[seed]["n_updates"] == sb3._n_updates
        assert records[seed]["loss"] == pytest.approx(logged["train/loss"], rel=1e-4, abs=1e-6), seed
        mine.get_parameters()  # what save reads: the engine's optimizer state written into SB3's
        for (name, a), b in zip(sb3.policy.named_parameters(), mine.policy.parameters(), strict=True):
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-6), (seed, name)
            state_a, state_b = sb3.policy.optimizer.state[a], mine.policy.optimizer.state[b]
            assert float(state_a["step"]) == float(state_b["step"]), (seed, name)
            assert torch.allclose(state_a["exp_avg"], state_b["exp_avg"], rtol=1e-4, atol=1e-7), (seed, name)
            assert torch.allclose(state_a["exp_avg_sq"], state_b["exp_avg_sq"], rtol=1e-3, atol=1e-10), (seed, name)


# ---------------------------------------------------------------------------------------------------------------
# A2C on the same engine: SB3's A2C.train (one step over the whole rollout) with its RMSprop, RMSpropTFLike or Adam

A2C_CASES = {
    "discrete-rmsprop": ("CartPole-v1", {"ent_coef": 0.01}),
    "continuous-rmsprop-tf-like": (
        "Pendulum-v1",
        {
            "ent_coef": 0.01,
            "normalize_advantage": True,
            "policy_kwargs": {
                "log_std_init": -0.5,
                "optimizer_class": RMSpropTFLike,
                "optimizer_kwargs": {"alpha": 0.99, "eps": 0.1},  # large enough for its placement to matter
            },
        },
    ),
    "adam-schedule-relu": (
        "CartPole-v1",
        {"use_rms_prop": False, "learning_rate": lambda p: 3e-3 * p, "policy_kwargs": {"activation_fn": torch.nn.ReLU}},
    ),
}


def a2c_update_of_sb3(sb3: A2C, mine: SideBySideA2C) -> None:
    """A rollout collected by SB3's ``sb3``, given to ``mine`` as it is, and SB3's update of ``sb3`` on it (with
    lander's ``train/grad_norm``)."""
    rollout(sb3)
    mine.rollout_buffer = copy.deepcopy(sb3.rollout_buffer)
    mine._current_progress_remaining = sb3._current_progress_remaining
    norms = GradientNorms()
    norms.init_callback(sb3)
    norms._on_training_start()
    sb3.train()
    norms.remove()


@pytest.mark.parametrize("case", A2C_CASES)
def test_three_a2c_seeds_with_their_own_learning_rates_take_sb3s_updates_each(case: str) -> None:
    """K = 3 A2C seeds (learning rates 7e-4, 3e-3 and 1e-2), three updates in a row, each on a rollout SB3 collected
    with its own parameters: each seed ends every update where SB3's own ``A2C.train`` of it does (parameters and
    optimizer state), with SB3's records and lander's ``train/grad_norm``; the gradient norm is clipped
    (``max_grad_norm``) for some seed at some update."""
    env_id, kwargs = A2C_CASES[case]
    sb3s, batched = [], []
    for seed, rate in enumerate((7e-4, 3e-3, 1e-2)):
        given = {"learning_rate": rate} | kwargs if "learning_rate" not in kwargs else kwargs
        sb3 = A2C("MlpPolicy", make_vec_env(env_id, n_envs=4, seed=seed), n_steps=8, seed=seed, **given)
        mine = SideBySideA2C("MlpPolicy", make_vec_env(env_id, n_envs=4, seed=seed), n_steps=8, seed=seed, **given)
        for model in (sb3, mine):
            model.set_logger(configure(None, []))
        sb3s.append(sb3)
        batched.append(mine)
    stack, clipped = SeedStack(batched), False
    assert type(stack.optimizer).__name__ == ("StackedAdam" if "adam" in case else "StackedRMSprop")
    for _ in range(3):
        logged = []
        for sb3, mine in zip(sb3s, batched, strict=True):
            a2c_update_of_sb3(sb3, mine)
            logged.append(dict(sb3.logger.name_to_value))
            sb3.logger.dump()  # grad_norm is a mean over the update's steps until a dump: this update's
        records = stack.train([0, 1, 2])
        for seed, (sb3, mine) in enumerate(zip(sb3s, batched, strict=True)):
            assert records[seed]["n_updates"] == sb3._n_updates == mine._n_updates
            for key in ("policy_loss", "value_loss", "entropy_loss", "grad_norm"):
                assert records[seed][key] == pytest.approx(logged[seed][f"train/{key}"], rel=1e-4, abs=1e-6), key
            clipped |= records[seed]["grad_norm"] > sb3.max_grad_norm
            mine.get_parameters()  # what save reads: the engine's optimizer state written into SB3's
            for (name, a), b in zip(sb3.policy.named_parameters(), mine.policy.parameters(), strict=True):
                assert torch.allclose(a, b, rtol=1e-4, atol=1e-6), (seed, name)
                state_a, state_b = sb3.policy.optimizer.state[a], mine.policy.optimizer.state[b]
                assert set(state_a) == set(state_b) and float(state_a["step"]) == float(state_b["step"])
                assert type(state_a["step"]) is type(state_b["step"]), (seed, name)  # int for RMSpropTFLike
                for key in set(state_a) - {"step"}:
                    assert torch.allclose(state_a[key], state_b[key], rtol=1e-3, atol=1e-9), (seed, name, key)
            with torch.no_grad():  # the next rollout from the same parameters: the batched seed's rounding
                for a, b in zip(sb3.policy.parameters(), mine.policy.parameters(), strict=True):
                    a.copy_(b)
    assert clipped


def test_an_a2c_seed_alone_records_what_sb3s_a2c_records() -> None:
    """``batched_engine``: one A2C seed alone on the engine (K = 1, through ``train()``) logs SB3's ``train/`` keys
    (and ``grad_norm``, free), with SB3's values, and is saved and loaded as plain SB3 ``A2C``."""
    sb3 = A2C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=4, seed=3), n_steps=8, seed=3, ent_coef=0.01)
    mine = SideBySideA2C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=4, seed=3), n_steps=8, seed=3, ent_coef=0.01)
    for model in (sb3, mine):
        model.set_logger(configure(None, []))
    a2c_update_of_sb3(sb3, mine)
    mine.train()
    logged_a, logged_b = sb3.logger.name_to_value, mine.logger.name_to_value
    assert set(logged_b) == set(logged_a) | {"train/loss"}  # which lander's A2CLoss records for SB3's A2C
    for key, value in logged_a.items():
        assert logged_b[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    terms = (logged_a["train/policy_loss"], logged_a["train/entropy_loss"], logged_a["train/value_loss"])
    assert logged_b["train/loss"] == pytest.approx(terms[0] + 0.01 * terms[1] + 0.5 * terms[2], rel=1e-4)


def test_seed_stack_refuses_an_rmsprop_it_does_not_implement() -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = SideBySideA2C(
        "MlpPolicy", env, policy_kwargs={"optimizer_class": torch.optim.RMSprop, "optimizer_kwargs": {"momentum": 0.9}}
    )
    with pytest.raises(ValueError, match="without momentum"):
        SeedStack([model])


@pytest.mark.parametrize("cls", [SideBySidePPO, SideBySideA2C])
def test_a_saved_seed_holds_the_engines_optimizer_state(tmp_path, cls) -> None:
    """The engine keeps each seed's optimizer state and writes it into SB3's optimizer when the model is saved (a
    checkpoint, ``model.zip``): what plain SB3 loads is the state the next update would use, step count included."""
    kwargs = {"n_steps": 64, "batch_size": 64, "n_epochs": 2} if cls is SideBySidePPO else {"n_steps": 8}
    model = cls("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=1), seed=1, **kwargs)
    model.learn(512)
    model.save(tmp_path / "model.zip")
    stack = model.__dict__["_stack"]
    loaded = (PPO if cls is SideBySidePPO else A2C).load(tmp_path / "model.zip", device="cpu")
    state = loaded.policy.optimizer.state_dict()["state"]
    assert len(state) == len(list(loaded.policy.parameters()))
    for index, name in enumerate(stack.policy.layout.slices):
        assert float(state[index]["step"]) == float(stack.optimizer.steps[0]) > 0
        for key, moment in stack.optimizer.moments.items():
            expected = stack.policy.layout.unflatten(moment[0])[name]
            assert torch.equal(state[index][key], expected), (name, key)
    # the parameters are the engine's (SB3's tensors are views of one per seed) and each is saved as SB3 saves it:
    # a tensor of its own, not a view of the others' storage
    rows = stack.policy.layout.unflatten(stack.policy.flat[0])
    with zipfile.ZipFile(tmp_path / "model.zip") as archive:
        saved = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
    assert saved.keys() == rows.keys() and hasattr(saved, "_metadata")
    for name, tensor in saved.items():
        assert torch.equal(tensor, rows[name]) and torch.equal(dict(loaded.policy.named_parameters())[name], tensor)
        assert tensor.untyped_storage().nbytes() == tensor.numel() * tensor.element_size(), name
