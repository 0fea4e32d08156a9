"""Benchmark: a run's video of LunarLander, as lander writes it, against Gymnasium's env and x264's defaults.

    python benchmarks/video.py [--seeds 0 1 2 3 4] [--repeats 3]

Both arms play the same episodes (Gymnasium's heuristic pilot, one episode a seed, at lander's ``video.fps``),
render each frame and hand it to an H.264 writer, as ``lander.evaluation.video.write_video`` does:

- ``before``: ``gymnasium.make(..., render_mode="rgb_array")`` and imageio's libx264 writer with x264's defaults
  (the medium preset, a thread a core): lander's video before 2026-11-26;
- ``lander``: ``lander.envs.make_env(..., render_mode="rgb_array")`` (:class:`lander.envs.LeanLunarLander`'s frames)
  and the writer with :data:`lander.evaluation.video.X264_OPTIONS`.

The arms alternate ``--repeats`` times in this process. Prints, per arm, the medians of this process's CPU seconds
(rendering, handing the frames over), ffmpeg's (``RUSAGE_CHILDREN``: reaped as each writer closes) and the wall
seconds, the file's size, and the PSNR of every 10th decoded frame against the frame rendered; fails if the two
arms rendered different frames.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
from gymnasium.envs.box2d.lunar_lander import heuristic
from omegaconf import OmegaConf

from lander.envs import make_env
from lander.evaluation.video import X264_OPTIONS

REPO = Path(__file__).resolve().parent.parent
ENV = OmegaConf.create({"id": "LunarLander-v3", "kwargs": {}, "wrappers": []})
ARMS: dict[str, tuple[Callable[[], gym.Env], list[str] | None]] = {
    "before": (lambda: gym.make("LunarLander-v3", render_mode="rgb_array"), None),
    "lander": (lambda: make_env(ENV, render_mode="rgb_array"), X264_OPTIONS),
}


def cpu() -> tuple[float, float]:
    """This process's CPU seconds and its reaped children's."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def write(arm: str, seeds: list[int], fps: int, path: Path) -> tuple[dict[str, float], list[np.ndarray]]:
    """The episodes of ``seeds`` rendered and encoded to ``path`` by ``arm``: its costs, and every 10th frame."""
    make, options = ARMS[arm]
    env = make()
    kept: list[np.ndarray] = []
    start, wall = cpu(), time.perf_counter()
    extra: dict[str, Any] = {} if options is None else {"output_params": options}
    writer = imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=2, **extra)
    frames = 0
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        while True:
            frame = np.asarray(env.render())
            writer.append_data(frame)
            if frames % 10 == 0:
                kept.append(frame.copy())
            frames += 1
            obs, _, terminated, truncated, _ = env.step(heuristic(env.unwrapped, obs))
            if terminated or truncated:
                break
    writer.close()
    end = cpu()
    env.close()
    costs = {"render": end[0] - start[0], "ffmpeg": end[1] - start[1], "wall": time.perf_counter() - wall}
    return costs | {"frames": frames, "kB": path.stat().st_size / 1000}, kept


def psnr(path: Path, kept: list[np.ndarray]) -> float:
    """The PSNR (dB) of every 10th frame of the video at ``path`` against the frames rendered (``kept``)."""
    decoded = [frame for index, frame in enumerate(imageio.get_reader(path)) if index % 10 == 0]
    assert len(decoded) == len(kept)
    error = np.mean([np.mean((d.astype(np.float64) - k) ** 2) for d, k in zip(decoded, kept, strict=True)])
    return float(10 * np.log10(255**2 / error))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    fps = int(OmegaConf.load(REPO / "lander" / "conf" / "config.yaml").video.fps)
    results: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    quality: dict[str, float] = {}
    frames: dict[str, list[np.ndarray]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.repeats):
            for arm in ARMS:
                path = Path(folder) / f"{arm}.mp4"
                costs, frames[arm] = write(arm, args.seeds, fps, path)
                results[arm].append(costs)
                quality[arm] = psnr(path, frames[arm])
    assert all(np.array_equal(a, b) for a, b in zip(frames["before"], frames["lander"], strict=True)), "frames differ"
    print(f"{len(args.seeds)} episodes, {int(results['lander'][0]['frames'])} frames at {fps} fps, the same in both")
    print("| arm | CPU s rendering (this process) | CPU s ffmpeg | CPU s in all | wall s | kB | PSNR dB |")
    print("|---|---|---|---|---|---|---|")
    for arm, runs in results.items():
        median = {key: statistics.median(run[key] for run in runs) for key in ("render", "ffmpeg", "wall", "kB")}
        total = statistics.median(run["render"] + run["ffmpeg"] for run in runs)
        print(f"| {arm} | {median['render']:.2f} | {median['ffmpeg']:.2f} | {total:.2f} | {median['wall']:.2f} "
              f"| {median['kB']:.0f} | {quality[arm]:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
