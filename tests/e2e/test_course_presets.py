"""The course presets' sweeps, and the reproducibility and resumption of lander's own algorithms."""

from __future__ import annotations

import pandas as pd
import pytest
from omegaconf import OmegaConf

from helpers import REPO, lander, read_json, run_lander, start_lander, tiny
from helpers.wandb_reader import read_run
from lander.envs import make_train_env
from lander.evaluation.loading import safe_load


def sweep(sweep_dir, *overrides):
    """A preset's sweep of tiny jobs, one after the other (each forked from the sweep's process: no worker starts)."""
    return lander("--multirun", "hydra/launcher=basic", *tiny(None, 0), *overrides, f"hydra.sweep.dir={sweep_dir}")


def test_qcritic_preset_names_runs_like_the_assignment_and_pools_eval_episodes(tmp_path):
    sweep_dir = tmp_path / "qcritic"
    proc = sweep(
        sweep_dir,
        "experiment=qcritic_lunar",
        "seed=0",
        "n_envs=2",
        "total_timesteps=1000",
        "+env.kwargs.max_episode_steps=200",
        "logger=wandb",  # the runs' names and group are read back from W&B
        "video.enabled=false",  # what this test reads needs neither the video nor the run's report
        "report=false",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    jobs = sorted((p for p in sweep_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    runs = [read_run(job) for job in jobs]
    assert [r["name"] for r in runs] == ["a2c_seed-0", "mac_seed-0", "mac_adv_seed-0"]
    assert len({r["group"] for r in runs}) == 1
    table = pd.read_csv(sweep_dir / "comparison/table.csv")
    assert list(table["config"]) == ["algo=a2c", "algo=mac", "algo=mac_adv"]
    assert (sweep_dir / "comparison/learning_curves_lunar_lander.png").is_file()
    from lander.analysis.curves import pooled_curve
    from lander.analysis.runset import find_runs

    mac = [r for r in find_runs([sweep_dir]) if r.summary["algo"] == "mac"]
    curve = pooled_curve(mac)
    episodes = pd.read_csv(mac[0].path / "metrics/eval_episodes.csv")
    assert list(curve["n_episodes"]) == [3] * len(curve)  # tiny(): eval.episodes=3, one seed
    assert curve["mean"].iloc[-1] == pytest.approx(episodes["return"].iloc[-3:].mean())


def test_reinforce_preset_compares_the_assignments_four_versions_against_episodes(tmp_path):
    """Task 1's plain sum, extra 1's discounted return, extra 2's return-to-go, extra 3's baseline: one sweep, one
    change from each version to the next, its curves against training episodes (the extras' x axis), as the run's
    own plot and ``lander.compare --x-axis`` draw them too."""
    sweep_dir = tmp_path / "reinforce"
    proc = sweep(
        sweep_dir,
        "experiment=reinforce_cartpole",
        "seed=0",
        "total_timesteps=1200",
        "algo.model.batch_episodes=5",
        "report=true",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    jobs = sorted((p for p in sweep_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    models = [OmegaConf.load(job / ".hydra/config.yaml").algo.model for job in jobs]
    versions = [(m.return_type, m.gamma, m.baseline, m.normalize) for m in models]
    assert versions == [
        ("episode", 1.0, False, False),  # the plain sum of rewards, the assignment's loss
        ("episode", 0.99, False, False),
        ("reward_to_go", 0.99, False, False),
        ("reward_to_go", 0.99, True, False),
    ]
    names = [read_json(job / "summary.json")["run_name"] for job in jobs]
    assert names == [f"reinforce_{v}_seed-0" for v in ("sum", "discounted", "reward_to_go", "baseline")]
    table = pd.read_csv(sweep_dir / "comparison/table.csv")
    assert list(table["config"]) == [
        f"reinforce_variant={v}" for v in ("sum", "discounted", "reward_to_go", "baseline")
    ]
    assert (table["baseline"] == "reinforce_variant=sum").all()

    from lander.analysis.curves import config_curves
    from lander.analysis.runset import find_runs
    from lander.compare import main as compare_main

    curves = config_curves({"all": find_runs([sweep_dir])}, x="episodes")
    runs = curves["all"][0]  # each with the training episodes it had ended at its evaluations
    (run,) = [r for r in runs if r.path == jobs[0]]
    train = pd.read_csv(jobs[0] / "metrics/train_episodes.csv")
    ended = [int(train.loc[train["timesteps"] <= t, "episode"].max()) for t in run.eval["timesteps"]]
    assert list(run.eval["episodes"]) == ended and ended[-1] > ended[0] > 0
    assert set(curves["all"][1]["episodes"]) == set().union(*(set(r.eval["episodes"]) for r in runs))
    html = (sweep_dir / "comparison/report.html").read_text()
    assert '"title":{"text":"training episodes"}' in html  # the comparison's curves, by the preset's x_axis
    assert '"title":{"text":"training episodes"}' in (jobs[0] / "report.html").read_text()  # the run's own
    assert compare_main([str(sweep_dir), "--out", str(tmp_path / "by_steps"), "--x-axis", "timesteps"]) == 0
    assert '"title":{"text":"timesteps"}' in (tmp_path / "by_steps/report.html").read_text()


def test_q_learning_alpha_preset_states_the_best_alpha_per_env(tmp_path):
    sweep_dir = tmp_path / "alpha"
    proc = sweep(
        sweep_dir,
        "experiment=q_learning_alpha",
        "algo.model.alpha=0.1,0.9",
        "seed=0",
        "total_timesteps=2000",
        "eval.freq=1000",
        "eval.episodes=50",
        "logger=none",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    table = pd.read_csv(sweep_dir / "comparison/table.csv")
    assert sorted(table["env"].unique()) == ["blackjack", "frozen_lake"]
    report = (sweep_dir / "comparison/report.md").read_text()
    for env in ("frozen_lake", "blackjack"):
        rows = table[table["env"] == env]
        best = rows.loc[rows["final_mean"].idxmax(), "config"]
        assert best.startswith("algo.model.alpha=") and f"Highest final mean on {env}: **{best}**" in report
    gammas = {
        read_json(j / "summary.json")["env"]: read_json(j / "summary.json")["gamma"]
        for j in sweep_dir.iterdir()
        if j.name.isdigit()
    }
    assert gammas == {"frozen_lake": 0.99, "blackjack": 1.0}  # lander/conf/tuned/q_learning_blackjack.yaml


@pytest.mark.parametrize(
    "preset,algo,env",
    [
        ("reinforce_cartpole", "reinforce", "cartpole"),
        ("ppo_half_cheetah", "ppo", "half_cheetah"),
        ("ppo_half_cheetah_normalized", "ppo", "half_cheetah"),
        ("qcritic_pong", "mac", "pong"),
        ("q_learning_alpha", "q_learning", None),
    ],
)
def test_every_preset_composes(preset, algo, env):
    from hydra import compose, initialize_config_dir

    from lander.config.checks import validate
    from lander.config.schema import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "lander" / "conf"), version_base="1.3"):
        overrides = [f"experiment={preset}"] + (["algo=mac"] if preset == "qcritic_pong" else [])
        cfg = compose(config_name="config", overrides=[*overrides, *(["env=frozen_lake"] if env is None else [])])
    validate(cfg)
    assert cfg.algo.name == algo and cfg.env.name == (env or "frozen_lake")
    assert cfg.run_name.endswith("_seed-0")
    assert cfg.env.normalize.enabled == preset.endswith("_normalized")  # the course's trainer does not normalize
    assigned = {  # what the assignments set, key by key (004's run_algorithm and evaluate(); 003's PPOTrainer call)
        "qcritic_pong": {
            "eval.deterministic": False,
            "eval.freq": 300_000,
            "total_timesteps": 20_000_000,
            "log_grad_norm": True,  # its A2C records train/grad_norm (the Pong preset did not, the LunarLander one did)
        },
        "ppo_half_cheetah": {
            "env.id": "HalfCheetah-v4",
            "algo.n_envs": 8,
            "total_timesteps": 5_000_000,
            "algo.model.n_steps": 1000,
            "algo.model.n_epochs": 3,
            "algo.model.batch_size": 64,
            "eval.freq": 400_000,
            "eval.episodes": 10,
        },
    }.get(preset, {})
    assert {key: OmegaConf.select(cfg, key) for key in assigned} == assigned


@pytest.mark.parametrize(
    "preset,overrides",
    [
        ("ppo_half_cheetah", ["total_timesteps=8000"]),  # one rollout of the assignment's 8 x 1000 steps
        ("ppo_half_cheetah_normalized", ["total_timesteps=512"]),  # one rollout of zoo's 512 steps
        ("qcritic_pong", ["algo=a2c", "total_timesteps=160"]),  # two updates of 16 envs x 5 steps
    ],
)
def test_a_long_preset_runs_at_a_tiny_budget_with_its_assigned_values(tmp_path, preset, overrides):
    """The presets too long to run in the suite as assigned (5M HalfCheetah steps; 20M Pong steps) run with only
    their budget and evaluation made tiny, every other value as assigned, the Pong evaluation sampled."""
    run_dir = tmp_path / preset
    tiny_eval = ["eval.freq=0", "eval.episodes=1", "eval.n_envs=1", "video.enabled=false", "report=false"]
    proc = run_lander(run_dir, f"experiment={preset}", "seed=0", *overrides, *tiny_eval, "logger=none")
    assert proc.returncode == 0, proc.stderr[-4000:]
    cfg = OmegaConf.load(run_dir / ".hydra/config.yaml")
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed" and summary["timesteps"] == int(overrides[-1].split("=")[1])
    if preset == "ppo_half_cheetah":
        assert (cfg.env.id, cfg.algo.n_envs, cfg.algo.model.n_steps, cfg.algo.model.n_epochs) == (
            "HalfCheetah-v4",
            8,
            1000,
            3,
        )
        assert len(pd.read_csv(run_dir / "metrics/sb3_progress.csv")) == 1  # one update of 8,000 steps
    elif preset == "ppo_half_cheetah_normalized":  # zoo's values, its statistics saved beside the model as arrays
        assert cfg.env.normalize.enabled and cfg.algo.model.n_epochs == 20
        assert (run_dir / "model.vecnormalize.npz").is_file()
    else:
        assert cfg.eval.deterministic is False and cfg.env.id == "ale_py:PongNoFrameskip-v4"
    assert read_json(run_dir / "eval.json")["n"] == 1


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_same_seed_same_record_other_seed_different(tmp_path):
    def record(name: str, seed: int):
        run_dir = tmp_path / name
        proc = run_lander(
            run_dir,
            *tiny("reinforce", 1500, video=False),
            "env=cartpole",
            "algo.model.batch_episodes=3",
            f"seed={seed}",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        train = pd.read_csv(run_dir / "metrics/train_episodes.csv").drop(columns=["wall_time"])
        cfg = OmegaConf.load(run_dir / ".hydra/config.yaml")
        model = safe_load(cfg, run_dir / "model.zip", make_train_env(cfg.env, n_envs=1, seed=0))
        return train, {k: v.clone() for k, v in model.policy.state_dict().items()}

    (train_a, weights_a), (train_b, weights_b), (train_c, weights_c) = record("a", 0), record("b", 0), record("c", 1)
    pd.testing.assert_frame_equal(train_a, train_b)
    assert all((weights_a[k] == weights_b[k]).all() for k in weights_a)
    assert not train_a.equals(train_c) and any(not (weights_a[k] == weights_c[k]).all() for k in weights_a)


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_interrupted_q_learning_run_resumes_to_the_budget(tmp_path):
    import signal
    import time

    run_dir, budget = tmp_path / "run", 60000
    cmd = [
        "algo=q_learning",
        "env=frozen_lake",
        f"total_timesteps={budget}",
        "eval.freq=5000",
        "eval.episodes=10",
        "checkpoint_freq=5000",
        "progress_bar=false",
        "logger=none",
        f"hydra.run.dir={run_dir}",
    ]
    proc = start_lander(*cmd)
    evals = run_dir / "metrics/eval.csv"
    deadline = time.monotonic() + 240
    while not (evals.is_file() and len(evals.read_text().splitlines()) >= 3):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    stopped = read_json(run_dir / "summary.json")
    assert stopped["status"] == "interrupted" and 0 < stopped["timesteps"] < budget
    done = lander(f"resume={run_dir}")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "completed" and summary["timesteps"] == budget
    assert summary["resumed_at"] == [stopped["timesteps"]]
    assert list(pd.read_csv(evals)["timesteps"]) == list(range(5000, budget + 1, 5000))  # every evaluation once
    episodes = pd.read_csv(run_dir / "metrics/train_episodes.csv")
    assert list(episodes["episode"]) == list(range(1, len(episodes) + 1))
