"""Config composition, and bad input: a clear message naming the key, non-zero exit, no result written."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException

from helpers import composed, lander, lander_env, run_lander
from helpers.runs import fake_run
from lander.algorithms.build import effective_gamma
from lander.config.checks import validate
from lander.config.schema import group_options, register_configs
from lander.errors import ConfigError

register_configs()


def test_groups_have_the_documented_options():
    assert set(group_options("algo")) >= {
        "ppo",
        "a2c",
        "dqn",
        "sac",
        "td3",
        "mac",
        "mac_adv",
        "reinforce",
        "q_learning",
    }
    assert set(group_options("env")) >= {
        "lunar_lander",
        "lunar_lander_continuous",
        "cartpole",
        "frozen_lake",
        "blackjack",
        "pong",
        "half_cheetah",
    }
    assert set(group_options("logger")) == {"wandb", "none", "tensorboard", "wandb_tensorboard"}


@pytest.mark.parametrize(
    "algo,env",
    [
        ("ppo", "lunar_lander"),
        ("a2c", "lunar_lander"),
        ("dqn", "lunar_lander"),
        ("sac", "lunar_lander_continuous"),
        ("td3", "lunar_lander_continuous"),
        ("ppo", "lunar_lander_continuous"),
        ("a2c", "lunar_lander_continuous"),
        ("mac", "pong"),
        ("mac_adv", "lunar_lander"),
        ("reinforce", "half_cheetah"),
        ("q_learning", "blackjack"),
        ("ppo", "half_cheetah"),
        ("a2c", "pong"),
    ],
)
def test_every_supported_pair_composes_and_validates(algo, env):
    cfg = composed(f"algo={algo}", f"env={env}")
    validate(cfg)
    assert cfg.algo.name == algo and cfg.env.name == env and cfg.logger.wandb.mode is None  # WANDB_MODE, else offline


def test_tuned_values_of_an_algo_env_pair_apply_and_command_line_values_win():
    pong = composed("algo=a2c", "env=pong")
    assert (pong.algo.model.learning_rate, pong.algo.model.vf_coef, pong.algo.n_envs) == (0.0007, 0.25, 16)
    assert pong.algo.model.policy == "CnnPolicy"
    lunar = composed("algo=a2c", "env=lunar_lander")
    assert lunar.algo.model.learning_rate.start == 0.00083 and "vf_coef" not in lunar.algo.model
    assert composed("algo=q_learning", "env=blackjack").algo.model.gamma == 1.0
    assert composed("algo=q_learning", "env=frozen_lake").algo.model.gamma == 0.99
    assert composed("algo=a2c", "env=pong", "algo.model.vf_coef=0.3").algo.model.vf_coef == 0.3
    assert composed("algo=mac_adv").algo.model.advantage is True and composed("algo=mac").algo.model.advantage is False


def test_gamma_null_keeps_the_algorithm_value_and_a_number_overrides_it():
    assert effective_gamma(composed("algo=ppo")) == 0.999
    assert effective_gamma(composed("algo=ppo", "gamma=0.98")) == 0.98


CONTINUOUS = "half_cheetah, lunar_lander_continuous"
DISCRETE = "blackjack, cartpole, frozen_lake, lunar_lander, pong"


@pytest.mark.parametrize(
    "algo,env,supported",
    [
        ("dqn", "lunar_lander_continuous", DISCRETE),
        ("sac", "lunar_lander", CONTINUOUS),
        ("td3", "pong", CONTINUOUS),
        ("mac", "half_cheetah", DISCRETE),
        ("mac_adv", "lunar_lander_continuous", DISCRETE),
        ("q_learning", "cartpole", "blackjack, frozen_lake"),
        ("q_learning", "pong", "blackjack, frozen_lake"),
    ],
)
def test_incompatible_pair_is_rejected_naming_supported_envs(algo, env, supported):
    with pytest.raises(ConfigError) as info:
        validate(composed(f"algo={algo}", f"env={env}"))
    message = str(info.value)
    assert f"algo={algo}" in message and f"env={env}" in message
    assert f"Envs it supports: {supported} " in message


def test_wrong_type_is_rejected_by_the_schema():
    with pytest.raises(ConfigCompositionException) as info:
        composed("seed=abc")
    assert "could not be converted to Integer" in str(info.value.__cause__)


@pytest.mark.parametrize(
    "value, written", [("1e6", "1000000 or total_timesteps=1_000_000"), ("2.5e5", "250000 or"), ("3.0", "3")]
)
def test_a_budget_written_as_a_float_says_how_to_write_it(tmp_path, monkeypatch, value, written):
    """``total_timesteps=1e6``, as SB3's examples write budgets (``int(1e6)``): Hydra reads a float, which an integer
    key refuses; the line says how to write it (before: only "could not be converted to Integer")."""
    from lander.config.precheck import check_command

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        check_command([f"total_timesteps={value}"])
    assert f"an integer key: write total_timesteps={written}" in str(info.value)
    with pytest.raises(ConfigError) as fraction:
        check_command(["total_timesteps=1.5"])
    assert "write" not in str(fraction.value)  # not a whole number: nothing to suggest


# (overrides, text the error must contain)
GET_CLASS, ELU = "hydra.utils.get_class", "torch.nn.ELU"
BAD_INPUT = [
    (["gamma=1.5"], "gamma=1.5 is not allowed: gamma must be null or in (0, 1]"),
    (["+seeed=3"], "unknown key 'seeed' in override '+seeed=3'. Did you mean 'seed'?"),  # added, read by nothing
    (["++total_timestep=3000"], "Did you mean 'total_timesteps'?"),
    (["gamma=0"], "gamma=0.0 is not allowed"),
    (["total_timesteps=0"], "total_timesteps=0 is not allowed"),
    (["total_timesteps=-5"], "total_timesteps=-5 is not allowed"),
    (["eval.episodes=0"], "eval.episodes=0 is not allowed: eval.episodes must be an integer >= 1"),
    (["n_envs=0"], "n_envs=0 is not allowed"),
    (["algo=sac"], "Envs it supports: half_cheetah, lunar_lander_continuous "),
    (["algo=dqn", "env=lunar_lander_continuous"], "Envs it supports: blackjack, cartpole, frozen_lake, lunar_lander"),
    (["algo=q_learning"], "q_learning supports discrete observation spaces and lunar_lander has a vector one"),
    (["comparison_band=wide"], "comparison_band='wide' is not allowed: comparison_band must be one of: seeds, "),
    (["algo=nope"], "Available options in 'algo'"),
    (["env=mars"], "Available options in 'env'"),
    (["learning_rate=0.1"], "unknown key 'learning_rate' in override 'learning_rate=0.1'. Top-level keys are algo, "),
    (["learning_rate=0.1"], "algorithm hyperparameters go under algo.model (algo.model.learning_rate=0.1)"),
    (
        ["total_timestep=3000"],
        "unknown key 'total_timestep' in override 'total_timestep=3000'. Did you mean 'total_timesteps'?",
    ),
    (
        ["eval.episode=5"],
        "unknown key 'eval.episode' in override 'eval.episode=5'. Did you mean 'episodes'? Keys of eval are "
        "deterministic, episodes, freq, n_envs, seed",
    ),
    # a key added (+) inside one of lander's own nodes is read by nothing: it was trained with, silently
    (
        ["+eval.episode=5"],
        "unknown key 'eval.episode' in override '+eval.episode=5'. Did you mean 'episodes'? Keys of eval are "
        "deterministic, episodes, freq, n_envs, seed",
    ),
    (["++video.fsp=10"], "unknown key 'video.fsp' in override '++video.fsp=10'. Did you mean 'fps'? Keys of video"),
    (["+algo.n_env=4"], "unknown key 'algo.n_env' in override '+algo.n_env=4'. Did you mean 'n_envs'? Keys of algo"),
    (
        ["+env.normalize.obs=true"],
        "unknown key 'env.normalize.obs' in override '+env.normalize.obs=true'. Keys of env.normalize are clip_obs, "
        "clip_reward, enabled, epsilon, gamma, norm_obs, norm_reward",
    ),
    (["env.normalize.obs=true"], "unknown key 'env.normalize.obs' in override 'env.normalize.obs=true'. Keys of e"),
    (["+env.normalise.enabled=true"], "unknown key 'env.normalise.enabled' in override '+env.normalise.enabled=t"),
    (["+env.normalise.enabled=true"], "Did you mean 'normalize'? Keys of env are action_space, id, kwargs, name,"),
    (["+early_stop.patients=3"], "Did you mean 'patience'? Keys of early_stop are min_improvement, patience, rew"),
    (["algo.model.lr=0.1"], "stable_baselines3.PPO takes no parameter 'lr'. Did you mean 'learning_rate'?"),
    (["+algo.model.lr=0.1"], "stable_baselines3.PPO takes no parameter 'lr'. Did you mean 'learning_rate'?"),
    (
        ["algo=q_learning", "env=frozen_lake", "algo.model.alfa=0.5"],
        "QLearning takes no parameter 'alfa'. Did you mean 'alpha'?",
    ),
    (
        ["algo.model.sde_sample_freq=4"],
        "algo.model.sde_sample_freq is a parameter of stable_baselines3.PPO that "
        "algo=ppo does not set; add it with a '+': +algo.model.sde_sample_freq=4",
    ),
    (
        ["+experiment=gamma_sweep"],
        "this preset is a sweep (gamma=0.98,0.99,0.999; seed=0,1,2) and runs with "
        "--multirun: python -m lander.run --multirun experiment=gamma_sweep",
    ),
    (
        ["budget_rounding=sideways"],
        "budget_rounding='sideways' is not allowed: budget_rounding must be one of: up, down",
    ),
    (["seed=abc"], "seed"),
    (["logger.wandb.mode=online"], "logger.wandb.mode=online needs a W&B API key"),
    (["env.id=NoSuchEnv-v0"], "env.id='NoSuchEnv-v0': Gymnasium has no such environment"),
    (["seed=4294967296"], "seed=4294967296 is not allowed: seed must be an integer in [0, 2**32)"),
    (["algo.model.gamma=2.0"], "algo.model.gamma=2.0 is not allowed: algo.model.gamma must be a number in (0, 1]"),
    (["algo=ppp"], "Could not find 'algo/ppp'; Available options in 'algo': a2c, dqn"),
    (
        ["algo=dqn", "algo.model.buffer_size=1e15"],
        "algo.model.buffer_size=1000000000000000.0 is not allowed: algo.model.buffer_size must be an integer >= 1",
    ),
    (["algo=dqn", "algo.model.buffer_size=10000000000000"], "this run needs about 840,000.0 GB of memory (replay"),
    (["algo.model.n_steps=1000000000000"], "needs about 2,048,000.0 GB of memory (rollout buffer 2,048,000.0 GB"),
    (["n_envs=10000000"], "(training envs 1,100.0 GB, rollout buffer 1,310.7 GB: from n_envs, eval.n_envs, eval."),
    (["eval.episodes=100000000000"], "needs about 120,000.0 GB of memory (evaluation episodes 120,000.0 GB: from"),
    (["logger.mode=online"], "unknown key 'logger.mode' in override 'logger.mode=online': logger holds one node per"),
    (["logger.mode=online"], "Did you mean 'logger.wandb.mode'"),
    (["logger.tensorboard=true"], "trackers are chosen with the logger group (logger=none, logger=tensorboard, "),
    (["logger.wandb.projct=x"], "unknown key 'logger.wandb.projct' in override 'logger.wandb.projct=x'. Did you mean"),
    (  # a class with no __init__ of its own takes no argument (it failed mid-run, with Hydra's traceback)
        ["logger=tensorboard", "+logger.tensorboard.log_dir=tb"],
        "unknown key 'logger.tensorboard.log_dir': lander.tracking.tensorboard_tracker.TensorBoardTracker takes no "
        "parameter 'log_dir'. It takes none",
    ),
    (["env=pong", "env.normalize.enabled=true"], "env.normalize.enabled=true: pong has image observations;"),
    (["env.normalize.enabled=true", "env.normalize.clip_obs=-1"], "env.normalize.clip_obs=-1.0 is not allowed"),
    (["memory_limit_mb=0"], "memory_limit_mb=0.0 is not allowed: memory_limit_mb must be null or a number of MB > 0"),
    (["memory_limit_mb=500", "monitor_freq=0"], "memory_limit_mb is checked every monitor_freq steps: it needs"),
    (["seeds_per_process=0"], "seeds_per_process=0 is not allowed: seeds_per_process must be an integer >= 1"),
    (  # was "..., and algo=dqn (...); only PPO and A2C (...) are (or seeds_per_process=1)"
        ["algo=dqn", "seeds_per_process=2"],
        "seeds_per_process=2 trains seeds side by side on the batched engine, which implements PPO and A2C only "
        "(stable_baselines3.PPO, stable_baselines3.A2C), not algo=dqn (algo.model._target_=stable_baselines3.DQN): "
        "give seeds_per_process=1",
    ),
    (["algo=a2c", "seeds_per_process=2", "+algo.model.batch_size=8"], "does not implement algo.model.batch_size (it"),
    (
        ["algo=a2c", "seeds_per_process=2", "+algo.model.policy_kwargs.optimizer_kwargs.momentum=0.9"],
        "does not implement algo.model.policy_kwargs.optimizer_kwargs.momentum (it implements alpha, betas, eps,",
    ),
    (
        ["algo=a2c", "seeds_per_process=2", "+algo.model.policy_kwargs.optimizer_class=torch.optim.SGD"],
        "implements optimizer_class torch.optim.Adam, torch.optim.RMSprop, stable_baselines3.common.sb2_compat.rmsprop_"
        "tf_like.RMSpropTFLike only, not algo.model.policy_kwargs.optimizer_class=torch.optim.SGD: give seeds_per_",
    ),
    (["env=pong", "seeds_per_process=2"], "which takes vector observations only (MlpPolicy), not env=pong's image on"),
    (["seeds_per_process=2", "+algo.model.use_sde=true"], "which does not implement algo.model.use_sde=true (gSDE)"),
    (
        ["seeds_per_process=2", "+algo.model.policy_kwargs={share_features_extractor:false}"],
        "does not implement algo.model.policy_kwargs.share_features_extractor (it implements activation_fn,",
    ),
    (
        ["seeds_per_process=2", "device=auto"],
        "which runs its rollouts and updates in NumPy on the CPU: device=cpu only, not device=auto: give seeds_per_p",
    ),
    (
        ["algo=sac", "env=lunar_lander_continuous", "batched_engine=true"],
        "batched_engine=true trains a seed on the batched engine, which implements PPO and A2C only",
    ),
    (
        ["batched_engine=true", "device=auto"],
        "device=cpu only, not device=auto: give batched_engine=false",
    ),
    (["batched_engine=2"], "batched_engine=2 is not allowed: batched_engine must be true or false"),
    (["log_grad_norm=yes"], "log_grad_norm='yes' is not allowed: log_grad_norm must be true or false"),
    (
        ["--multirun", "seed=0,1", "video.enabled=true,0"],
        "video.enabled=0 is not allowed: video.enabled must be true or",
    ),
    (
        ["seeds_per_process=2", f"+algo.model.policy_kwargs={{activation_fn:{{_target_:{GET_CLASS},path:{ELU}}}}}"],
        "implements activation_fn torch.nn.Tanh, torch.nn.ReLU, torch.nn.Identity only, not algo.model.policy_kwargs.a",
    ),
    (
        ["--multirun", "seed=0,1", "seeds_per_process=2", "hydra/launcher=joblib"],
        "seeds_per_process=2 groups the seeds of a sweep into processes, which lander's launcher does",
    ),
    (
        ["--multirun", "seed=0,1", "hydra/launcher=ray", "hydra.launcher.ray.init.address=ray://127.0.0.1:1"],
        "hydra.launcher.ray.init.address=ray://127.0.0.1:1: no Ray cluster answers there",
    ),
    pytest.param(  # submitit failed on it with a traceback, after writing the sweep's multirun.yaml
        ["--multirun", "seed=0,1", "hydra/launcher=submitit_slurm"],
        "hydra/launcher=submitit_slurm needs SLURM and this machine has none (no srun on PATH)",
        marks=pytest.mark.skipif(shutil.which("srun") is not None, reason="SLURM is here"),
    ),
    # the same job twice: trained twice, counted once by the comparison
    (  # without --multirun: Hydra's "Value 'ChoiceSweep(tags=set(), list=[0, 1, 2], ...)' ... could not be converted"
        ["seed=0,1,2", "env=cartpole"],
        "seed=0,1,2 sweeps its values, a job each, which needs --multirun: python -m lander.run --multirun seed=0,1,2 "
        "env=cartpole",
    ),
    (["seed=range(3)"], "python -m lander.run --multirun 'seed=range(3)'"),  # quoted for the shell
    (["--cfg", "job", "seed=0,1"], "seed=0,1 sweeps its values, a job each; --cfg and --info print one job's conf"),
    (["--multirun", "seed=0,1,0"], "seed=0,1,0: 0 given more than once; a sweep runs each value once"),
    (["--multirun", "seed=0,1", "hydra.launcher.n_jobs=0"], "hydra.launcher.n_jobs=0 is not allowed: it must be a p"),
    (["--multirun", "seed=0,1", "hydra.launcher.n_jobs=two"], "hydra.launcher.n_jobs='two' is not allowed: it must"),
    (["--multirun", "algo=ppo,a2c,ppo", "seed=0,1"], "algo=ppo,a2c,ppo: ppo given more than once"),
    (["--multirun", "gamma=0.99,0.990"], "gamma=0.99,0.990: 0.99 given more than once"),
    (["--multirun", "seed=0,1", "--cfg", "job"], "--multirun and --cfg: only one of --run, --multirun, --cfg,"),
    # Hydra's flags that compose another config than the one lander checked: checked one, ran another
    (["--config-dir", "/elsewhere", "env=mine"], "--config-dir: lander composes its own config (config.yaml) with"),
    (["--config-name=other"], "--config-name: lander composes its own config (config.yaml) with ./conf"),
    (["-cp", "/elsewhere"], "hydra.searchpath=[file:///absolute/folder] adds a folder of configs"),
    # the env's own check of its arguments, which was a traceback
    (["+env.kwargs.gravity=5.0"], "env.kwargs: LunarLander-v3 cannot be made with {'gravity': 5.0} (AssertionError: g"),
    (  # was Gymnasium's TypeError ("got an unexpected keyword argument")
        ["+env.kwargs.gravty=-5.0"],
        "unknown key 'env.kwargs.gravty': LunarLander-v3 takes no parameter 'gravty'. Did you mean 'gravity'? It takes "
        "render_mode, continuous, gravity, enable_wind, wind_power, turbulence_power, max_episode_steps, disable_env_c",
    ),
    (  # without the '+': Hydra's "Could not override 'env.kwargs.gravity'.; To append to your config use +env..."
        ["env.kwargs.gravity=-5.0"],
        "env.kwargs.gravity is a parameter of LunarLander-v3 that env=lunar_lander does not set; add it with a '+': "
        "+env.kwargs.gravity=-5.0",
    ),
    (["env.kwargs.gravty=-5.0"], "unknown key 'env.kwargs.gravty': LunarLander-v3 takes no parameter 'gravty'. Did"),
    (["env=cartpole", "+env.kwargs.ms=3"], "CartPole-v1 takes no parameter 'ms'. It takes sutton_barto_reward, rend"),
    # the env took any value: 'no' (a string, true to Python) trained with wind, without a word
    (["+env.kwargs.enable_wind=no"], "env.kwargs.enable_wind must be true or false (LunarLander-v3's default: False)"),
    (["env=cartpole", "+env.kwargs.sutton_barto_reward=0"], "env.kwargs.sutton_barto_reward=0 is not allowed: env.k"),
    (["+env.kwargs.wind_power=true"], "env.kwargs.wind_power=True is not allowed: env.kwargs.wind_power must be a num"),
    (["+env.kwargs.gravity=abc"], "env.kwargs.gravity='abc' is not allowed: env.kwargs.gravity must be a number (L"),
    # the names lander finds a run's files by: the log went out of the run; a run without .hydra/ is no run to it
    (["hydra.job.name=../x"], "hydra.job.name=../x: lander keeps hydra.job.name as it is: it names the run's log"),
    (["hydra.output_subdir=null"], "hydra.output_subdir=null: lander keeps hydra.output_subdir as it is: it names"),
    (["++hydra.output_subdir=cfg"], "++hydra.output_subdir=cfg: lander keeps hydra.output_subdir as it is"),
    # every job of the sweep in one directory: seed 1's run overwrote seed 0's, and the comparison had one run
    (["--multirun", "seed=0,1", "hydra.sweep.subdir=x"], "hydra.sweep.subdir=x: lander keeps hydra.sweep.subdir as"),
    # the sweeper kept the last without a word: seed=range(0,3) seed=1,2 ran seeds 1 and 2
    (["--multirun", "seed=range(0,3)", "seed=1,2"], "seed is given 2 times in a sweep (seed=range(0,3) and seed=1,2)"),
    (["--multirun", "seed=0,1", "gamma=0.9", "+seed=2"], "seed is given 2 times in a sweep (seed=0,1 and +seed=2)"),
    (["--multirun", "seed=0,1", "gamma=["], "no viable alternative at input '['"),  # Hydra's words, in one line
    # what lander gives the model itself: the key was ignored
    (["+algo.model.device=cuda"], "algo.model.device is not allowed: lander gives the model device= (checked"),
    (["+algo.model.seed=5"], "algo.model.seed is not allowed: lander gives the model the run's seed="),
    # failed in the run's directory, after its envs were made
    (["algo.model.policy=Foo"], "algo.model.policy='Foo' is not allowed: algo.model.policy must be one of SB3's Ml"),
    (["algo.model.policy=CnnPolicy"], "algo.model.policy=CnnPolicy is for image observations, and env=lunar_lander"),
    # refused once Hydra had made the run's directory (then removed), with advice to edit lander's own YAML
    (["+env.kwargs.continuous=true"], "env.action_space='discrete' (env=lunar_lander) does not match LunarLander-v3's"),
    (
        ["+env.kwargs.continuous=true"],
        "made with env.kwargs {'continuous': True}, a continuous one: env=lunar_lander_c",
    ),
    (["env=lunar_lander_continuous", "env.kwargs.continuous=false"], "a discrete one: env=lunar_lander declares it"),
    # a baseline that names no configuration: found once every job had trained, then the first was used instead
    (["--multirun", "gamma=0.9,0.99", "baseline='gamma=0.5'"], "baseline='gamma=0.5' names no configuration of this"),
    (["--multirun", "algo=ppo,a2c", "gamma=0.9,0.99", "baseline='algo=ppo'"], "which the comparison names 'algo=pp"),
    (["--multirun", "experiment=gamma_sweep", "gamma=0.9,0.95"], "baseline='gamma=0.99' names no configuration of t"),
    (["--multirun", "seed=0,1", "baseline=gamma=0.5"], "baseline=gamma=0.5: mismatched input '=' expecting <EOF>; "),
    (["--multirun", "seed=0,1", "baseline=gamma=0.5"], '(a value that holds "=", spaces or letters beyond ASCII is q'),
    (["--multirun", "seed=0,1", "baseline=gamma=0.5"], "is quoted: \"baseline='gamma=0.5'\")"),
    # a wrapper not found, or refusing its arguments: Hydra's error once it had made the run's directory, exit 1
    (["env=cartpole", "env.wrappers=[{_target_: nope.Wrapper}]"], "env.wrappers[0]._target_='nope.Wrapper' cannot be"),
    (
        ["env=cartpole", "env.wrappers=[{_target_: gymnasium.wrappers.TimeLimit, max_episode_steps: -5}]"],
        "env.wrappers[0] (gymnasium.wrappers.TimeLimit) cannot wrap CartPole-v1: ValueError: Expect the `max_episode_",
    ),
    (["env=cartpole", "env.wrappers=[foo]"], "env.wrappers[0]='foo' is not allowed: env.wrappers[0] must be a wrapper"),
    # an image env's buffers, of its frames as its wrappers make them (4 x 84 x 84): not estimated, a MemoryError
    # once the run's directory was made, or the machine's memory filled mid-run
    (["env=pong", "algo=dqn", "algo.model.buffer_size=10000000"], "(replay buffer 564.7 GB: from n_envs, eval.n_envs"),
    (  # an image env's too: Pong's preprocessing around an ALE v5 game, which skips frames itself
        ["env=pong", "algo=a2c", "env.id=ale_py:ALE/Breakout-v5"],
        "env.wrappers[0] (gymnasium.wrappers.AtariPreprocessing) cannot wrap ale_py:ALE/Breakout-v5: ValueError: Dis",
    ),
    # Hydra's own keys were not parsed before Hydra: its traceback, exit 1 (a run directory of a name beyond ASCII)
    (["hydra.run.dir=my runs/é"], "hydra.run.dir=my runs/é: LexerNoViableAltException: hydra.run.dir=my runs/é; "),
    (["hydra.run.dir=my runs/é"], "beyond ASCII is quoted: \"hydra.run.dir='my runs/é'\")"),
    (["--multirun", "seed=0,1", "hydra.sweep.dir=a=b"], "hydra.sweep.dir=a=b: mismatched input '=' expecting <EOF>"),
    # "File name too long" once Hydra made the run's directory (algo.name, env.name) or TensorBoard its (run_name)
    ([f"run_name={'r' * 300}", "logger=tensorboard"], "or control characters, at most 100 bytes"),
    (["logger=none", f"algo.name={'a' * 101}"], f"algo.name='{'a' * 101}' is not allowed: algo.name must be a plain"),
    # never reached, without a word
    (["early_stop.reward_threshold=nan"], "early_stop.reward_threshold=nan is not allowed: early_stop.reward_threshol"),
    (["env.reward_threshold=nan"], "env.reward_threshold=nan is not allowed: env.reward_threshold must be null or a f"),
    # W&B's own checks of what wandb.init is given: its traceback in the run's directory, after the envs were made
    (["logger.wandb.project=../x"], "logger.wandb.project: W&B refuses it: Invalid project name '../x': cannot cont"),
    (["logger.wandb.tags=[ok,'']"], "logger.wandb.tags (a W&B tag): W&B refuses it: Tag at index 1 is empty. Tags mu"),
    ([f"env.name={'e' * 65}"], "env.name (a W&B tag): W&B refuses it: Tag 'eeeeeeeeeeeeeeeeeeee...eeeeeeeeeeeeeeee"),
    (["--multirun", "algo=ppo,a2c", f"algo.name=ppo,{'a' * 65}"], "algo.name (a W&B tag): W&B refuses it: Tag 'aaa"),
    # SB3's TypeError in the run's directory; a layer of width 0, or a key SB3 does not read, trained without a word
    (["+algo.model.policy_kwargs={net_arch:[-1]}"], "algo.model.policy_kwargs.net_arch=[-1] is not allowed: algo.mod"),
    (["+algo.model.policy_kwargs={net_arch:[64,0]}"], "net_arch=[64, 0] is not allowed: algo.model.policy_kwargs.net"),
    (["+algo.model.policy_kwargs={net_arch:abc}"], "must be a list of hidden layers' widths, integers >= 1 (or a dict"),
    (["+algo.model.policy_kwargs={net_arch:{pi:[64],fv:[64]}}"], "(or a dict of such lists: {pi: [...], vf: [...]})"),
    (["algo=dqn", "~algo.model.policy_kwargs.net_arch", "+algo.model.policy_kwargs.net_arch={pi:[8]}"], "(DQN takes"),
    (
        [
            "algo=sac",
            "env=lunar_lander_continuous",
            "~algo.model.policy_kwargs",
            "+algo.model.policy_kwargs={net_arch:{pi:[64]}}",
        ],
        "net_arch={'pi': [64]} is not allowed: algo.model.policy_kwargs.net_arch must be a list of hidden layers' w",
    ),
    # 320 GB of weights: a RuntimeError (can't allocate memory) in the run's directory, or the OOM killer
    (["+algo.model.policy_kwargs={net_arch:[100000,100000]}"], "needs about 320.0 GB of memory (networks 320.0 GB:"),
    (["seeds_per_process=4", "n_envs=1000000"], "; the 4 seeds of seeds_per_process=4 together) and this machine"),
]


OUT_OF_RANGE = [  # each ran before, then crashed late or trained nonsense silently
    (["algo.model.learning_rate=inf"], "algo.model.learning_rate must be a finite number"),
    (["+algo.model.gamma=2.0"], "An item is already at 'algo.model.gamma'"),
    (["algo.model.gae_lambda=nan"], "algo.model.gae_lambda must be a finite number"),
    (["algo.model.gae_lambda=1.5"], "algo.model.gae_lambda must be a number in [0, 1]"),
    (["algo.model.ent_coef=inf"], "algo.model.ent_coef must be a finite number"),
    (["algo=sac", "env=lunar_lander_continuous", "algo.model.tau=nan"], "algo.model.tau must be a finite number"),
    (["algo=sac", "env=lunar_lander_continuous", "algo.model.tau=0"], "algo.model.tau must be a number in (0, 1]"),
    (["algo.model.clip_range=-1"], "algo.model.clip_range must be a finite number > 0"),
    (["algo=dqn", "algo.model.exploration_fraction=-1"], "algo.model.exploration_fraction must be a number in [0, 1]"),
    (["algo=dqn", "algo.model.train_freq=0"], "algo.model.train_freq must be an integer >= 1"),
    (["algo=dqn", "algo.model.gradient_steps=0"], "algo.model.gradient_steps must be an integer >= 1, or -1"),
    (["algo=dqn", "algo.model.buffer_size=0"], "algo.model.buffer_size must be an integer >= 1"),
    (["eval.seed=4294967296"], "eval.seed must be an integer in [0, 2**32)"),
    (["gamma=abc"], "Value 'abc' of type 'str' could not be converted to Float"),
    (["env.id=LunarLander-v9"], "Gymnasium has no such environment (did you mean LunarLander-v3,"),
    # a model key given a word or a bool where it takes a number: true trained one epoch, a word failed in the run
    (["algo.model.n_epochs=true"], "algo.model.n_epochs=True is not allowed: algo.model.n_epochs must be an integer"),
    (["algo.model.n_epochs=a"], "algo.model.n_epochs='a' is not allowed: algo.model.n_epochs must be an integer"),
    (["algo.model.learning_rate=lin_0.001"], "algo.model.learning_rate='lin_0.001' is not allowed: algo.model.learni"),
    (["algo.model.batch_size=null"], "algo.model.batch_size=None is not allowed: algo.model.batch_size must be an"),
    (["algo=sac", "env=lunar_lander_continuous", "algo.model.ent_coef=autox"], "(or auto, auto_<initial value> for"),
    # an Optuna search whose settings or keys fail: a traceback once its optuna.db was made
    (
        ["hparams_search=ppo_optuna", "algo=a2c"],
        "hydra.sweeper.params.algo.model.gae_lambda: this config (algo=a2c, env",
    ),
    (["hparams_search=ppo_optuna", "hydra.sweeper.n_trials=0"], "hydra.sweeper.n_trials=0 is not allowed: n_trials m"),
    (["hparams_search=ppo_optuna", "hydra.sweeper.direction=up"], "hydra.sweeper.direction='up' is not allowed: maxi"),
    # seeds searched as a hyperparameter: the best trial the luckiest seed
    (["hparams_search=ppo_optuna", "seed=0,1"], "seed=0,1: with hparams_search, Optuna would search over the seeds"),
    # envs searched as a hyperparameter: the best trial the env of the largest returns (CartPole's 378 over LunarLander)
    (["--multirun", "hparams_search=ppo_optuna", "env=lunar_lander,cartpole"], "Optuna would search over 2 envs"),
    # more threads than cores: a 2,048-step run not finished after 300 s on 2 cores (13 s with 1)
    (["torch_threads=1000"], "torch_threads=1000 is not allowed: torch_threads must be 0 (torch's default) or 1 to "),
    # a stop rule without periodic evaluations: it could never stop the run, which trained its whole budget
    (["early_stop.reward_threshold=200", "eval.freq=0"], "early_stop.reward_threshold=200.0 stops training after an"),
    (["early_stop.patience=3", "eval.freq=0"], "early_stop.patience=3 stops training after an evaluation, and eval"),
]


def case_id(case: object) -> str:
    overrides = case.values[0] if hasattr(case, "values") else case[0]  # type: ignore[index]
    return " ".join(overrides)


@pytest.mark.parametrize("overrides,message", BAD_INPUT + OUT_OF_RANGE, ids=map(case_id, BAD_INPUT + OUT_OF_RANGE))
def test_bad_input_is_refused_before_anything_is_made(tmp_path, monkeypatch, overrides, message):
    """What ``python -m lander.run`` checks before Hydra makes a directory (:func:`check_command`), in-process;
    the exit path itself (one line, exit 2, nothing written) is the next test's, for each kind of error."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))  # no W&B key from ~/.netrc
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    run_dir = tmp_path / "run"
    with pytest.raises(ConfigError) as refused:
        check_command([*overrides, f"hydra.run.dir={run_dir}"])
    assert message in str(refused.value)
    assert not run_dir.exists()


