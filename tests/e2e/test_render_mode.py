"""Training and evaluation envs are made without rendering, and that changes no result.

SB3's ``make_vec_env`` makes ``render_mode="rgb_array"`` envs unless told otherwise, and LunarLander then
builds decorative particles on every engine firing: several times the cost of a step, no effect on the
physics. lander makes them with ``render_mode=None``; ``+env.kwargs.render_mode=rgb_array`` brings the
rendering envs back, which is how this test runs the same default config both ways.
"""

from __future__ import annotations

import pytest

from helpers import assert_same_results, composed, read_json, run_lander, tiny

RENDERING = "+env.kwargs.render_mode=rgb_array"
# two rollouts, so the second one is collected by an updated policy, and a periodic and a final evaluation
SHORT = tiny("ppo", 1024, eval_every=512, episodes=5, video=False)


@pytest.mark.parametrize(
    "env_name",
    ["lunar_lander", "lunar_lander_continuous", "cartpole", "frozen_lake", "blackjack", "pong", "half_cheetah"],
)
def test_training_and_eval_envs_do_not_render(env_name):
    from lander.envs import make_env, make_train_env

    cfg = composed(f"env={env_name}")
    train = make_train_env(cfg.env, 2, 0)
    try:
        assert train.get_attr("render_mode") == [None, None]
    finally:
        train.close()
    for render_mode in (None, "rgb_array"):  # evaluation envs, and the video's
        env = make_env(cfg.env, render_mode=render_mode)
        assert env.unwrapped.render_mode == render_mode
        env.close()


def test_the_override_makes_rendering_training_envs():
    """Without this, the comparison below could pass because both runs were the same non-rendering run."""
    from lander.envs import make_train_env

    env = make_train_env(composed(RENDERING).env, 2, 0)
    try:
        assert env.get_attr("render_mode") == ["rgb_array", "rgb_array"]
    finally:
        env.close()


def test_not_rendering_changes_no_result(tmp_path):
    runs = {"plain": tmp_path / "plain", "rendering": tmp_path / "rendering"}
    for name, extra in (("plain", []), ("rendering", [RENDERING])):
        proc = run_lander(runs[name], *SHORT, *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_json(runs["plain"] / "summary.json")["timesteps"] == 1024
    assert_same_results(runs["plain"], runs["rendering"])
