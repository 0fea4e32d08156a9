"""Load on the experiment service while a run trains: does polling slow training, and how fast does it answer?

Starts ``python -m lander.serve`` on a free port over a fresh root (with a token, as by default), then trains
the same PPO run twice per repetition, once alone and once while ``--clients`` clients each poll
``GET /api/runs`` and the run's ``GET /api/runs/{id}/metrics/eval?since=...`` every ``--interval`` seconds
(the dashboard polls every 2 s), alternating the order. Reports the run's training steps/s (``summary.json``:
``train_steps_per_second``) with and without the load, and the requests' latency percentiles and errors.

    python benchmarks/service_load.py --clients 20 --reps 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

TOKEN = secrets.token_urlsafe(32)
AUTH = {"Authorization": f"Bearer {TOKEN}"}  # what a script sends (the dashboard: the cookie the URL sets)
RUN = ["algo=ppo", "total_timesteps=250000", "video.enabled=false", "progress_bar=false", "logger=none"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train(root: Path, name: str) -> subprocess.Popen:
    run_dir = root / "outputs" / name
    return subprocess.Popen(
        [sys.executable, "-m", "lander.run", *RUN, f"hydra.run.dir={run_dir}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def steps_per_second(root: Path, name: str) -> float:
    return json.loads((root / "outputs" / name / "summary.json").read_text())["train_steps_per_second"]


async def client(url: str, run_id: str, interval: float, until: float, latencies: list, errors: list) -> None:
    since = 0
    async with httpx.AsyncClient(base_url=url, timeout=10, headers=AUTH) as http:
        while time.monotonic() < until:
            for path in ("/api/runs", f"/api/runs/{run_id}/metrics/eval"):
                started = time.perf_counter()
                try:
                    response = await http.get(path, params={"since": since} if "metrics" in path else None)
                    latencies.append(time.perf_counter() - started)
                    if response.status_code != 200:
                        errors.append(f"{path}: {response.status_code}")
                    elif "metrics" in path and response.json():
                        since = response.json()[-1]["timesteps"]
                except httpx.HTTPError as exc:
                    errors.append(f"{path}: {exc!r}")
            await asyncio.sleep(interval)


async def load(url: str, run_id: str, clients: int, interval: float, seconds: float) -> tuple[list, list]:
    latencies: list[float] = []
    errors: list[str] = []
    until = time.monotonic() + seconds
    await asyncio.gather(*(client(url, run_id, interval, until, latencies, errors) for _ in range(clients)))
    return latencies, errors


def loaded_run(root: Path, url: str, name: str, args: argparse.Namespace) -> tuple[list, list]:
    process = train(root, name)
    run_id = f"outputs~{name}"
    while httpx.get(f"{url}/api/runs/{run_id}", headers=AUTH).status_code != 200:  # the run directory exists
        time.sleep(0.2)
    latencies, errors = asyncio.run(load(url, run_id, args.clients, args.interval, args.seconds))
    if process.wait() != 0:
        raise SystemExit(f"the loaded run {name} failed")
    return latencies, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between a client's polls")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the clients poll")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lander-load-"))
    port = free_port()
    service = subprocess.Popen(
        [sys.executable, "-m", "lander.serve", "--root", str(root), "--port", str(port), "--token", TOKEN],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                httpx.get(url + "/api/runs", timeout=1, headers=AUTH)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        alone, loaded, latencies, errors = [], [], [], []
        for rep in range(args.reps):
            for order in (False, True) if rep % 2 == 0 else (True, False):
                name = f"rep{rep}_{'loaded' if order else 'alone'}"
                if order:
                    lat, err = loaded_run(root, url, name, args)
                    latencies += lat
                    errors += err
                    loaded.append(steps_per_second(root, name))
                else:
                    if train(root, name).wait() != 0:
                        raise SystemExit(f"the run {name} failed")
                    alone.append(steps_per_second(root, name))
                print(f"{name}: {steps_per_second(root, name):,.0f} training steps/s", flush=True)
    finally:
        service.send_signal(signal.SIGINT)
        service.wait(timeout=30)
    ms = np.array(latencies) * 1000
    ratio = np.median(loaded) / np.median(alone)
    print(
        f"runs alone: {', '.join(f'{v:,.0f}' for v in alone)} steps/s; with {args.clients} clients polling every "
        f"{args.interval:g} s: {', '.join(f'{v:,.0f}' for v in loaded)} steps/s; median ratio {ratio:.3f}"
    )
    print(
        f"requests: {len(ms)}, errors: {len(errors)}; latency p50 {np.percentile(ms, 50):.1f} ms, "
        f"p95 {np.percentile(ms, 95):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms, max {ms.max():.1f} ms"
    )
    for error in errors[:10]:
        print("  error:", error)


if __name__ == "__main__":
    main()