def test_a_stop_rule_without_evaluations_is_refused_in_a_new_run_not_in_a_saved_one_resumed():
    cfg = composed("early_stop.patience=3", "eval.freq=0")
    with pytest.raises(ConfigError, match=re.escape("early_stop.patience=3 stops training after an evaluation")):
        validate(cfg)
    cfg.resume = "/runs/older"  # a run an older lander made with these values: it resumes as it ran
    validate(cfg)


def test_a_run_or_sweep_directory_that_exists_is_a_run_a_sweep_or_empty_never_a_folder_of_other_files(
    tmp_path, monkeypatch
):
    """``check_command`` refuses a ``hydra.run.dir`` / ``hydra.sweep.dir`` that holds files of its own (``.`` in a
    project too), and takes a new or empty one, one holding only the service's log (the service makes it before it
    starts the run), a run's (a re-run, a user's notes beside it) and a sweep's."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))  # no W&B key from ~/.netrc
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "notes.md").write_text("mine\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "started-by-the-service").mkdir()
    (tmp_path / "started-by-the-service" / "service.log").write_text("")
    for command, key in ((["total_timesteps=64"], "hydra.run.dir"), (["-m", "seed=0,1"], "hydra.sweep.dir")):
        for given in (str(project), "."):
            monkeypatch.chdir(project)
            refused = rf"^{key}={re.escape(given)} holds files of its own \(notes.md, src\)"
            with pytest.raises(ConfigError, match=refused):
                check_command([*command, f"{key}={given}"])
        monkeypatch.chdir(tmp_path)
        for name in ("empty", "started-by-the-service"):
            check_command([*command, f"{key}={tmp_path / name}"])
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("seed: 0\n")
    (run / ".hydra" / "overrides.yaml").write_text("- total_timesteps=64\n")  # this command's run
    (run / "notes.md").write_text("mine\n")
    check_command(["total_timesteps=64", f"hydra.run.dir={run}"])
    for mark in ("multirun.yaml", "optuna.db", "0/.hydra/config.yaml"):
        sweep = tmp_path / mark.replace("/", "_")
        (sweep / mark).parent.mkdir(parents=True)
        (sweep / mark).write_text("")
        (sweep / "notes.md").write_text("mine\n")
        check_command(["-m", "seed=0,1", f"hydra.sweep.dir={sweep}"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["project", "empty", "started-by-the-service", "run", "multirun.yaml", "optuna.db", "0_.hydra_config.yaml"]
    )  # nothing made


def test_a_run_or_sweep_is_not_made_inside_a_runs_directory(tmp_path, monkeypatch):
    """A command run from inside a run's directory (a user who went there to read its files) made its run at
    ``<run>/outputs/<date>/...``, or any ``hydra.run.dir=<run>/x``: ``lander.compare <run>`` then compared the new
    run with it, as one folder of runs. Refused in one line naming the run, nothing made; beside it is fine."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))  # no W&B key from ~/.netrc
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    elsewhere = tmp_path / "hydra-app"  # another Hydra app's run (no summary.json): lander's runs may go below it
    (elsewhere / ".hydra").mkdir(parents=True)
    (elsewhere / ".hydra" / "config.yaml").write_text("lr: 0.1\n")
    check_command(["total_timesteps=64", f"hydra.run.dir={elsewhere / 'mine'}"])
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("seed: 0\n")
    (run / "summary.json").write_text('{"status": "completed"}\n')
    inside = rf"is inside the run {re.escape(str(run))}: a run's directory holds that run's files only"
    for command, key in ((["total_timesteps=64"], "hydra.run.dir"), (["-m", "seed=0,1"], "hydra.sweep.dir")):
        with pytest.raises(ConfigError, match=rf"^{key}={re.escape(str(run / 'deeper' / 'x'))} {inside}"):
            check_command([*command, f"{key}={run / 'deeper' / 'x'}"])
        monkeypatch.chdir(run)  # the default directory, outputs/<date>/<time>_... (multirun/...) of the working one
        with pytest.raises(ConfigError, match=inside + r".*run the command from outside it"):
            check_command(command)
        monkeypatch.chdir(tmp_path)
        check_command([*command, f"{key}={tmp_path / 'beside'}"])
        check_command([*command, f"{key}={run / '..' / 'beside'}"])  # beside too: refused as inside the run
        monkeypatch.chdir(run)
        check_command([*command, f"{key}=../beside"])
        monkeypatch.chdir(tmp_path)
    assert sorted(p.name for p in run.iterdir()) == [".hydra", "summary.json"]  # nothing made


