"""lander's callback list (:class:`lander.training.callbacks.SharedLocals`): every callback sees the rollout's
locals it sees under SB3's own ``CallbackList``, whether it shares SB3's dict, keeps one of its own, or updates it
its own way."""

from __future__ import annotations

from typing import Any

from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, EveryNTimesteps

from lander.training.callbacks import SharedLocals


class Seen(BaseCallback):
    """Keeps, at each step, what its ``locals`` hold of the step: the rewards, the actions, the step count."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[Any, ...]] = []

    def _on_step(self) -> bool:
        self.seen.append((self.locals["n_steps"], self.locals["rewards"].tolist(), self.locals["actions"].tolist()))
        return True


class OwnDict(Seen):
    """A callback that keeps a dict of locals of its own (not SB3's shared one)."""

    def _on_training_start(self) -> None:
        self.locals = dict(self.locals)


class OwnUpdate(Seen):
    """A callback that updates its locals its own way: it keeps every step's actions."""

    def __init__(self) -> None:
        super().__init__()
        self.updates = 0

    def update_locals(self, locals_: dict[str, Any]) -> None:
        self.updates += 1
        super().update_locals(locals_)


def callbacks() -> list[BaseCallback]:
    return [Seen(), OwnDict(), OwnUpdate(), EveryNTimesteps(64, OwnDict()), EveryNTimesteps(64, Seen())]


def seen(tree: list[BaseCallback]) -> list[Any]:
    found: list[Any] = []
    for callback in tree:
        child = getattr(callback, "callback", None)
        found.append((child or callback).seen)
        if isinstance(callback, OwnUpdate):
            found.append(callback.updates)
    return found


def trained(tree: list[BaseCallback], wrap: type[CallbackList]) -> list[Any]:
    """What each callback of ``tree`` saw in 128 steps of PPO on CartPole, the list ``wrap`` of them."""
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(128, callback=wrap(tree))
    return seen(tree)


def test_every_callback_sees_the_locals_it_sees_under_sb3s_list() -> None:
    sb3 = trained(callbacks(), CallbackList)
    assert [step for step, _, _ in sb3[0]] == list(range(32)) * 4  # each step's own locals
    assert [step for step, _, _ in sb3[1]] == list(range(32)) * 4  # also in a dict of the callback's own
    assert sb3[3] == 128 + 4  # OwnUpdate: each step and each rollout's end
    assert sb3 == trained(callbacks(), SharedLocals)
