"""Environment construction: seeded training VecEnvs and single envs for evaluation and video.

Every env is ``gymnasium.make(env.id, **env.kwargs)`` wrapped in ``env.wrappers`` (Hydra ``_target_``
configs, each called with the env as its first argument), so training, evaluation and video see
exactly the same observations. Ids of the form ``module:EnvId`` import ``module`` first
(``ale_py:PongNoFrameskip-v4`` registers the Atari games).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import multiprocessing.util  # noqa: F401  # its exit handler registered before lander's (end_open_env_processes)
import os
import signal
import tempfile
import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from Box2D import (
    b2_dynamicBody,
    b2_staticBody,
    b2BodyDef,
    b2EdgeShape,
    b2FixtureDef,
    b2PolygonShape,
    b2RevoluteJointDef,
    b2World,
)
from gymnasium.envs.box2d.lunar_lander import (
    FPS,
    INITIAL_RANDOM,
    LANDER_POLY,
    LEG_AWAY,
    LEG_DOWN,
    LEG_H,
    LEG_SPRING_TORQUE,
    LEG_W,
    MAIN_ENGINE_POWER,
    MAIN_ENGINE_Y_LOCATION,
    SCALE,
    SIDE_ENGINE_AWAY,
    SIDE_ENGINE_HEIGHT,
    SIDE_ENGINE_POWER,
    VIEWPORT_H,
    VIEWPORT_W,
    ContactDetector,
    LunarLander,
)
from gymnasium.wrappers import OrderEnforcing, TimeLimit
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecNormalize
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

from lander.registry import takes_render_mode

log = logging.getLogger(__name__)

# Rendering with render_mode="rgb_array" needs no screen: pygame gets a dummy display, MuJoCo renders with EGL.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("MUJOCO_GL", "egl")


class TupleToDiscrete(gym.ObservationWrapper):
    """Numbers a ``Tuple`` of ``Discrete`` observations as one ``Discrete`` (Blackjack's (sum, card, ace)).

    Tabular methods index their table with it; SB3's networks one-hot encode it.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not (isinstance(space, gym.spaces.Tuple) and all(isinstance(s, gym.spaces.Discrete) for s in space)):
            raise ValueError(f"TupleToDiscrete needs a Tuple of Discrete spaces, got {space}")
        self.sizes = tuple(int(s.n) for s in space)
        self.starts = tuple(int(s.start) for s in space)
        self.observation_space = gym.spaces.Discrete(int(np.prod(self.sizes)))

    def observation(self, observation: tuple[int, ...]) -> int:
        index = tuple(int(o) - start for o, start in zip(observation, self.starts, strict=True))
        return int(np.ravel_multi_index(index, self.sizes))


def route_mujoco_warnings(env_id: str) -> None:
    """Send MuJoCo's warnings to ``logging`` (MuJoCo otherwise appends them to ``MUJOCO_LOG.TXT`` in the cwd)."""
    try:
        entry_point = str(gym.spec(env_id).entry_point)
    except Exception:  # an id gymnasium cannot look up yet ("module:Id") is no MuJoCo env of gymnasium's
        return
    if "mujoco" in entry_point:
        import mujoco  # optional (gymnasium[mujoco]), 0.18 s: only for MuJoCo's envs

        mujoco.set_mju_user_warning(lambda text: logging.getLogger("mujoco").warning(text.strip()))


def env_kwargs(env_cfg: DictConfig) -> dict[str, Any]:
    """Keyword arguments for ``gymnasium.make``: ``env.kwargs``, with ``render_mode=None`` unless they set one or
    the env's constructor takes none (an env of one's own that does not render: SB3's ``make_vec_env`` then makes
    it without, as ``gymnasium.make(id)`` does).

    Envs that are never rendered must be made with ``render_mode=None``: SB3's ``make_vec_env`` otherwise
    asks for ``"rgb_array"``, and LunarLander then builds decorative Box2D particles on every engine
    firing (no effect on the physics, 2.5-5x the cost of a step: BENCHMARKS.md). ``env.kwargs.render_mode`` is honoured,
    so a run with rendering training envs can still be asked for (the test that rendering changes nothing).
    """
    kwargs: dict[str, Any] = OmegaConf.to_container(env_cfg.kwargs, resolve=True) or {}  # type: ignore[assignment]
    if "render_mode" in kwargs or not takes_render_mode(env_cfg.id):
        return kwargs
    return {"render_mode": None} | kwargs


def apply_wrappers(env: gym.Env, wrappers: list[Any]) -> gym.Env:
    """Wrap ``env`` in each of ``wrappers`` (``_target_`` configs), first one innermost."""
    for wrapper in wrappers:
        env = instantiate(wrapper, env)
    return env


def make_env(env_cfg: DictConfig, render_mode: str | None = None) -> gym.Env:
    """One un-seeded, wrapped environment (the caller seeds it on ``reset``). Gymnasium's LunarLander (not rendered,
    or the video's ``rgb_array``) is a :class:`LeanLunarLander` in ``TimeLimit`` (the same episodes and frames as
    ``gymnasium.make``'s).

    :param env_cfg: the ``env`` config group
    :param render_mode: ``"rgb_array"`` for video (it wins over ``env.kwargs.render_mode``), ``None`` otherwise
    """
    route_mujoco_warnings(env_cfg.id)
    kwargs = env_kwargs(env_cfg) | ({"render_mode": render_mode} if render_mode else {})
    if render_mode in (None, "rgb_array") and is_plain_lunar_lander(env_cfg):  # the evaluations' and the video's
        game, max_steps = lean_lunar_lander(env_cfg.id, kwargs)  # the same episodes and frames, faster
        return OrderEnforcing(game) if max_steps is None else TimeLimit(OrderEnforcing(game), max_steps)
    env = gym.make(env_cfg.id, **kwargs)
    return apply_wrappers(env, env_cfg.get("wrappers") or [])


def is_plain_lunar_lander(env_cfg: DictConfig) -> bool:
    """Whether ``env_cfg`` is Gymnasium's LunarLander with no wrapper of lander's and no rendering: the envs made as
    :class:`LeanLunarLander` (training: :class:`LunarLanderVecEnv`; evaluation: :func:`make_env`), with the same
    trajectories as the wrapper stack."""
    try:
        entry_point = gym.spec(env_cfg.id).entry_point
    except Exception:  # an id gymnasium cannot look up yet ("module:Id") is no LunarLander of gymnasium's
        return False
    return (
        entry_point == LUNAR_LANDER_ENTRY
        and not env_cfg.get("wrappers")
        and env_kwargs(env_cfg).get("render_mode") is None
    )


def make_train_env(env_cfg: DictConfig, n_envs: int, seed: int, vec_env: str = "dummy") -> VecEnv:
    """Training envs wrapped in SB3's ``Monitor`` (true returns), then ``env.wrappers``; seeded ``seed, seed + 1, ...``.
    Gymnasium's LunarLander (no ``env.wrappers``, in this process) is :class:`LunarLanderVecEnv`: the same
    trajectories as that wrapper stack, stepped in one loop.

    Made with ``render_mode=None`` (see :func:`env_kwargs`); SB3's ``make_vec_env`` would render by default.

    :param env_cfg: the ``env`` config group
    :param n_envs: number of parallel envs
    :param seed: seed of the first env
    :param vec_env: ``"dummy"`` (one process) or ``"subproc"`` (one process per env)
    """
    route_mujoco_warnings(env_cfg.id)
    if is_plain_lunar_lander(env_cfg) and vec_env == "dummy":
        return LunarLanderVecEnv(env_cfg.id, n_envs, seed, env_kwargs(env_cfg))
    cls = SubprocEnvs if vec_env == "subproc" else DummyVecEnv
    kwargs = {"start_method": "forkserver"} if vec_env == "subproc" else None
    wrappers = OmegaConf.to_container(env_cfg.get("wrappers") or OmegaConf.create([]), resolve=True)
    assert isinstance(wrappers, list)
    return make_vec_env(
        env_cfg.id,
        n_envs=n_envs,
        seed=seed,
        env_kwargs=env_kwargs(env_cfg),
        vec_env_cls=cls,
        vec_env_kwargs=kwargs,
        wrapper_class=partial(apply_wrappers, wrappers=wrappers) if wrappers else None,
    )


# the run's (lander.process.signals): stop, pause and continue
RUN_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


def make_in_env_process(make: Callable[[], gym.Env], error_file: str) -> gym.Env:
    """``make()`` in an env process of ``vec_env=subproc``, which first leaves the run's signals
    (:data:`RUN_SIGNALS`) to the run's process: Ctrl-C reaches every process of the terminal's group (SLURM's and
    ``timeout``'s SIGTERM likewise), and the run stops at its next step, then closes its envs; SIGUSR1 and SIGUSR2
    to the group pause it and let it go on. An env process that died of the signal first broke the run's pipe: the
    run failed, without a checkpoint. Should the run's process die, the env process ends at its next read (SB3's
    worker: ``EOFError``).

    An exception of the env's (made, reset or stepped) is written to ``error_file`` before it ends the process, for
    :meth:`SubprocEnvs.ended` to name it and log its traceback in the run's ``run.log``: the process's own traceback
    went to the run's stderr only."""
    for signum in RUN_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    with EnvErrors.written_to(error_file):
        return EnvErrors(make(), error_file)


class EnvErrors(gym.Wrapper):
    """The outermost wrapper of an env in an env process: an exception its ``reset`` or ``step`` raises is written
    to ``error_file`` (its traceback) as it ends the process (:func:`make_in_env_process`)."""

    def __init__(self, env: gym.Env, error_file: str) -> None:
        super().__init__(env)
        self.error_file = error_file

    @staticmethod
    @contextlib.contextmanager
    def written_to(error_file: str) -> Iterator[None]:
        try:
            yield
        except BaseException:
            with contextlib.suppress(OSError), open(error_file, "w", encoding="utf-8") as handle:
                handle.write(traceback.format_exc())
            raise

    def reset(self, **kwargs: Any) -> Any:
        with self.written_to(self.error_file):
            return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        with self.written_to(self.error_file):
            return self.env.step(action)


class EnvProcessEnded(RuntimeError):
    """An env process of ``vec_env=subproc`` ended while the run needed it."""


class SubprocEnvs(SubprocVecEnv):
    """SB3's ``SubprocVecEnv`` (an env a process) that says which env process ended when one does, and closes
    without waiting on it: SB3's ``close`` waited for an answer from every env process, and those that had answered
    the last step already never answered again, so a run whose env raised in its process, or whose env process was
    killed, hung for ever after recording its failure."""

    def __init__(self, env_fns: list[Callable[[], gym.Env]], start_method: str | None = None) -> None:
        OPEN_ENV_PROCESSES.add(self)
        self.processes: list[Any] = []  # those started, should it fail as it starts them (SB3 sets both again)
        self.remotes: tuple[Any, ...] = ()
        self.errors = tempfile.TemporaryDirectory(prefix="lander-env-errors-")  # an env's exception, a file each
        self.error_files = [os.path.join(self.errors.name, f"{index}.txt") for index in range(len(env_fns))]
        env_fns = [partial(make_in_env_process, fn, path) for fn, path in zip(env_fns, self.error_files, strict=True)]
        try:
            super().__init__(env_fns, start_method)
        except BaseException as exc:  # env process 0 could not make its env (SB3 reads its spaces), or a signal
            error = self.ended() if isinstance(exc, (EOFError, ConnectionError)) else None
            self.end()  # the others, waiting for a command, end here: they leave SIGTERM to the run, and
            if error is not None:  # multiprocessing's exit, ending them by it, waited for them for ever
                raise error from exc
            raise

    def step_async(self, actions: np.ndarray) -> None:
        with self.watched():
            super().step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        with self.watched():
            return super().step_wait()

    def reset(self) -> Any:
        with self.watched():
            return super().reset()

    @contextlib.contextmanager
    def watched(self) -> Iterator[None]:
        """A pipe to an env process broken: :class:`EnvProcessEnded`, naming it and what ended it."""
        try:
            yield
        except (EOFError, ConnectionError) as exc:
            raise self.ended() from exc

    def ended(self) -> EnvProcessEnded:
        deadline = time.monotonic() + 5.0  # its pipe closed as it exited: its exit code comes a moment later
        while time.monotonic() < deadline and all(process.exitcode is None for process in self.processes):
            time.sleep(0.01)
        for index, process in enumerate(self.processes):
            if (code := process.exitcode) is not None:
                how = f"killed by {signal.Signals(-code).name}" if code < 0 else self.raised(index, code)
                return EnvProcessEnded(f"env process {index} of {len(self.processes)} (vec_env=subproc) ended: {how}")
        return EnvProcessEnded("an env process of vec_env=subproc stopped answering")

    def raised(self, index: int, code: int) -> str:
        """What env process ``index``, ended with exit code ``code``, says its env raised (its traceback logged)."""
        try:
            with open(self.error_files[index], encoding="utf-8") as handle:
                written = handle.read()
        except OSError:
            return f"exit code {code}; the env process's output is on the run's stderr"
        log.error("env process %d of vec_env=subproc: its env raised\n%s", index, written.rstrip())
        last = written.rstrip().splitlines()[-1] if written.strip() else "an exception"
        return f"its env raised {last} (exit code {code}; its traceback is in run.log)"

    def close(self) -> None:
        if self.closed:
            return
        if self.waiting or not all(process.is_alive() for process in self.processes):
            self.end()  # the answers it waits for never come: the env processes end here
            return
        try:
            super().close()
        except (EOFError, OSError):  # one ended meanwhile
            self.end()
        self.errors.cleanup()

    def end(self) -> None:
        """Kill the env processes (they ignore the run's signals: :func:`make_in_env_process`) and close their
        pipes."""
        for process in self.processes:
            if process.is_alive():
                process.kill()
        for process in self.processes:
            process.join()
        for remote in self.remotes:
            remote.close()
        self.errors.cleanup()
        self.closed = True


OPEN_ENV_PROCESSES: weakref.WeakSet[SubprocEnvs] = weakref.WeakSet()


def end_open_env_processes() -> None:
    """At exit, before multiprocessing's own handler (registered before this one, so run after it), which ends its
    children by SIGTERM and then waits for them: env processes still open (a path that never closed them) leave
    SIGTERM to the run, and that wait was for ever."""
    for envs in list(OPEN_ENV_PROCESSES):
        if not envs.closed:
            envs.end()


atexit.register(end_open_env_processes)


LUNAR_LANDER_ENTRY = "gymnasium.envs.box2d.lunar_lander:LunarLander"
DRAW_ONLY = "lander-draw-only"  # a render mode Gymnasium's LunarLander.render draws for and converts nothing for


class Blueprints:
    """The Box2D definitions Gymnasium's ``LunarLander.reset`` builds anew for every episode from keyword arguments,
    built once with the same keyword arguments (:meth:`LeanLunarLander.reset` creates the same bodies, fixtures and
    joints from them, in the same order). Box2D copies a definition into what it creates, so one serves every
    episode; the shapes are kept here, since a fixture definition points at its shape without holding it."""

    def __init__(self) -> None:
        x, y = VIEWPORT_W / SCALE / 2, VIEWPORT_H / SCALE
        # the moon: CreateStaticBody(shapes=edgeShape(...)) is a body, then a fixture of a default b2FixtureDef
        self.moon = b2BodyDef(type=b2_staticBody)
        self.floor_shape = b2EdgeShape(vertices=[(0, 0), (VIEWPORT_W / SCALE, 0)])
        self.floor = b2FixtureDef(shape=self.floor_shape)
        # each of its CreateEdgeFixture(vertices=..., density=0, friction=0.1): this shape given the vertices
        self.edge_shape = b2EdgeShape()
        self.edge = b2FixtureDef(shape=self.edge_shape, density=0, friction=0.1)
        self.hull_shape = b2PolygonShape(vertices=[(px / SCALE, py / SCALE) for px, py in LANDER_POLY])
        hull = b2FixtureDef(shape=self.hull_shape, density=5.0, friction=0.1, categoryBits=0x0010, maskBits=0x001,
                            restitution=0.0)  # fmt: skip
        self.lander = b2BodyDef(type=b2_dynamicBody, position=(x, y), angle=0.0, fixtures=hull)
        self.leg_shape = b2PolygonShape(box=(LEG_W / SCALE, LEG_H / SCALE))
        self.legs: list[tuple[b2BodyDef, b2RevoluteJointDef]] = []
        for side in (-1, +1):
            leg = b2FixtureDef(shape=self.leg_shape, density=1.0, restitution=0.0, categoryBits=0x0020, maskBits=0x001)
            body = b2BodyDef(type=b2_dynamicBody, position=(x - side * LEG_AWAY / SCALE, y), angle=side * 0.05,
                             fixtures=leg)  # fmt: skip
            joint = b2RevoluteJointDef(localAnchorA=(0, 0), localAnchorB=(side * LEG_AWAY / SCALE, LEG_DOWN / SCALE),
                                       enableMotor=True, enableLimit=True, maxMotorTorque=LEG_SPRING_TORQUE,
                                       motorSpeed=+0.3 * side)  # fmt: skip
            joint.lowerAngle, joint.upperAngle = (+0.9 - 0.5, +0.9) if side == -1 else (-0.9, -0.9 + 0.5)
            self.legs.append((body, joint))


class LeanLunarLander(LunarLander):
    """Gymnasium's ``LunarLander`` whose ``step`` and ``reset`` (without rendering) are written for speed and give the
    same numbers (``reset``: the same world, :meth:`reset`). ``step``: the same Box2D calls in the same order with the
    same arguments, the same random draws from the same ``np_random``, the same arithmetic on the same doubles
    (``math.sqrt`` for ``np.sqrt`` of a float, ``min`` and ``max`` for ``np.clip``), without
    ``action_space.contains`` or a Box2D property read twice, each of the engines' two dispersion draws made of
    ``random()`` as ``uniform(-1, 1)`` makes it (:meth:`advance`, which :class:`LunarLanderVecEnv` calls).
    ``tests/unit/test_envs.py`` steps it beside Gymnasium's own for tens of thousands of steps. Rendering, it resets and
    steps as Gymnasium's (particles are drawn) and its ``rgb_array`` frames, the same pixels, are read faster
    (:meth:`render`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.blueprints = Blueprints()  # the definitions reset creates an episode's bodies from

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.render_mode is not None:  # particles and frames: Gymnasium's own step
            return super().step(action)  # type: ignore[no-any-return,no-untyped-call]  # Gymnasium's, untyped
        state, reward, terminated = self.advance(action)
        return np.array(state, dtype=np.float32), reward, terminated, False, {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Gymnasium's ``reset``, without rendering: the same draws from ``np_random``, the same bodies, fixtures and
        joints created in the same order in a new world, from definitions built once (:class:`Blueprints`) instead of
        keyword arguments; and the last episode's world let go whole instead of its bodies destroyed one by one
        (Box2D's ``DestroyBody`` of the moon's eleven fixtures alone took a third of Gymnasium's reset)."""
        if self.render_mode is not None or self.particles:  # particles are drawn: Gymnasium's own reset
            return super().reset(seed=seed, options=options)  # type: ignore[no-any-return]  # Gymnasium's, untyped
        gym.Env.reset(self, seed=seed)
        if self.moon is not None:  # Gymnasium's _destroy first clears the listener: no callback of a dying world
            self.world.contactListener = None
        self.moon, self.lander, self.legs, self.drawlist = None, None, [], []  # nothing left of the world let go
        parts = self.blueprints
        self.world = b2World(gravity=(0, self.gravity))
        self.world.contactListener_keepref = ContactDetector(self)  # type: ignore[no-untyped-call]
        self.world.contactListener = self.world.contactListener_keepref
        self.game_over, self.prev_shaping = False, None
        self._moon(parts)
        self.lander = lander = self.world.CreateBody(parts.lander)
        lander.color1, lander.color2 = (128, 102, 230), (77, 77, 128)
        draw = self.np_random.uniform
        lander.ApplyForceToCenter((draw(-INITIAL_RANDOM, INITIAL_RANDOM), draw(-INITIAL_RANDOM, INITIAL_RANDOM)), True)
        if self.enable_wind:
            self.wind_idx = self.np_random.integers(-9999, 9999)
            self.torque_idx = self.np_random.integers(-9999, 9999)
        for body, joint in parts.legs:
            leg = self.world.CreateBody(body)
            leg.ground_contact = False
            leg.color1, leg.color2 = (128, 102, 230), (77, 77, 128)
            joint.bodyA, joint.bodyB = lander, leg
            joint.referenceAngle = leg.angle - lander.angle  # what b2RevoluteJointDef(bodyA=, bodyB=, ...) sets
            leg.joint = self.world.CreateJoint(joint)
            self.legs.append(leg)
        self.drawlist = [lander, *self.legs]
        return self.step(np.array([0, 0]) if self.continuous else 0)[0], {}

    def _moon(self, parts: Blueprints) -> None:
        """The terrain of the episode: Gymnasium's heights from ``np_random``, its body and its eleven edges."""
        chunks, width, height = 11, VIEWPORT_W / SCALE, VIEWPORT_H / SCALE
        heights = self.np_random.uniform(0, height / 2, size=(chunks + 1,))
        chunk_x = [width / (chunks - 1) * i for i in range(chunks)]
        self.helipad_x1, self.helipad_x2 = chunk_x[chunks // 2 - 1], chunk_x[chunks // 2 + 1]
        self.helipad_y = height / 4
        heights[chunks // 2 - 2 : chunks // 2 + 3] = self.helipad_y
        smooth_y = [0.33 * (heights[i - 1] + heights[i + 0] + heights[i + 1]) for i in range(chunks)]
        self.moon = moon = self.world.CreateBody(parts.moon)
        moon.CreateFixture(parts.floor)
        self.sky_polys = []
        for i in range(chunks - 1):
            p1, p2 = (chunk_x[i], smooth_y[i]), (chunk_x[i + 1], smooth_y[i + 1])
            parts.edge_shape.vertices = [p1, p2]
            moon.CreateFixture(parts.edge)
            self.sky_polys.append([p1, p2, (p2[0], height), (p1[0], height)])
        moon.color1, moon.color2 = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)

    def render(self) -> Any:
        """Gymnasium's frame. For ``rgb_array``, the same pixels read from the surface Gymnasium's ``render`` drew, by
        SDL's conversion (``pygame.image.tobytes``, 0.34 ms a 600x400 frame) instead of a copy of the strided
        ``surfarray.pixels3d`` view (0.80 ms); ``tests/unit/test_envs.py`` compares the frames."""
        if self.render_mode != "rgb_array":
            return super().render()  # type: ignore[no-untyped-call]  # Gymnasium's, untyped
        import pygame  # where a frame is drawn only, as Gymnasium imports it: ~50 ms no training env needs

        self.render_mode = DRAW_ONLY  # Gymnasium's render draws and flips self.surf, and returns nothing for it
        try:
            super().render()  # type: ignore[no-untyped-call]
        finally:
            self.render_mode = "rgb_array"
        pixels = bytearray(pygame.image.tobytes(self.surf, "RGB"))  # writable, as Gymnasium's frame is
        return np.frombuffer(pixels, dtype=np.uint8).reshape(VIEWPORT_H, VIEWPORT_W, 3)

    def advance(self, action: Any) -> tuple[list[float], float, bool]:
        """``step`` without rendering, its observation as doubles (the caller makes the float32 array where it
        wants it: :class:`LunarLanderVecEnv` writes it into its buffer): (state, reward, terminated)."""
        lander = self.lander
        assert lander is not None, "You forgot to call reset()"
        if self.enable_wind and not (self.legs[0].ground_contact or self.legs[1].ground_contact):
            self._blow()
        main, side = self._throttles(action)
        angle = lander.angle
        tip = (math.sin(angle), math.cos(angle))
        # np_random.uniform(-1, +1) twice: the same doubles (-1 + 2u is exact: 2u is), drawn one after the other
        draw = self._np_random.random  # type: ignore[union-attr]  # set by reset, before any step
        dispersion = [(-1.0 + 2.0 * draw()) / SCALE, (-1.0 + 2.0 * draw()) / SCALE]
        m_power = self._fire_main(main, tip, dispersion) if main is not None else 0.0
        s_power = self._fire_side(side, tip, dispersion) if side is not None else 0.0
        self.world.Step(1.0 / FPS, 6 * 30, 2 * 30)
        state = self._state()
        shaping = (
            -100 * math.sqrt(state[0] * state[0] + state[1] * state[1])
            - 100 * math.sqrt(state[2] * state[2] + state[3] * state[3])
            - 100 * abs(state[4])
            + 10 * state[6]
            + 10 * state[7]
        )
        reward = 0.0 if self.prev_shaping is None else shaping - self.prev_shaping
        self.prev_shaping = shaping  # type: ignore[assignment]  # Gymnasium types it as its first value, None
        reward -= m_power * 0.30
        reward -= s_power * 0.03
        terminated = False
        if self.game_over or abs(state[0]) >= 1.0:
            terminated, reward = True, -100
        if not lander.awake:
            terminated, reward = True, +100
        return state, reward, terminated

    def _blow(self) -> None:
        """The wind's force and the turbulence's torque of this step."""
        assert self.lander is not None
        wind_mag = math.tanh(math.sin(0.02 * self.wind_idx) + math.sin(math.pi * 0.01 * self.wind_idx))
        self.wind_idx += 1
        self.lander.ApplyForceToCenter((wind_mag * self.wind_power, 0.0), True)
        torque_mag = math.tanh(math.sin(0.02 * self.torque_idx) + math.sin(math.pi * 0.01 * self.torque_idx))
        self.torque_idx += 1
        self.lander.ApplyTorque(torque_mag * self.turbulence_power, True)

    def _throttles(self, action: Any) -> tuple[float | None, tuple[float, float] | None]:
        """The main engine's throttle (None: off) and the side engine's (direction, power) (None: off)."""
        if self.continuous:
            main = min(max(float(action[0]), -1.0), 1.0)  # np.clip(action, -1, 1), as doubles
            side = min(max(float(action[1]), -1.0), 1.0)
            throttle = (min(max(main, 0.0), 1.0) + 1.0) * 0.5 if main > 0.0 else None
            if abs(side) > 0.5:  # np.sign, of a value beyond +-0.5
                return throttle, (1.0 if side > 0 else -1.0, min(max(abs(side), 0.5), 1.0))
            return throttle, None
        integer = type(action) is int or (  # a Python int: what the vec env hands (one test, not three)
            isinstance(action, int | np.integer)
            or (isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer))
        )  # what Discrete(4).contains accepts
        if not integer or not 0 <= int(action) < 4:
            raise AssertionError(f"{action!r} ({type(action)}) invalid ")
        discrete = int(action)
        return 1.0 if discrete == 2 else None, (discrete - 2, 1.0) if discrete in (1, 3) else None

    def _fire_main(self, m_power: float, tip: tuple[float, float], dispersion: list[float]) -> float:
        """The main engine's impulse at throttle ``m_power``; returns it."""
        assert self.lander is not None
        ox = tip[0] * (MAIN_ENGINE_Y_LOCATION / SCALE + 2 * dispersion[0]) + -tip[1] * dispersion[1]
        oy = -tip[1] * (MAIN_ENGINE_Y_LOCATION / SCALE + 2 * dispersion[0]) - tip[0] * dispersion[1]
        position = self.lander.position
        impulse_pos = (position[0] + ox, position[1] + oy)
        impulse = (-ox * MAIN_ENGINE_POWER * m_power, -oy * MAIN_ENGINE_POWER * m_power)
        self.lander.ApplyLinearImpulse(impulse, impulse_pos, True)
        return m_power

    def _fire_side(self, side: tuple[float, float], tip: tuple[float, float], dispersion: list[float]) -> float:
        """The side engine's impulse, ``side`` = (direction, power); returns the power."""
        assert self.lander is not None
        direction, s_power = side
        away = 3 * dispersion[1] + direction * SIDE_ENGINE_AWAY / SCALE
        ox = tip[0] * dispersion[0] + -tip[1] * away
        oy = -tip[1] * dispersion[0] - tip[0] * away
        position = self.lander.position
        impulse_pos = (position[0] + ox - tip[0] * 17 / SCALE, position[1] + oy + tip[1] * SIDE_ENGINE_HEIGHT / SCALE)
        impulse = (-ox * SIDE_ENGINE_POWER * s_power, -oy * SIDE_ENGINE_POWER * s_power)
        self.lander.ApplyLinearImpulse(impulse, impulse_pos, True)
        return s_power

    def _state(self) -> list[float]:
        """The observation after the physics step, as doubles."""
        assert self.lander is not None
        pos, vel = self.lander.position, self.lander.linearVelocity
        return [
            (pos.x - VIEWPORT_W / SCALE / 2) / (VIEWPORT_W / SCALE / 2),
            (pos.y - (self.helipad_y + LEG_DOWN / SCALE)) / (VIEWPORT_H / SCALE / 2),
            vel.x * (VIEWPORT_W / SCALE / 2) / FPS,
            vel.y * (VIEWPORT_H / SCALE / 2) / FPS,
            self.lander.angle,
            20.0 * self.lander.angularVelocity / FPS,
            1.0 if self.legs[0].ground_contact else 0.0,
            1.0 if self.legs[1].ground_contact else 0.0,
        ]


def lean_lunar_lander(env_id: str, kwargs: dict[str, Any]) -> tuple[LeanLunarLander, int | None]:
    """The game ``gymnasium.make(env_id, **kwargs)`` unwraps to, as a :class:`LeanLunarLander`, and its time limit:
    the id's registered keyword arguments updated by ``kwargs`` (``LunarLanderContinuous-v3`` is ``continuous=True``),
    ``max_episode_steps`` taken as ``gymnasium.make`` takes it."""
    spec, game_kwargs = gym.spec(env_id), dict(kwargs)
    max_steps = game_kwargs.pop("max_episode_steps", spec.max_episode_steps)
    return LeanLunarLander(**{**spec.kwargs, **game_kwargs}), max_steps


class LunarLanderVecEnv(VecEnv):
    """``n_envs`` of Gymnasium's LunarLander stepped in one loop, with what Gymnasium's ``TimeLimit`` and SB3's
    ``Monitor`` and ``DummyVecEnv`` do written into that loop instead of a wrapper stack around each env.

    The same trajectories as :func:`make_train_env`'s ``DummyVecEnv`` of ``Monitor``-ed ``gymnasium.make`` envs for
    the same seed: the same observations, rewards, dones and infos (``episode``, ``TimeLimit.truncated``,
    ``terminal_observation``) in the same order, each game its own ``np_random`` seeded ``seed + rank`` at the first
    reset, its action space seeded as ``make_vec_env`` seeds it (``tests/unit/test_envs.py`` steps both for tens of
    thousands of steps). Each game is a :class:`LeanLunarLander`: Gymnasium's class, its ``step`` written for speed.

    :param env_id: a LunarLander id (``LunarLander-v3``; ``continuous`` comes in ``kwargs``)
    :param n_envs: number of games
    :param seed: the seed of the first game (the others ``seed + 1, ...``)
    :param kwargs: ``gymnasium.make``'s keyword arguments (``render_mode`` None)
    """

    def __init__(self, env_id: str, n_envs: int, seed: int, kwargs: dict[str, Any]) -> None:
        if kwargs.get("render_mode") is not None:  # its games step without drawing (LeanLunarLander.advance)
            raise ValueError(f"LunarLanderVecEnv does not render (render_mode={kwargs['render_mode']!r})")
        made = [lean_lunar_lander(env_id, kwargs) for _ in range(n_envs)]
        self.games, self.max_steps = [game for game, _ in made], made[0][1]
        for rank, game in enumerate(self.games):
            game.action_space.seed(seed + rank)  # as make_vec_env seeds each env's action space
        super().__init__(n_envs, self.games[0].observation_space, self.games[0].action_space)
        self.seed(seed)
        self.metadata = self.games[0].metadata
        space = self.observation_space
        assert isinstance(space, gym.spaces.Box)
        self.obs = np.zeros((n_envs, *space.shape), dtype=space.dtype)  # DummyVecEnv's buffer
        self.elapsed = [0] * n_envs  # TimeLimit's steps of the episode
        self.rewards: list[list[float]] = [[] for _ in range(n_envs)]  # Monitor's rewards of the episode
        self.started = time.time()  # Monitor's t_start
        self.actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        for rank, game in enumerate(self.games):
            options = {"options": self._options[rank]} if self._options[rank] else {}
            self.obs[rank], self.reset_infos[rank] = game.reset(seed=self._seeds[rank], **options)
            self.elapsed[rank], self.rewards[rank] = 0, []
        self._reset_seeds()
        self._reset_options()
        return self.obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        assert self.actions is not None
        rewards = np.zeros(self.num_envs, dtype=np.float32)
        dones = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict[str, Any]] = []
        obs, elapsed, max_steps = self.obs, self.elapsed, self.max_steps
        actions = self.actions.tolist()  # Python numbers: what the games read of an action, unrounded
        for rank, game in enumerate(self.games):
            state, reward, terminated = game.advance(actions[rank])
            elapsed[rank] += 1
            truncated = max_steps is not None and elapsed[rank] >= max_steps  # TimeLimit's
            episode = self.rewards[rank]
            episode.append(float(reward))
            rewards[rank] = reward
            if not (terminated or truncated):
                obs[rank] = state  # float32, rounded as np.array(state, dtype=np.float32) rounds
                infos.append({"TimeLimit.truncated": False})
                continue
            dones[rank] = True
            infos.append(  # Monitor's record of the episode, DummyVecEnv's keys, in their order
                {
                    "episode": {
                        "r": round(sum(episode), 6),
                        "l": len(episode),
                        "t": round(time.time() - self.started, 6),
                    },
                    "TimeLimit.truncated": truncated and not terminated,
                    "terminal_observation": np.array(state, dtype=np.float32),
                }
            )
            obs[rank], self.reset_infos[rank] = game.reset()
            elapsed[rank], self.rewards[rank] = 0, []
        return obs.copy(), rewards, dones, infos

    def close(self) -> None:
        for game in self.games:
            game.close()  # type: ignore[no-untyped-call]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.games[i], attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for i in self._get_indices(indices):
            setattr(self.games[i], attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        return [getattr(self.games[i], method_name)(*method_args, **method_kwargs) for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        # what Monitor and TimeLimit do is done here (SB3's evaluate_policy reads info["episode"] where Monitor wraps)
        return [wrapper_class in (Monitor, TimeLimit) for _ in self._get_indices(indices)]


def normalized(venv: VecEnv, normalize: DictConfig, gamma: float) -> VecEnv:
    """``venv`` inside SB3's ``VecNormalize`` as ``env.normalize`` says (``enabled: false``: ``venv`` itself).

    :param normalize: the ``env.normalize`` node
    :param gamma: the run's discount, for the discounted return when ``normalize.gamma`` is null
    """
    if not normalize.enabled:
        return venv
    return VecNormalize(
        venv,
        training=True,
        norm_obs=bool(normalize.norm_obs),
        norm_reward=bool(normalize.norm_reward),
        clip_obs=float(normalize.clip_obs),
        clip_reward=float(normalize.clip_reward),
        gamma=float(normalize.gamma if normalize.gamma is not None else gamma),
        epsilon=float(normalize.epsilon),
    )
