"""Same config and seed on one machine: identical metrics and weights; another seed: different ones."""

from __future__ import annotations

import pandas as pd
import torch
from stable_baselines3 import PPO

from helpers import tiny_run

WALL_CLOCK = ["wall_time", "eval_seconds"]


def metrics(run_dir):
    train = pd.read_csv(run_dir / "metrics/train_episodes.csv").drop(columns=WALL_CLOCK, errors="ignore")
    evals = pd.read_csv(run_dir / "metrics/eval.csv").drop(columns=WALL_CLOCK, errors="ignore")
    final = pd.read_json(run_dir / "eval.json")["episodes"].tolist()
    return train, evals, final


def weights(run_dir):
    return PPO.load(run_dir / "model.zip", device="cpu").policy.state_dict()


def test_same_seed_same_results_other_seed_different(tmp_path):
    runs = {}
    for name, seed in [("a", 0), ("b", 0), ("c", 1)]:
        tiny_run(tmp_path / name, "ppo", f"seed={seed}", "logger=none", "video.enabled=false")
        runs[name] = tmp_path / name
    (train_a, eval_a, final_a), (train_b, eval_b, final_b), (train_c, _eval_c, _final_c) = (
        metrics(runs[n]) for n in "abc"
    )
    pd.testing.assert_frame_equal(train_a, train_b)
    pd.testing.assert_frame_equal(eval_a, eval_b)
    assert final_a == final_b
    wa, wb, wc = weights(runs["a"]), weights(runs["b"]), weights(runs["c"])
    assert all(torch.equal(wa[k], wb[k]) for k in wa)

    assert not train_a["return"].equals(train_c["return"])
    assert any(not torch.equal(wa[k], wc[k]) for k in wa)
