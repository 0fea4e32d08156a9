"""Config composition, and bad input: a clear message naming the key, non-zero exit, no result written."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from conftest import REPO, lander_env, run_lander
from lander.algos import effective_gamma
from lander.config import ConfigError, group_options, register_configs, validate

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_groups_have_the_documented_options():
    assert set(group_options("algo")) >= {"ppo", "a2c", "dqn", "sac", "td3"}
    assert set(group_options("env")) >= {"lunar_lander", "lunar_lander_continuous"}
    assert set(group_options("logger")) == {"wandb", "none"}


@pytest.mark.parametrize("algo,env", [("ppo", "lunar_lander"), ("a2c", "lunar_lander"), ("dqn", "lunar_lander"),
                                      ("sac", "lunar_lander_continuous"), ("td3", "lunar_lander_continuous"),
                                      ("ppo", "lunar_lander_continuous"), ("a2c", "lunar_lander_continuous")])
def test_every_supported_pair_composes_and_validates(algo, env):
    cfg = composed(f"algo={algo}", f"env={env}")
    validate(cfg)
    assert cfg.algo.name == algo and cfg.env.name == env and cfg.logger.mode == "offline"


def test_gamma_null_keeps_the_algorithm_value_and_a_number_overrides_it():
    assert effective_gamma(composed("algo=ppo")) == 0.999
    assert effective_gamma(composed("algo=ppo", "gamma=0.98")) == 0.98


@pytest.mark.parametrize("algo,env", [("dqn", "lunar_lander_continuous"), ("sac", "lunar_lander"),
                                      ("td3", "lunar_lander")])
def test_incompatible_pair_is_rejected_naming_supported_envs(algo, env):
    with pytest.raises(ConfigError) as info:
        validate(composed(f"algo={algo}", f"env={env}"))
    message = str(info.value)
    assert f"algo={algo}" in message and f"env={env}" in message
    supported = "lunar_lander_continuous" if algo in ("sac", "td3") else "lunar_lander"
    assert f"Envs it supports: {supported}" in message


def test_wrong_type_is_rejected_by_the_schema():
    with pytest.raises(ConfigCompositionException) as info:
        composed("seed=abc")
    assert "could not be converted to Integer" in str(info.value.__cause__)


# (overrides, text the error must contain)
BAD_INPUT = [
    (["gamma=1.5"], "gamma=1.5 is not allowed: gamma must be null or in (0, 1]"),
    (["gamma=0"], "gamma=0.0 is not allowed"),
    (["total_timesteps=0"], "total_timesteps=0 is not allowed"),
    (["total_timesteps=-5"], "total_timesteps=-5 is not allowed"),
    (["eval.episodes=0"], "eval.episodes=0 is not allowed: eval.episodes must be an integer >= 1"),
    (["n_envs=0"], "n_envs=0 is not allowed"),
    (["algo=sac"], "Envs it supports: lunar_lander_continuous"),
    (["algo=dqn", "env=lunar_lander_continuous"], "Envs it supports: lunar_lander"),
    (["algo=nope"], "Available options in 'algo'"),
    (["env=mars"], "Available options in 'env'"),
    (["learning_rate=0.1"], "unknown key 'learning_rate' in override 'learning_rate=0.1': top-level keys are algo, "),
    (["learning_rate=0.1"], "algorithm hyperparameters go under algo.model (e.g. algo.model.learning_rate=0.1)"),
    (["eval.episode=5"], "unknown key 'eval.episode' in override 'eval.episode=5': keys of eval are deterministic, "
                         "episodes, freq, n_envs, seed"),
    (["seed=abc"], "seed"),
    (["logger.mode=online"], "logger.mode=online needs a W&B API key"),
]


@pytest.mark.parametrize("overrides,message", BAD_INPUT, ids=[" ".join(o) for o, _ in BAD_INPUT])
def test_bad_input_exits_nonzero_before_training(tmp_path, overrides, message):
    run_dir = tmp_path / "run"
    env = lander_env(HOME=str(tmp_path), NETRC=str(tmp_path / "no-netrc"))
    proc = run_lander(run_dir, *overrides, env=env, timeout=120)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr
    for result in ("summary.json", "model.zip", "eval.json", "metrics", "wandb", "video.mp4"):
        assert not (run_dir / result).exists(), f"{result} written for bad input"