def test_a_run_or_sweep_continued_here_holds_no_link_out_of_it(tmp_path, monkeypatch):
    """A downloaded run whose ``run.log`` links to a file of yours: continuing it (``resume=``, its own command, a
    sweep re-run) appended the log to that file, and a resume copied a linked ``metrics/`` file's lines into the run.
    Refused before Hydra opens anything; W&B's own links (to ~/.cache) are not links lander writes through."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    yours = tmp_path / "yours.txt"
    yours.write_text("precious\n")

    def planted(root: Path, link: str) -> Path:
        (root / ".hydra").mkdir(parents=True)
        (root / ".hydra" / "config.yaml").write_text("seed: 0\n")
        (root / ".hydra" / "overrides.yaml").write_text("- total_timesteps=64\n")
        offline = root / "wandb" / "offline-run-20261128_100319-x" / "logs"
        offline.mkdir(parents=True)
        (offline / "debug-core.log").symlink_to(tmp_path / "cache-debug-core.log")  # W&B's own, out of the run
        (root / "wandb" / "latest-run").symlink_to(offline.parent)
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        (root / link).symlink_to(yours)
        return root

    for link in ("run.log", "metrics/train_episodes.csv"):
        run = planted(tmp_path / link.replace("/", "_"), link)
        said = rf"{link} links out of its directory \(to {re.escape(str(yours))}\)"
        with pytest.raises(ConfigError, match=rf"^resume={re.escape(str(run))}: {said}"):
            check_command([f"resume={run}", "total_timesteps=128"])
        with pytest.raises(ConfigError, match=rf"^hydra.run.dir={re.escape(str(run))}: {said}"):
            check_command(["total_timesteps=64", f"hydra.run.dir={run}"])
        (run / link).unlink()  # without it, the same commands pass: W&B's links are its own
        check_command(["total_timesteps=64", f"hydra.run.dir={run}"])
    loop = planted(tmp_path / "loop", "metrics/eval.csv")
    (loop / "metrics" / "eval.csv").unlink()
    (loop / "metrics" / "eval.csv").symlink_to(loop / "metrics" / "eval.csv")  # a loop: a traceback before
    with pytest.raises(ConfigError, match=r"metrics/eval.csv is a link that does not resolve"):
        check_command([f"resume={loop}", "total_timesteps=128"])
    sweep = tmp_path / "sweep"
    planted(sweep / "0", "run.log")
    (sweep / "multirun.yaml").write_text("")
    with pytest.raises(ConfigError, match=r"^hydra.sweep.dir=.*: 0/run.log links out of its directory"):
        check_command(["-m", "seed=0,1", "total_timesteps=64", f"hydra.sweep.dir={sweep}"])
    assert yours.read_text() == "precious\n"


def test_a_command_into_a_runs_directory_must_be_that_runs_command(tmp_path, monkeypatch):
    """``hydra.run.dir=<a run>`` continues that run, so ``check_command`` takes its overrides in any order (Hydra's
    own, ``hydra.*`` and ``hydra/...``, are not a run's) and refuses any other command, or a run whose overrides
    file cannot be read, before Hydra writes its config there."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("seed: 1\n")
    (run / ".hydra" / "overrides.yaml").write_text("- seed=1\n- algo=a2c\n")
    check_command(["algo=a2c", "seed=1", f"hydra.run.dir={run}", "hydra/launcher=basic"])
    for other, saved in ((["seed=1"], "seed=1 algo=a2c"), (["algo=a2c", "seed=2"], "seed=1 algo=a2c")):
        with pytest.raises(ConfigError, match=rf"holds a run of other overrides \({saved}; now: {' '.join(other)}\)"):
            check_command([*other, f"hydra.run.dir={run}"])
        with pytest.raises(ConfigError, match=rf"holds a run of other overrides \({saved}; now"):  # the run: not
            check_command([*other, f"hydra.run.dir={run / 'x' / '..'}"])  # seen as new (x is not there)
    (run / ".hydra" / "overrides.yaml").write_text("a: &a [*a]\n")
    with pytest.raises(ConfigError, match=r"\(overrides.yaml unreadable; now: seed=1 algo=a2c\)"):
        check_command(["seed=1", "algo=a2c", f"hydra.run.dir={run}"])
    assert sorted(p.name for p in run.rglob("*")) == [".hydra", "config.yaml", "overrides.yaml"]


EXITS = [  # one of each kind: lander's value check, Hydra's own error, the W&B key, a key unknown, the memory estimate
    (["gamma=1.5"], "gamma=1.5 is not allowed"),
    (["algo=ppp"], "Could not find 'algo/ppp'; Available options in 'algo': a2c, dqn"),
    (["gamma=abc"], "Value 'abc' of type 'str' could not be converted to Float"),
    (["logger.wandb.mode=online"], "logger.wandb.mode=online needs a W&B API key"),
    (["total_timestep=3000"], "Did you mean 'total_timesteps'?"),
    (["n_envs=10000000"], "(training envs 1,100.0 GB, rollout buffer 1,310.7 GB: from n_envs, eval.n_envs, eval."),
    # a model class that cannot be imported, or no algorithm: the run failed once its files were begun, exit 1
    (["algo.model._target_=stable_baselines3.PPOO"], "algo.model._target_='stable_baselines3.PPOO' cannot be imported"),
    (["algo.model._target_=stable_baselines3.common.callbacks.BaseCallback"], "is a class, not a stable_baselines3 B"),
]


@pytest.mark.parametrize("overrides,message", EXITS, ids=[" ".join(o) for o, _ in EXITS])
def test_bad_input_exits_2_before_training(tmp_path, overrides, message):
    run_dir = tmp_path / "run"
    env = lander_env(HOME=str(tmp_path), NETRC=str(tmp_path / "no-netrc"))
    proc = run_lander(run_dir, *overrides, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]  # Hydra's own errors too, in lander's one line
    assert message in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and not run_dir.exists()
    for result in ("summary.json", "model.zip", "eval.json", "metrics", "wandb", "video.mp4"):
        assert not (run_dir / result).exists(), f"{result} written for bad input"


def test_a_mujoco_env_checked_leaves_nothing_in_the_working_directory(tmp_path):
    """The memory estimate makes the env to read its spaces: MuJoCo's compiler warnings (HalfCheetah's XML has a
    deprecated attribute) go to logging, not to a ``MUJOCO_LOG.TXT`` in the user's working directory. In a new
    interpreter: MuJoCo's warning hook set by an earlier test of a process would hide it."""
    work = tmp_path / "work"
    work.mkdir()
    env = lander_env(HOME=str(tmp_path), NETRC=str(tmp_path / "no-netrc"))
    refused = ["env=half_cheetah", "algo=sac", "algo.model.buffer_size=10000000000000"]  # refused for its memory
    proc = lander(*refused, f"hydra.run.dir={tmp_path / 'run'}", cwd=work, env=env, timeout=120, cold=True)
    assert proc.returncode == 2 and "this run needs about" in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert sorted(path.name for path in work.iterdir()) == []


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ([f"seed={','.join(map(str, range(300)))},-1"], "seed=-1 is not allowed"),  # the last of 301 jobs
        (["algo=ppo,a2c", "gamma=0.9,0.99", "seed=range(0,50)", "algo.model.learning_rate=0.1,inf"], "=inf is not"),
        (["algo=ppo,a2c", "seed=0,1", "+algo.model.lr=0.1"], "stable_baselines3.PPO takes no parameter 'lr'"),
        (["env=cartpole,lunar_lander_continuous", "algo=ppo,sac"], "algo=sac cannot act in env=cartpole"),
    ],
)
def test_every_job_of_a_sweep_is_checked_composing_once_per_choice_of_files(sweep, message):
    """Jobs differing only in values are checked on one composition per choice of config files (algo, env, ...):
    the last of 301 seeds is still checked, and so is each algorithm's own model class."""
    from lander.config.precheck import check_command

    with pytest.raises(ConfigError, match=re.escape(message)):
        check_command(["--multirun", *sweep])
    kept = [o for o in sweep[:-1] if not o.startswith("seed=")]
    check_command(["--multirun", *kept, "seed=range(0,300)"])  # the same sweep without its bad value


