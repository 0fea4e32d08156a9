"""``python -m lander.reproduce <run>``: a run trained again from its saved config, beside it, and compared with it;
one verdict (identical, or the first divergence with what differs in the environment snapshot), exit 0 or 1; bad
input in one line, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from helpers import composed, lander, lander_env, run_lander, tiny, tiny_run
from lander.reproduce import main


def reproduce(*args: str):
    return lander(*args, module="lander.reproduce")


def test_a_default_tiny_run_reproduces_and_a_changed_value_is_the_first_divergence(tmp_path):
    run = tmp_path / "run"  # the default config (W&B offline, video, report) at a tiny budget, checkpoints at 512;
    # an evaluation every 256 steps: the one at 512 comes before the update there, --steps 512's final one after it
    tiny_run(run, "ppo", "logger=wandb", "checkpoint_freq=512", "eval.freq=256", video=True, report=True)

    same = reproduce(str(run))
    assert same.returncode == 0, same.stderr[-3000:]
    assert same.stdout.startswith(f"identical: {run}.reproduce-1 reproduces {run} to its step 1,024 (")
    assert "the final evaluation's episodes, every weight of model.zip" in same.stdout
    assert (tmp_path / "run.reproduce-1" / "metrics" / "eval.csv").is_file()

    first = reproduce(str(run), "--steps", "512")  # the cheap check: the first rollout, against the checkpoint
    assert first.returncode == 0, first.stderr[-3000:]
    assert "to its step 512" in first.stdout and "every weight of checkpoints/model_512_steps.zip" in first.stdout
    copied = json.loads((tmp_path / "run.reproduce-2" / "summary.json").read_text())  # where it stopped, and why
    assert copied["stopped_early"] == "stopped past the update of step 512 (lander.reproduce --steps)", copied

    config = run / ".hydra" / "config.yaml"  # one value changed, and the snapshot says another torch
    config.write_text(config.read_text().replace("learning_rate: 0.0003", "learning_rate: 0.001"))
    versions = run / "environment" / "versions.json"
    snapshot = json.loads(versions.read_text())
    snapshot["packages"]["torch"] = "2.12.0"
    versions.write_text(json.dumps(snapshot))
    changed = reproduce(str(run))
    assert changed.returncode == 1, changed.stderr[-3000:]
    lines = changed.stdout.splitlines()
    assert lines[0].startswith("diverged: metrics/") and "in the original" in lines[0] and "here" in lines[0]
    assert any(line.strip().startswith("torch: 2.12.0 then, 2.13.0") for line in lines), lines
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "run",
        "run.reproduce-1",
        "run.reproduce-2",
        "run.reproduce-3",
    ]


def test_a_seed_trained_side_by_side_reproduces_alone_on_the_same_engine(tmp_path):
    """A job of ``seeds_per_process=2`` was refused ("its numbers depend on its group"): a seed side by side draws
    from its own streams only, so alone on the same engine (``batched_engine=true``) it trains to the same metrics,
    evaluation and weights, which the reproduction shows."""
    sweep = tmp_path / "sweep"
    proc = lander("--multirun", "seed=0,1", "seeds_per_process=2", *tiny("ppo"), f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    same = reproduce(str(sweep / "1"))
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-3000:]
    assert same.stdout.startswith(f"identical: {sweep}/1.reproduce-1 reproduces {sweep}/1 to its step 1,024 (")
    assert "every weight of model.zip" in same.stdout and "reproduced alone on the same engine" in same.stderr
    saved = OmegaConf.load(sweep / "1.reproduce-1" / ".hydra" / "config.yaml")
    assert (saved.seeds_per_process, saved.batched_engine, saved.seed) == (1, True, 1)


def test_a_run_trained_further_is_replayed_to_its_first_budget_then_resumed(tmp_path):
    """A resume re-seeds the envs and generators at its checkpoint, so a run trained further (``resume=<run>
    total_timesteps=N``) was reported ``diverged`` by an uninterrupted reproduction (the number of rows), the
    snapshots agreeing. It is trained again to its first budget, resumed to N, and compared whole."""
    run = tmp_path / "run"
    tiny_run(run, "ppo")
    further = lander(f"resume={run}", "total_timesteps=1536")
    assert further.returncode == 0, further.stderr[-3000:]
    same = reproduce(str(run))
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-3000:]
    lines = same.stdout.splitlines()
    assert lines[0].startswith(f"identical: {run}.reproduce-1 reproduces {run} to its step 1,536 ("), lines
    assert "the final evaluation's episodes, every weight of model.zip" in lines[0]
    assert lines[1] == (
        "  the run was resumed at step 1024 (summary.json's resumed_at): trained again to there, then resumed to 1536"
    )
    again = lander(f"resume={run}", "total_timesteps=2048")  # resumed twice: compared up to its first resume
    assert again.returncode == 0, again.stderr[-3000:]
    lines = reproduce(str(run)).stdout.splitlines()
    assert lines[0].startswith(f"identical: {run}.reproduce-2 reproduces {run} to its step 1,024 ("), lines
    assert lines[1].startswith("  the run was resumed at step 1024 (summary.json's resumed_at), where a resume re-")


def test_ctrl_c_during_a_reproduction_is_one_line_and_leaves_it_unfinished(tmp_path):
    """SIGINT while the reproduction trains (here at its first checkpoint): exit 130 and one line saying where it
    stopped and that there is no verdict (before: a traceback ending in ``Interrupted: SIGINT``); the copy keeps
    what it recorded (``interrupted``) and no ``reproduction.json``, which the dashboard lists as unfinished."""
    run = tmp_path / "run"
    made = run_lander(run, *tiny("ppo", checkpoints=500))
    assert made.returncode == 0, made.stderr[-3000:]
    stopped = lander(str(run), module="lander.reproduce", env=lander_env(LANDER_FAULT="write:model_@1:INT"))
    assert stopped.returncode == 130 and "Traceback" not in stopped.stderr, stopped.stderr[-3000:]
    copy = tmp_path / "run.reproduce-1"
    line = f"lander.reproduce: interrupted (SIGINT) at step 512: {copy} is left unfinished, without a verdict"
    assert line in stopped.stderr.splitlines(), stopped.stderr[-3000:]
    assert json.loads((copy / "summary.json").read_text())["status"] == "interrupted"
    assert not (copy / "reproduction.json").exists()
    # a copy of its first steps (--steps: lander's own StopAtTimesteps in its config), stopped, is resumed as any
    # run of lander's is: the targets lander writes into a config are lander's own (resume= checks the config)
    stopped = lander(
        str(run), "--steps", "1000", module="lander.reproduce", env=lander_env(LANDER_FAULT="write:model_@1:INT")
    )
    copy = tmp_path / "run.reproduce-2"
    assert (
        stopped.returncode == 130
        and "lander.training.callbacks.StopAtTimesteps" in (copy / ".hydra/config.yaml").read_text()
    )
    resumed = lander(f"resume={copy}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]


@pytest.mark.parametrize(
    ("algo", "fault"),
    [
        ("ppo", "write:model_@1:INT"),  # as its first checkpoint is written, at a rollout's start (512)
        ("dqn", "write:best_model.zip@1:INT"),  # at its first evaluation (step 500), the last step of a rollout
        ("ppo", "write:best_model.zip@1:INT"),  # in its first rollout: resumed from its checkpoint at step 0
    ],
)
def test_a_run_stopped_and_resumed_reproduces_whole(tmp_path, algo, fault):
    """SIGINT, then ``resume=``: the reproduction is stopped where the run was (the checkpoint its resume started
    from), resumed, and identical to the end. DQN's replay buffer, target-network schedule and episode count stood
    at its checkpoint's rollout start only once a stop waited for the next rollout: stopped mid-rollout, its resume
    diverged from any reproduction."""
    run = tmp_path / "run"
    buffer = ["checkpoint_replay_buffer=true"] if algo == "dqn" else []
    stopped = run_lander(run, *tiny(algo, checkpoints=500), *buffer, env=lander_env(LANDER_FAULT=fault))
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    resumed = lander(f"resume={run}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (at,) = json.loads((run / "summary.json").read_text())["resumed_at"]
    same = reproduce(str(run))
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-3000:]
    assert "the final evaluation's episodes, every weight of model.zip" in same.stdout.splitlines()[0]
    assert f"resumed at step {at} (summary.json's resumed_at): trained again to there" in same.stdout
    assert at == {"write:model_@1:INT": 512, "write:best_model.zip@1:INT": 500 if algo == "dqn" else 0}[fault]


def test_seeds_side_by_side_stopped_and_continued_reproduce_whole(tmp_path):
    """A sweep of two seeds side by side stopped by SIGINT (as seed 0 writes its first checkpoint) and continued by
    its own command: each seed reproduces alone, replayed, to its end. A seed stopped at its next rollout's start
    while the other's update, done with it, was not handed back yet would keep that update in a checkpoint labelled
    before it (its resume then trained that rollout twice)."""
    sweep = tmp_path / "sweep"
    args = ["--multirun", "seed=0,1", "seeds_per_process=2", *tiny("ppo", 2048, checkpoints=512)]
    stopped = lander(*args, f"hydra.sweep.dir={sweep}", env=lander_env(LANDER_FAULT="write:model_@1:INT"))
    statuses = [json.loads((sweep / job / "summary.json").read_text())["status"] for job in ("0", "1")]
    assert stopped.returncode == 1 and statuses == ["interrupted"] * 2, stopped.stderr[-3000:]
    again = lander(*args, f"hydra.sweep.dir={sweep}")
    assert again.returncode == 0, again.stderr[-3000:]
    for job in ("0", "1"):
        assert len(json.loads((sweep / job / "summary.json").read_text())["resumed_at"]) == 1
        same = reproduce(str(sweep / job))
        assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-3000:]
        assert "every weight of model.zip" in same.stdout.splitlines()[0]


def saved_run(directory, *overrides: str):
    """A run directory holding only the saved config of ``overrides`` (what the checks read before anything)."""
    (directory / ".hydra").mkdir(parents=True)
    OmegaConf.save(composed(*tiny("ppo"), *overrides), directory / ".hydra" / "config.yaml")
    return directory


@pytest.mark.parametrize(
    "case,said",
    [
        ("missing", "is not a directory"),
        ("no config", "is not a lander run directory (no .hydra/config.yaml)"),
        ("untrusted", "algo.model imports 'os.system', which is not one of lander's own targets: allow it with"),
        ("own env", "makes Gymnasium import 'my_envs': allow it with --allow-target my_envs (lander.serve and lander."),
        ("steps 0", "--steps 0: the number of steps to reproduce, an integer >= 1"),
        ("no step", "recorded no training step (no summary.json, or 0 timesteps): nothing to compare"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, case, said):
    run, args = tmp_path / "run", []
    if case == "no config":
        run.mkdir()
    elif case == "untrusted":
        saved_run(run)
        config = run / ".hydra" / "config.yaml"
        config.write_text(config.read_text().replace("_target_: stable_baselines3.PPO", "_target_: os.system"))
    elif case == "own env":  # the advice was the service's ("start the service with --allow-target")
        saved_run(run, "env=cartpole", "env.id=my_envs:Corridor-v0")
    elif case == "steps 0":
        saved_run(run)
        args = ["--steps", "0"]
    elif case == "no step":
        saved_run(run)  # no summary.json: it never trained
    before = sorted(tmp_path.rglob("*"))
    assert main([str(run), *args]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("lander.reproduce: ") and said in err[0], err
    assert sorted(tmp_path.rglob("*")) == before


def test_two_reproductions_started_at_once_take_a_directory_each(tmp_path, monkeypatch):
    """Two ``lander.reproduce`` of one run started at the same moment both chose ``<run>.reproduce-1``, the first
    number free when each looked; the second failed at ``mkdir`` with ``FileExistsError``'s traceback. It now
    takes the next number. (In this process: the other reproduction is a directory made between the look and the
    ``mkdir``.)"""
    import logging

    import lander.reproduce as module
    from lander.storage.rundir import RunPaths

    run = tmp_path / "run"
    tiny_run(run, "a2c", "logger=none")
    looked = module.plan

    def raced(*args):
        planned = looked(*args)
        planned.copy.mkdir()  # the other reproduction's
        return planned

    monkeypatch.setattr(module, "plan", raced)
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        assert module.reproduce(run, None, []) == 0
    finally:
        for handler in [h for h in root.handlers if h not in before]:  # its run.log's, added to the root logger
            root.removeHandler(handler)
            handler.close()
    assert json.loads(RunPaths(tmp_path / "run.reproduce-2").reproduction.read_text())["verdict"] == "identical"
    assert list((tmp_path / "run.reproduce-1").iterdir()) == []  # the other's, untouched
