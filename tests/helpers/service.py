"""``python -m lander.serve`` for real: uvicorn in a subprocess, spoken to over HTTP with httpx, with the token
it printed (the ready-to-open URL ``http://127.0.0.1:<port>/?token=...``)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from helpers.runs import REPO, lander_env, tiny

# a run of a tiny budget, and one long enough to be stopped while it trains, both with the default logger (W&B
# offline: its files, links among them, are what a user's runs hold; a test that needs none adds logger=none)
# (the service takes lander's own keys only: the algorithm's size is set without algo=, whatever it is)
TINY = [
    "n_envs=2",
    "algo.model.n_steps=256",
    *tiny(None, 1024, eval_every=512, episodes=2, logger="wandb", video=True, report=True),
]
LONG = [
    "n_envs=2",
    "algo.model.n_steps=256",
    *tiny(None, 200000, eval_every=512, episodes=2, checkpoints=512, video=False, logger="wandb"),
]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Service:
    """A running service: its base URL, the token it printed (None where it printed none) and its output."""

    url: str
    port: int
    printed_url: str
    token: str | None
    output: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None  # the service's own

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def client(self, **kwargs: Any) -> httpx.Client:
        """An HTTP client of the service with its token (as a script or ``curl`` would use it)."""
        return httpx.Client(base_url=self.url, headers=self.auth, timeout=60, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        with self.client() as http:
            return http.get(path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        with self.client() as http:
            return http.post(path, **kwargs)

    def wait_for(self, path: str, predicate: Callable[[Any], bool], timeout: float = 240) -> Any:
        """Poll ``path`` until ``predicate(json)`` holds; return that JSON."""
        deadline, response = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            response = self.get(path, timeout=10)
            if response.status_code == 200 and predicate(response.json()):
                return response.json()
            time.sleep(0.2)
        raise AssertionError(f"{path}: not reached in {timeout} s; last: {response.text[:2000] if response else ''}")


@contextmanager
def service(
    root: Path, *args: str, env: dict[str, str] | None = None, keep: bool = False, cwd: Path = REPO
) -> Iterator[Service]:
    """``python -m lander.serve --root root`` (started in ``cwd``) on a free port until the block ends; then what it
    launched is killed too, unless ``keep`` (for a service restarted over the same root)."""
    port = free_port()
    cmd = [sys.executable, "-m", "lander.serve", "--root", str(root), "--port", str(port), *args]
    process = subprocess.Popen(
        cmd, cwd=cwd, env=env or lander_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout or []), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        printed = None
        for _ in range(300):  # the URL is printed once the service answers
            printed = next((m.group(0) for line in output if (m := re.search(r"http://\S+", line))), None)
            if printed:
                break
            assert process.poll() is None, "".join(output)
            time.sleep(0.1)
        assert printed, "".join(output)
        token = re.search(r"[?&]token=([^&\s]+)", printed)
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                httpx.get(url + "/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, "".join(output)
                time.sleep(0.1)
        yield Service(url, port, printed, token.group(1) if token else None, output, process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a request it is still busy with: not left running after the test
            process.kill()
            process.wait()
        if not keep:
            end_launched(root)


def end_launched(root: Path) -> None:
    """Kill what the service launched and is still running (each in its own session, writing under ``root``), once
    the test is done with it: a run left training would take the CPU from the tests after it."""
    record = root / ".lander-service" / "launched.jsonl"
    for line in record.read_text().splitlines() if record.is_file() else []:
        pid = json.loads(line)["pid"]
        with contextlib.suppress(OSError):  # ended already (its pid gone, or another process's now)
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            if "lander.run" in command and str(root.resolve()) in command:
                os.killpg(pid, signal.SIGKILL)