@pytest.mark.parametrize(
    ("overrides", "said", "not_said"),
    [
        (["total_timestep=1000"], "Did you mean 'total_timesteps'?", "algo.model.total_timestep"),  # PPO has none
        (["lr=0.1"], "for algo=ppo: Did you mean 'algo.model.learning_rate'?", "algo.model.lr"),
        (["algo=dqn", "buffer=10"], "for algo=dqn: Did you mean 'algo.model.buffer_size'?", "algo.model.buffer="),
    ],
)
def test_an_unknown_key_is_sent_under_algo_model_only_where_the_model_has_it(overrides, said, not_said):
    from lander.config.keys import check_override_keys

    with pytest.raises(ConfigError) as info:
        check_override_keys(overrides)
    assert said in str(info.value) and not_said not in str(info.value)


def test_a_saved_config_cut_short_or_not_yaml_is_named_in_one_line_and_an_older_one_still_loads(tmp_path):
    """``.hydra/config.yaml`` as resume and evaluate read it (:func:`lander.config.schema.load_saved`)."""
    from omegaconf import OmegaConf

    from lander.config.schema import load_saved

    full = OmegaConf.to_yaml(composed("algo=ppo"))
    saved = tmp_path / "config.yaml"
    for text, said in ((full[:200], "it lacks "), ("a: [\n", "while parsing"), ("seed: abc\n", "at key 'seed'")):
        saved.write_text(text)
        with pytest.raises(ConfigError, match=re.escape(said)) as info:
            load_saved(saved)
        assert str(saved) in str(info.value) and "\n" not in str(info.value)
    older = "\n".join(line for line in full.splitlines() if not line.startswith(("run_name:", "torch_fast_paths:")))
    saved.write_text(older)  # written by a lander from before these keys: loads, with their defaults
    assert load_saved(saved).algo.name == "ppo"


