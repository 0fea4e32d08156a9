"""``python -m lander.<command>`` processes for the tests: started warm (forked by ``tests/helpers/zygote.py``, which
has imported torch, SB3, Hydra and W&B once) or cold (a new interpreter: ``LANDER_TEST_COLD=1``, or an environment
that changes the interpreter itself, ``PYTHON*``). Either way a real process with its own pid, signals, exit code,
stdout and stderr; warm saves about 5 s of imports a process.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ZYGOTE = Path(__file__).with_name("zygote.py")
WARM_PYTHON = Path(__file__).with_name("warm_python.py")
REPO = Path(__file__).resolve().parents[2]
_idle: list[_Zygote] = []


class _Zygote:
    """One warm parent; it runs one child at a time."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.process = subprocess.Popen(
            [sys.executable, str(ZYGOTE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO, env=env, text=True
        )
        atexit.register(self.process.kill)

    def fits(self, env: dict[str, str]) -> bool:
        """The interpreter's own settings (``PYTHON*``) are those it was started with."""
        python = {k: v for k, v in env.items() if k.startswith("PYTHON")}
        return self.process.poll() is None and python == {k: v for k, v in self.env.items() if k.startswith("PYTHON")}

    def start(self, request: dict) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return int(self.reply(None)["pid"])

    def reply(self, timeout: float | None) -> dict:
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise TimeoutError
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the warm parent of the test processes died")
        return json.loads(line)


class LanderProcess:
    """A started ``python -m lander.<command>``: ``pid``, ``send_signal``, ``poll``, ``wait`` and ``returncode``
    as :class:`subprocess.Popen`; ``stdout`` and ``stderr`` (text) once it has ended."""

    def __init__(
        self,
        module: str,
        args: list[str],
        cwd: Path,
        env: dict[str, str],
        *,
        session: bool = False,
        merged: bool = False,
        cold: bool = False,
    ) -> None:
        """:param session: in a new session (its own process group, as ``start_new_session``)
        :param merged: stderr into stdout, in the order written (``stderr=subprocess.STDOUT``)
        :param cold: a new interpreter even where a warm parent could start it (what the warm parent has imported,
            and what importing made, is its own: W&B's temporary folders)"""
        self.args = [sys.executable, "-m", module, *args]
        self.returncode: int | None = None
        self._files = tempfile.TemporaryDirectory(prefix="lander-test-")
        self._out, self._err = Path(self._files.name, "stdout"), Path(self._files.name, "stderr")
        self._zygote = None if cold or os.environ.get("LANDER_TEST_COLD") else _take(env)
        if self._zygote is None:
            with self._out.open("w") as out, self._err.open("w") as err:
                self._cold = subprocess.Popen(
                    self.args,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT if merged else err,
                    start_new_session=session,
                )
            self.pid = self._cold.pid
        else:
            request = {"module": module, "args": args, "cwd": str(cwd), "env": env, "session": session}
            files = {"stdout": str(self._out), "stderr": None if merged else str(self._err)}
            self.pid = self._zygote.start(request | files)

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.wait(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if self._zygote is None:
            self.returncode = self._cold.wait(timeout)
            return self.returncode
        try:
            status = self._zygote.reply(timeout)["status"]
        except TimeoutError:
            raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
        self.returncode = os.waitstatus_to_exitcode(status)
        _idle.append(self._zygote)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    @property
    def stdout(self) -> str:
        return self._out.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self._err.read_text(errors="replace") if self._err.is_file() else ""

    def completed(self, timeout: float | None) -> subprocess.CompletedProcess:
        """Wait (killing it past ``timeout`` seconds, as :func:`subprocess.run`) and return what it left."""
        try:
            self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.wait()
            raise
        result = subprocess.CompletedProcess(self.args, self.returncode, self.stdout, self.stderr)
        self._files.cleanup()
        return result


def _take(env: dict[str, str]) -> _Zygote | None:
    """An idle warm parent started with the same interpreter settings, or a new one; None where none can be."""
    for zygote in list(_idle):
        if zygote.fits(env):
            _idle.remove(zygote)
            return zygote
    python = {k: v for k, v in env.items() if k.startswith("PYTHON")}
    if python.get("PYTHONSAFEPATH"):  # sys.path differs: a cold start
        return None
    return _Zygote({k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | python)


def run_module(
    module: str, *args: str, cwd: Path = REPO, env: dict[str, str], timeout: float = 600, cold: bool = False
) -> subprocess.CompletedProcess:
    """``python -m <module> <args>`` run to its end (warm where it can be, unless ``cold``), its output captured."""
    return LanderProcess(module, list(args), cwd, env, cold=cold).completed(timeout)


@contextlib.contextmanager
def warm_shell(env: dict[str, str]) -> Iterator[str | None]:
    """A warm parent on a UNIX socket for a shell's ``python -m lander.<command>`` lines (``zygote.py --socket``);
    yields the command that runs one warm (``<it> lander.run seed=1``, ``LANDER_TEST_ZYGOTE`` set in ``env``), or
    None under ``LANDER_TEST_COLD=1``."""
    if os.environ.get("LANDER_TEST_COLD"):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="lander-zygote-") as folder:
        path = os.path.join(folder, "socket")
        server = subprocess.Popen([sys.executable, str(ZYGOTE), "--socket", path], cwd=REPO, env=env)
        try:
            while not os.path.exists(path):
                assert server.poll() is None, "the warm parent of the docs' commands did not start"
                time.sleep(0.05)
            env["LANDER_TEST_ZYGOTE"] = path
            yield f"{sys.executable} {WARM_PYTHON}"
        finally:
            server.kill()
            server.wait()
