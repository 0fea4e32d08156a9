"""TensorBoard event files beside W&B: the same keys, the values of the CSV files, and one continuous curve
through a kill -9 and a resume. Read back with TensorBoard's own EventAccumulator."""

from __future__ import annotations

import signal
from pathlib import Path

import pandas as pd
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from helpers import lander, lander_env, run_lander, tiny
from helpers.wandb_reader import read_runs
from lander.storage.rundir import foreign_entries

RUN = [*tiny("ppo", 3072, eval_every=512, episodes=2, checkpoints=512, video=False, logger="wandb_tensorboard"),
       "log_grad_norm=true"]  # fmt: skip


def scalars(run_dir: Path) -> EventAccumulator:
    (log_dir,) = (run_dir / "tensorboard").iterdir()
    assert log_dir.name == "ppo_lunar_lander_gamma-0.999_seed-0"  # runs are named in `tensorboard --logdir`
    events = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    events.Reload()
    return events


def test_a_killed_and_resumed_run_has_one_continuous_curve_with_the_csv_values(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    killed = run_lander(run_dir, *RUN, env=lander_env(LANDER_FAULT="row:eval.csv@4:KILL"))
    assert killed.returncode == -signal.SIGKILL
    resumed = lander(f"resume={run_dir}", timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert foreign_entries(run_dir) == []  # tensorboard/ is one of RUN_ENTRIES: a retry sets it aside with the rest
    events = scalars(run_dir)
    evals = pd.read_csv(run_dir / "metrics/eval.csv")
    logged = events.Scalars("eval/mean")
    assert [e.step for e in logged] == evals["timesteps"].tolist()  # every evaluation once, in order
    assert [e.value for e in logged] == pytest.approx(evals["mean"].tolist(), rel=1e-6)
    episodes = pd.read_csv(run_dir / "metrics/train_episodes.csv")
    returns = events.Scalars("train/episode_return")
    assert [e.step for e in returns] == episodes["timesteps"].tolist()
    assert [e.value for e in returns] == pytest.approx(episodes["return"].tolist(), rel=1e-6)
    progress = pd.read_csv(run_dir / "metrics/sb3_progress.csv")
    numeric = {c for c in progress.columns if pd.api.types.is_numeric_dtype(progress[c]) and progress[c].notna().any()}
    assert {"train/grad_norm", "train/loss"} <= numeric  # lander's gradient norm beside SB3's loss, in all three
    assert numeric <= set(events.Tags()["scalars"]), numeric - set(events.Tags()["scalars"])
    wandb_keys = {k for part in read_runs(run_dir) for row in part["history"] for k in row if not k.startswith("_")}
    assert set(events.Tags()["scalars"]) <= wandb_keys - {"global_step"}  # the same keys as in W&B