def test_an_output_directory_that_cannot_be_made_exits_2_before_anything(tmp_path):
    """``outputs`` is a file (or, for a user other than root, a directory without write permission): one line naming
    it, exit 2, nothing written; not Hydra's NotADirectoryError traceback after composing."""
    (tmp_path / "outputs").write_text("a file where the runs would go")
    for args in (["total_timesteps=64"], ["--multirun", "seed=0,1", "hydra.sweep.dir=outputs/sweep"]):
        proc = lander(*args, cwd=tmp_path, timeout=120)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert f"{tmp_path / 'outputs'} is a file, not a directory" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["outputs"]
    if os.geteuid() != 0:  # root writes whatever the permissions say
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        proc = lander("total_timesteps=64", f"hydra.run.dir={locked}/run", cwd=tmp_path, timeout=120)
        assert proc.returncode == 2 and f"{locked} is not writable" in proc.stderr


EVALUATE_REFUSED = [  # each went on before: a traceback, or memory until the OOM killer
    (["seed=-1"], "seed=-1: must be null (the run's eval.seed) or an integer >= 0"),
    (["n_episodes=100000000000"], "n_episodes=100000000000: their records need about 120,000.0 GB of memory and"),
    # a model the run does not have: exit 1 after torch and the run were loaded, as if its evaluation had failed
    (["model=best.zip"], "model='best.zip': the run has no such file; "),
]


