"""``torch_fast_paths`` (foreach optimizer updates, no distribution argument checks) changes no result.

One tiny run per optimizer family with the fast paths on (the default) and off: every metric and every
policy weight must be the same. PPO and SAC use Adam (SAC three of them), A2C torch's RMSprop.
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from helpers import assert_same_results, tiny_run
from lander.training.speed import fast_paths, optimizers, use_foreach


@pytest.mark.parametrize(
    "algo", ["ppo", pytest.param("a2c", marks=pytest.mark.slow), pytest.param("sac", marks=pytest.mark.slow)]
)  # the default suite: ppo (Adam with foreach, the distribution checks); a2c (RMSprop), sac (3 Adams) with -m slow
def test_fast_paths_change_no_result(tmp_path, algo):
    on, off = tmp_path / "on", tmp_path / "off"
    short = ["total_timesteps=400"] if algo == "sac" else []  # 200 updates of SAC's three optimizers
    tiny_run(on, algo, "logger=none", "video.enabled=false", *short)
    tiny_run(off, algo, "logger=none", "video.enabled=false", "torch_fast_paths=false", *short)
    assert_same_results(on, off)


def test_foreach_is_set_on_every_optimizer():
    """The switch reaches SAC's actor, critic and entropy-coefficient optimizers (not only ``policy.optimizer``)."""
    import gymnasium as gym
    from stable_baselines3 import SAC

    model = SAC("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=10, buffer_size=100, device="cpu")
    found = optimizers(model)
    assert len(found) == 3
    use_foreach(model)
    assert all(group["foreach"] is True for opt in found for group in opt.param_groups)
    use_foreach(model, False)
    assert all(group["foreach"] is None for opt in found for group in opt.param_groups)


def test_a_run_saved_before_the_key_existed_resumes_with_the_fast_paths():
    """``resume=`` reads the run's own saved config, which an older lander wrote without ``torch_fast_paths``."""
    assert fast_paths(OmegaConf.create({"seed": 0})) is True
    assert fast_paths(OmegaConf.create({"torch_fast_paths": False})) is False