@pytest.mark.parametrize("argv,message", EVALUATE_REFUSED, ids=[" ".join(a) for a, _ in EVALUATE_REFUSED])
def test_evaluate_refuses_a_value_that_would_fail_later(tmp_path, argv, message):
    """``python -m lander.evaluate``'s check (:func:`lander.evaluate.check_command`), in-process: refused before a
    model is loaded; the same command with an allowed value passes."""
    from lander.evaluate import check_command as check_evaluate

    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text("seed: 0\n")
    (tmp_path / "model.zip").write_bytes(b"")  # what the check looks for; nothing is loaded
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_evaluate([f"run={tmp_path}", *argv])
    key = argv[0].split("=", 1)[0]
    allowed = {"seed": "seed=0", "n_episodes": "n_episodes=100000", "model": "model=model.zip"}
    check_evaluate([f"run={tmp_path}", allowed[key]])


def test_the_memory_estimate_counts_the_evaluation_envs_that_are_made(tmp_path):
    """An evaluation makes ``min(eval.n_envs, eval.episodes)`` envs: a large ``eval.n_envs`` alone is no reason to
    refuse a run, and many episodes on many envs are."""
    from lander.config.precheck import check_command

    check_command(["eval.n_envs=100000000", f"hydra.run.dir={tmp_path / 'run'}"])  # 20 episodes: 20 envs
    with pytest.raises(ConfigError, match=re.escape("(evaluation envs 11,000.0 GB, evaluation episodes 120.0 GB")):
        check_command(["eval.n_envs=100000000", "eval.episodes=100000000", f"hydra.run.dir={tmp_path / 'run'}"])


def planted_cgroup(root: Path, version: int, path: str, limits: dict[str, tuple[str, int, int]]) -> str:
    """Cgroup files as the kernel shows them under ``root`` (limit, usage, reclaimable cache for each directory of
    ``limits``, relative to the hierarchy); returns the ``/proc/self/cgroup`` text of a process in ``path``."""
    from lander.config.checks import CGROUP_FILES

    base = root if version == 2 else root / "memory"
    limit_name, usage_name, cache_name = CGROUP_FILES[version]
    for directory, (limit, usage, cache) in limits.items():
        (base / directory).mkdir(parents=True, exist_ok=True)
        (base / directory / limit_name).write_text(f"{limit}\n")
        (base / directory / usage_name).write_text(f"{usage}\n")
        (base / directory / "memory.stat").write_text(f"cache {cache * 2}\n{cache_name} {cache}\n")
    return ("0::" if version == 2 else "4:memory:") + path + "\n"


@pytest.mark.parametrize("version", [1, 2])
def test_a_memory_cgroups_limit_is_the_memory_a_run_has(tmp_path, version):
    """``psutil.virtual_memory()`` is the machine's: inside a container's ``--memory`` or a SLURM job's ``--mem`` the
    checks took the host's memory as available. Now the smallest limit over the process's cgroup and those above
    it, less what is used there (the reclaimable page cache not counted as used), where one limits it."""
    from lander.config.checks import NO_LIMIT, cgroup_memory

    no_limit = "max" if version == 2 else str(NO_LIMIT + 4096)
    membership = planted_cgroup(
        tmp_path,
        version,
        "/slurm/job_7/step_0",
        {
            "": (no_limit, 50 * 10**9, 0),  # the root: no limit
            "slurm": (no_limit, 10**9, 0),
            "slurm/job_7": (str(4 * 10**9), 3 * 10**9, 10**9),  # --mem=4G: 3 GB used, 1 GB of it page cache
            "slurm/job_7/step_0": (str(8 * 10**9), 3 * 10**9, 10**9),  # a larger limit below: the job's counts
        },
    )
    assert cgroup_memory(tmp_path, membership) == 2 * 10**9
    assert cgroup_memory(tmp_path, membership.replace("/slurm/job_7/step_0", "/slurm")) is None  # no limit there
    assert cgroup_memory(tmp_path, "1:cpu:/\n") is None  # no memory controller named
    assert cgroup_memory(tmp_path / "nothing", membership) is None  # no files there


def test_a_memory_cgroup_of_this_machine_is_seen_by_the_checks(tmp_path):
    """A real memory cgroup (cgroup v1, made where this process may): a run in it is checked against its limit."""
    import subprocess
    import sys

    cgroup = Path("/sys/fs/cgroup/memory") / f"lander-test-{os.getpid()}"
    try:
        cgroup.mkdir()
    except OSError as exc:
        pytest.skip(f"no memory cgroup can be made here ({exc.strerror})")
    try:
        (cgroup / "memory.limit_in_bytes").write_text(str(2 * 2**30))
        code = "from lander.config.checks import machine_memory; print(machine_memory())"
        shown = subprocess.run(
            ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh", sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=lander_env(),
        ).stdout
    finally:
        cgroup.rmdir()
    assert "memory cgroup (a container's or a job's limit) leaves" in shown
    assert 0 < float(shown.split("(")[1].split(",")[0]) <= 2 * 2**30


def test_a_sweeps_jobs_at_once_that_need_more_memory_than_there_is_are_warned_of(tmp_path, caplog):
    """Each job alone fits, ``hydra.launcher.n_jobs`` of them at once need not: joblib's 12 jobs in a 4 GiB cgroup
    had 8 processes OOM-killed. Said before the sweep starts, with how many fit; not a refusal (the figures are
    lower bounds, and the launchers survive a job the OOM killer ends)."""
    from lander.config.checks import JOB_BYTES, machine_memory, sweep_memory_warning

    available = machine_memory()[0]  # twice as many jobs as fit: the test's other processes may free some memory
    jobs = 2 * int(available // JOB_BYTES["JoblibLauncher"]) + 2
    warning = sweep_memory_warning("JoblibLauncher", jobs, [0.0] * jobs)
    assert warning is not None and warning.startswith(f"hydra.launcher.n_jobs={jobs}: this sweep runs {jobs} jobs")
    fit = re.search(r"by this count at most (\d+) fit: hydra.launcher.n_jobs=(\d+)\)$", warning)
    assert fit is not None and 1 <= int(fit[1]) == int(fit[2]) < jobs, warning
    assert sweep_memory_warning("JoblibLauncher", 1, [0.0] * jobs) is None  # one at a time
    assert sweep_memory_warning("JoblibLauncher", jobs, [0.0] * jobs, seeds_per_process=jobs) is None  # one process
    assert sweep_memory_warning("SlurmLauncher", jobs, [0.0] * jobs) is None  # elsewhere
    big = [available] * 3  # three jobs of a replay buffer of all the memory each, at once
    assert "(by this count at most 1 fit: hydra.launcher.n_jobs=1)" in str(
        sweep_memory_warning("ParallelLauncher", 3, big)
    )
    from lander.config.precheck import check_command  # the command: said before the sweep starts, and it runs

    sweep = ["--multirun", f"seed=range(0,{jobs})", "hydra/launcher=joblib", f"hydra.launcher.n_jobs={jobs}"]
    check_command([*sweep, "logger=none", f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    assert f"hydra.launcher.n_jobs={jobs}: this sweep runs {jobs} jobs at once" in caplog.text


@pytest.mark.parametrize(
    "algo,env_id,net_arch",
    [
        ("PPO", "LunarLander-v3", [64, 64]),
        ("PPO", "LunarLander-v3", {"pi": [32], "vf": [16, 8]}),
        ("A2C", "LunarLanderContinuous-v3", [64]),
        ("SAC", "Pendulum-v1", [400, 300]),
        ("TD3", "Pendulum-v1", {"pi": [64], "qf": [32]}),
        ("DQN", "CartPole-v1", [256, 256]),
    ],
)
def test_the_memory_estimate_counts_the_weights_sb3_builds_from_net_arch(algo, env_id, net_arch):
    """The networks' share of the memory estimate (``network_weights``) is the count of the parameters SB3 builds
    (the policy's, target networks included), at most a quarter above it (SAC's and TD3's actors are counted twice
    as large as SAC's is, a continuous actor's ``log_std`` is left out): a wrong layer product would be far off."""
    import stable_baselines3

    from lander.config.checks import env_spaces, network_weights

    off_policy = {"buffer_size": 10} if algo in ("SAC", "TD3", "DQN") else {}
    model = getattr(stable_baselines3, algo)("MlpPolicy", env_id, policy_kwargs={"net_arch": net_arch}, **off_policy)
    built = sum(p.numel() for p in model.policy.parameters())
    estimate = network_weights(algo, net_arch, env_spaces(env_id, {}))
    assert 0.99 * built <= estimate <= 1.25 * built


def test_env_kwargs_that_change_the_spaces_run_where_the_config_declares_those_spaces(tmp_path):
    """The spaces check compares the env made with ``env.kwargs`` with what its config declares: a config that
    declares them (``env.action_space=continuous`` beside ``continuous=true``) is taken."""
    from lander.config.precheck import check_command

    run = ["+env.kwargs.continuous=true", "env.action_space=continuous", "logger=none"]
    check_command([*run, f"hydra.run.dir={tmp_path / 'run'}"])
    # a bool's parameter takes true or false, a float's an integer too
    run = ["+env.kwargs.enable_wind=true", "+env.kwargs.gravity=-5", "+env.kwargs.wind_power=10.5", "logger=none"]
    check_command([*run, f"hydra.run.dir={tmp_path / 'run'}"])


def test_a_presets_own_launcher_and_sweeper_are_the_ones_a_sweep_uses(tmp_path, monkeypatch):
    """A preset that chooses Hydra's launcher or sweeper (``hparams_search=ppo_optuna``'s ``override
    /hydra/sweeper: optuna``, a user's ``override /hydra/launcher: joblib``) gets it: lander's own choices (its
    launcher, its checked basic sweeper) were first in the defaults list and won, so the documented
    ``python -m lander.run hparams_search=ppo_optuna`` was refused as "a sweep" and, with --multirun, failed in
    Hydra ("BasicSweeper.__init__() got an unexpected keyword argument 'direction'"). The command line still
    wins over a preset, and the checks see the launcher a preset chose."""
    from hydra import compose, initialize_config_dir

    from lander.config.precheck import check_command
    from lander.config.schema import CONF_DIR

    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /hydra/launcher: joblib\n"
        "hydra:\n  sweeper:\n    params:\n      seed: 0,1\n"
    )
    monkeypatch.chdir(tmp_path)
    register_configs()

    def chosen(*overrides: str) -> tuple[str, str]:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
        return cfg.hydra.launcher._target_.rpartition(".")[2], cfg.hydra.sweeper._target_.rpartition(".")[2]

    assert chosen() == ("ParallelLauncher", "CheckedBasicSweeper")
    assert chosen("hparams_search=ppo_optuna") == ("ParallelLauncher", "OptunaSweeper")
    assert chosen("experiment=mine") == ("JoblibLauncher", "CheckedBasicSweeper")
    assert chosen("experiment=mine", "hydra/launcher=parallel") == ("ParallelLauncher", "CheckedBasicSweeper")
    assert chosen("hparams_search=ppo_optuna", "hydra/sweeper=adastop")[1] == "AdaStopSweeper"
    check_command(["hparams_search=ppo_optuna", f"hydra.sweep.dir={tmp_path / 'search'}"])  # the docs' command
    check_command(["--multirun", "experiment=mine", "logger=none"])
    with pytest.raises(ConfigError, match=r"not hydra/launcher=joblib \(a preset's choice\)$"):
        check_command(["--multirun", "experiment=mine", "seeds_per_process=2", "logger=none"])


def test_callbacks_that_cannot_be_built_are_refused_before_anything_is_made(tmp_path, monkeypatch):
    """``callbacks`` were built as the run started: a name that does not import, a key the class does not take, one
    it needs and is not given, or no node at all made the run's directory, then removed it; a sweep launched
    every job, each failing so (on SLURM, a job each). A value of the wrong type for a parameter annotated ``int``
    (``max_episodes=many``) failed the run at its first step. Now one line naming the key, before anything is
    made."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    (tmp_path / "my_callbacks.py").write_text(
        "from stable_baselines3.common.callbacks import BaseCallback\n\n\n"
        "class Every(BaseCallback):\n"
        "    def __init__(self, every: int, **kwargs):\n"
        "        super().__init__(**kwargs)\n"
        "        self.every = every\n\n"
        "    def _on_step(self) -> bool:\n"
        "        return True\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    stop = "+callbacks.stop._target_=stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes"
    mine = "+callbacks.mine._target_=my_callbacks.Every"
    for given, said in (
        (["+callbacks.stop=5"], "callbacks.stop=5: a callback is a node {_target_: module.Class, its arguments}"),
        (["+callbacks.stop._target_=my_missing.Stop"], "callbacks.stop._target_='my_missing.Stop' cannot be imported"),
        ([stop, "+callbacks.stop.max_episode=3"], "unknown key 'callbacks.stop.max_episode': stable_baselines3.comm"),
        ([stop], "callbacks.stop: stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes needs 'max_episodes'"),
        ([mine], "callbacks.mine: my_callbacks.Every needs 'every', which it is not given: add +callbacks.mine.every="),
        ([mine, "+callbacks.mine.evry=3"], "unknown key 'callbacks.mine.evry': my_callbacks.Every takes no parameter"),
        (
            ["+callbacks.x._target_=collections.OrderedDict"],
            "callbacks.x._target_='collections.OrderedDict' is a class, not",
        ),
        (
            [stop, "+callbacks.stop.max_episodes=many"],
            "callbacks.stop.max_episodes='many' is not allowed: StopTrainingOn",
        ),
        ([mine, "+callbacks.mine.every=2.5"], "callbacks.mine.every=2.5 is not allowed: Every takes int there"),
    ):
        for sweep in ([], ["--multirun", "seed=0,1"]):
            with pytest.raises(ConfigError, match=f"^{re.escape(said)}"):
                check_command([*sweep, *given, "logger=none"])
    check_command(
        [stop, "+callbacks.stop.max_episodes=3", mine, "+callbacks.mine.every=2", "+callbacks.mine.verbose=1"]
    )
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["my_callbacks.py"]  # nothing made


def test_policy_kwargs_are_checked_against_the_policy_class(tmp_path, monkeypatch):
    """``algo.model.policy_kwargs`` reach the policy class: a key it does not take, or a class given by its name
    (``activation_fn=torch.nn.Tanh``), made the run's directory and failed there at 0 timesteps, exit 1, with
    Hydra's traceback; a key SAC's config sets its policy_kwargs without was said to be "a parameter of
    stable_baselines3.SAC" whatever its name. Now each is one line before anything is made."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    sac = ["algo=sac", "env=lunar_lander_continuous"]
    for given, said in (
        (["+algo.model.policy_kwargs.net_archs=[64]"], "unknown key 'algo.model.policy_kwargs.net_archs': stable_ba"),
        (["+algo.model.policy_kwargs.activation_fn=torch.nn.Tanh"], "algo.model.policy_kwargs.activation_fn='torch"),
        ([*sac, "algo.model.policy_kwargs.n_critic=3"], "unknown key 'algo.model.policy_kwargs.n_critic': stable_bas"),
        ([*sac, "algo.model.policy_kwargs.n_critics=3"], "algo.model.policy_kwargs.n_critics is a parameter of the p"),
    ):
        with pytest.raises(ConfigError, match=f"^{re.escape(said)}"):
            check_command([*given, "logger=none"])
    relu = "{_target_:hydra.utils.get_class,path:torch.nn.ReLU}"
    check_command([f"+algo.model.policy_kwargs={{net_arch:[32],activation_fn:{relu}}}", "logger=none"])
    check_command([*sac, "+algo.model.policy_kwargs.n_critics=3", "logger=none"])
    check_command(["algo=reinforce", "env=cartpole", "algo.model.policy_kwargs.net_arch=[16]", "logger=none"])
    assert list(tmp_path.iterdir()) == []  # nothing made


def test_a_key_a_config_file_of_ones_own_mistypes_is_named_with_the_closest_ones(tmp_path, monkeypatch):
    """A preset (``./conf/experiment/``) or an env of one's own setting a key no schema has: Hydra's words ("In
    'experiment/mine': ConfigKeyError raised while composing config:; Key 'episods' not in 'EvalConfig' full_key:
    eval.episods, reference_type=...") became the closest keys and those that exist, as for the command line."""
    from lander.config.precheck import check_command

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "env").mkdir()
    (tmp_path / "conf" / "env" / "mycart.yaml").write_text(
        "name: mycart\nid: CartPole-v1\naction_space: discrete\nreward_treshold: 475\n"
    )
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "conf" / "experiment" / "mine.yaml"
    for written, said in (
        (
            "eval:\n  episods: 3\n",
            "In 'experiment/mine': unknown key 'eval.episods'. Did you mean 'episodes'? Keys of ",
        ),
        (
            "total_timestep: 400\n",
            "In 'experiment/mine': unknown key 'total_timestep'. Did you mean 'total_timesteps'?",
        ),
        ("eval:\n  episodes: many\n", "In 'experiment/mine': eval.episodes: Value 'many' of type 'str' could not be"),
        ("eval: [\n", f"{mine}, line 3, column 1: not valid YAML: expected the node content, but found '<stream end>'"),
    ):  # the last: YAML's traceback, 60 lines
        mine.write_text("# @package _global_\n" + written)
        with pytest.raises(ConfigError, match=rf"^{re.escape(said)}"):
            check_command(["experiment=mine"])
    mine.write_text("# @package _global_\nhydra:\n  sweeper:\n    params:\n      gama: 0.9,0.99\n")
    with pytest.raises(ConfigError, match=r"^experiment=mine's hydra.sweeper.params: unknown key 'gama' in override "):
        check_command(["--multirun", "experiment=mine"])  # was Hydra's advice to add it with +, which lander refuses
    mine.write_text("total_timesteps: 400\n")  # no '# @package _global_': "unknown key 'experiment'"
    with pytest.raises(ConfigError, match=r"^In 'experiment/mine': its keys are put under 'experiment', a key no co"):
        check_command(["experiment=mine"])
    with pytest.raises(ConfigError, match=r"^In 'env/mycart': unknown key 'env.reward_treshold'. Did you mean 'rew"):
        check_command(["algo=a2c", "env=mycart"])


@pytest.mark.parametrize(
    ("space", "refused"),
    [
        ("choice(0, 4)", "hydra.sweeper.params.algo.model.n_epochs=choice(0, 4) gives 0: algo.model.n_epochs=0 is no"),
        ("interval(1, 10)", "gives 1.0: algo.model.n_epochs=1.0 is not allowed"),  # Optuna would sample floats
        ("range(5, 1)", "algo.model.n_epochs=range(5, 1): the range gives no value"),
        ("choice(4, many)", "gives many: algo.model.n_epochs='many' is not allowed"),
        ("tag(int, interval(1, 10))", None),
        ("range(1, 11, 3)", None),
    ],
)
def test_an_optuna_searchs_space_is_checked_at_its_ends_before_it_starts(tmp_path, monkeypatch, space, refused):
    """A search of one's own (``./conf/hparams_search/``): every value its space may give at its ends is a value
    its key takes, checked as a sweep's jobs are, before Optuna's study or any trial exists."""
    from lander.config.precheck import check_command

    (tmp_path / "conf" / "hparams_search").mkdir(parents=True)
    (tmp_path / "conf" / "hparams_search" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /hydra/sweeper: optuna\nhydra:\n  mode: MULTIRUN\n  sweeper:\n"
        f"    direction: maximize\n    n_trials: 2\n    params:\n      algo.model.n_epochs: {space}\n"
    )
    monkeypatch.chdir(tmp_path)
    command = ["hparams_search=mine", "logger=none", f"hydra.sweep.dir={tmp_path / 'search'}"]
    if refused is None:
        check_command(command)
    else:
        with pytest.raises(ConfigError, match=re.escape(refused)):
            check_command(command)
    assert not (tmp_path / "search").exists()


def test_resuming_a_completed_run_without_a_larger_budget_exits_2_and_leaves_the_run_as_it_is(tmp_path):
    """``resume=<a completed run>`` (no budget, or one it has trained already) was refused only in Hydra's job,
    after torch loaded: its ERROR line appended to the run's own ``run.log`` (made where there was none). Now
    refused by the precheck, in one line, exit 2, nothing in the run touched."""
    from lander.storage.rundir import RunPaths, RunSummary, Status

    run = fake_run(tmp_path, "run", ["algo=a2c"], 1, {4000: -100.0})
    RunSummary(status=Status.COMPLETED, seed=1, overrides=["algo=a2c"], timesteps=4000).save(RunPaths(run))
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    env = lander_env(HOME=str(tmp_path), NETRC=str(tmp_path / "no-netrc"))
    for extra, said in (([], "that run is already completed (summary.json); to train it further, give a larger"),
                        (["total_timesteps=4000"], "total_timesteps=4000: the run in")):  # fmt: skip
        proc = lander(f"resume={run}", *extra, env=env, timeout=120)
        assert proc.returncode == 2 and said in proc.stdout + proc.stderr, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr
        assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    RunPaths(run).summary.write_text("{not json")  # read by the precheck now: a traceback before this line was kept
    proc = lander(f"resume={run}", env=env, timeout=120)
    assert proc.returncode == 2 and "summary.json is unreadable" in proc.stderr and "Traceback" not in proc.stderr


def test_an_option_of_ones_own_that_lander_ships_too_is_refused(tmp_path):
    """``./conf/env/cartpole.yaml`` beside lander's ``env/cartpole.yaml``: Hydra finds lander's first, so a user
    editing "their" cartpole trained lander's without a word; refused wherever the option is chosen (on the command
    line, in a sweep, or as a default), naming the file. Another name is used, as the docs say."""
    from lander.config.precheck import check_command

    (tmp_path / "conf" / "env").mkdir(parents=True)
    mine = "defaults:\n  - cartpole\nname: cartpole\nreward_threshold: 100\n"
    (tmp_path / "conf" / "env" / "cartpole.yaml").write_text(mine)
    search = f"hydra.searchpath=[file://{tmp_path / 'conf'}]"
    said = f"env=cartpole: {tmp_path / 'conf' / 'env' / 'cartpole.yaml'} is not used: lander's own env/cartpole.yaml is"
    for command in ([search, "env=cartpole"], ["--multirun", search, "env=lunar_lander,cartpole", "seed=0,1"]):
        with pytest.raises(ConfigError, match=re.escape(said)):
            check_command(command)
    check_command([search, "env=lunar_lander", "logger=none"])
    (tmp_path / "conf" / "env" / "cartpole.yaml").rename(tmp_path / "conf" / "env" / "lunar_lander.yaml")
    with pytest.raises(ConfigError, match=re.escape("env=lunar_lander: ")):  # lander's default env
        check_command([search, "logger=none"])


NO_TIME_LIMIT = '''
import gymnasium as gym
import numpy as np


class Stay(gym.Env):
    """Action 0 stays, 1 steps to the end: an untrained greedy policy may stay for ever."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.pos += int(action)
        return np.full(1, self.pos / 5, np.float32), float(self.pos >= 5), self.pos >= 5, False, {}


gym.register("Stay-v0", entry_point=Stay)
'''


def test_an_env_of_ones_own_without_a_time_limit_is_warned_of(tmp_path, monkeypatch, caplog):
    """An env registered without ``max_episode_steps`` (as many envs of one's own are): an episode that never ends
    held the first evaluation, and the run, for ever, a single Ctrl-C or ``timeout``'s SIGTERM included (waited
    10 minutes for it). Warned of before training, with what to give; not where ``env.kwargs`` caps it."""
    (tmp_path / "stay_envs.py").write_text(NO_TIME_LIMIT)
    monkeypatch.syspath_prepend(str(tmp_path))
    overrides = [
        "env=cartpole",
        "env.id=stay_envs:Stay-v0",
        "env.name=stay",
        "env.reward_threshold=null",
        "video.enabled=false",
    ]
    with caplog.at_level("WARNING"):
        validate(composed(*overrides))
    said = "env.id='stay_envs:Stay-v0' has no time limit (registered without max_episode_steps)"
    assert said in caplog.text and "+env.kwargs.max_episode_steps=N" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        validate(composed(*overrides, "+env.kwargs.max_episode_steps=50"))
        validate(composed("env=cartpole"))
    assert "no time limit" not in caplog.text


def test_an_env_id_given_without_its_name_and_threshold_is_warned_of(caplog):
    """``env.id=CartPole-v1`` on the default ``env=lunar_lander`` trained CartPole in a run named
    ``ppo_lunar_lander_seed-0``, labelled ``lunar_lander`` in comparisons, its success rate counted against
    LunarLander's 200, without a word. Warned of before training, with what to set (once an id in a sweep); not
    where the id is the env config's own or its name and threshold are given."""
    from lander.config.precheck import check_command

    with caplog.at_level("WARNING"):
        check_command(["env.id=CartPole-v1", "logger=none"])
    said = "env.id=CartPole-v1 replaces env=lunar_lander's LunarLander-v3 and keeps its name (lunar_lander"
    assert said in caplog.text and "its reward_threshold (200.0" in caplog.text
    assert "set env.name=cartpole_v1 env.reward_threshold=R (null for none)" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        check_command(["-m", "env.id=CartPole-v1,Acrobot-v1", "env.name=mine", "seed=0,1", "logger=none"])
    assert caplog.text.count("replaces env=lunar_lander's") == 2 and "keeps its name" not in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        check_command(["env.id=CartPole-v1", "env.name=cartpole_v1", "env.reward_threshold=475", "logger=none"])
        check_command(["env=cartpole", "env.id=CartPole-v1", "logger=none"])
    assert "replaces" not in caplog.text


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["allow_target=[my_envs]"], "allow_target=[my_envs]: allow_target is taken with resume= only"),
        (["RUN", "allow_target=[my_envs"], "allow_target=[my_envs: a module prefix or a list of them"),
        (["RUN", "allow_target=[a,${oc.env:HOME}]"], "a module prefix or a list of them, e.g. allow_target=[my_envs]"),
        (["RUN", "seed=1"], "resume= continues a run with its own saved config; remove seed=1 (the keys it takes"),
        (["RUN", "total_timesteps=1e6"], "total_timesteps=1e6: with resume=, total_timesteps is the new budget"),
        (["RUN", "memory_limit_mb=lots"], "memory_limit_mb=lots: memory_limit_mb must be null or a number of MB"),
    ],
)
def test_what_resume_takes_beside_the_run_is_checked_in_one_line(tmp_path, args, said):
    from omegaconf import OmegaConf

    from lander.config.precheck import check_command
    from lander.storage.rundir import Status

    run = fake_run(tmp_path, "run", ["algo=ppo"], 0, {100: 1.0}, status=Status.INTERRUPTED)
    (run / ".hydra/config.yaml").write_text(OmegaConf.to_yaml(composed("algo=ppo")))  # a whole config
    argv = [f"resume={run}" if a == "RUN" else a for a in args]
    with pytest.raises(ConfigError, match=re.escape(said)):
        check_command(argv)
    kept = check_command([f"resume={run}", "allow_target=[my_envs,gymnasium.wrappers]", "memory_limit_mb=null"])
    assert not [a for a in kept if a.startswith("allow_target")] and "memory_limit_mb=null" in kept
