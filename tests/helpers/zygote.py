"""A warm parent for the tests' ``python -m lander.<command>`` processes (run as a script by ``helpers.processes``).

It imports what every lander process imports (Hydra, torch, SB3, gymnasium, pandas, matplotlib, Plotly: about
5 s of a tiny run's 10), then forks one child per request, which runs ``lander.<command>`` as ``__main__`` exactly as
``python -m`` would (``runpy``, its own argv, cwd, environment, stdout and stderr files) and exits as the interpreter
would: the exit code, or the signal that killed it. lander forks its own sweep jobs the same way
(:mod:`lander.execution.isolate`), after importing the same modules.

Protocol, one JSON object a line: request ``{"module", "args", "cwd", "env", "stdout", "stderr", "session"}`` on
stdin (``stderr`` null: into stdout); replies ``{"pid": N}`` once the child exists, then ``{"status": wait status}``
when it has ended.

``zygote.py --socket PATH`` serves ``tests/helpers/warm_python.py`` instead (the shell commands of the docs): one
request a connection on a UNIX socket, the caller's own stdin, stdout and stderr passed with it (``SCM_RIGHTS``), the
reply ``{"status": wait status}``.
"""

from __future__ import annotations

import json
import os
import socket
import sys

START_ENV = dict(os.environ)

import hydra  # noqa: E402,F401  # what every lander process imports, imported once here
import matplotlib.pyplot  # noqa: E402,F401
import pandas  # noqa: E402
import plotly.graph_objects  # noqa: E402,F401
import scipy.stats  # noqa: E402,F401

import lander.evaluation.saved  # noqa: E402
import lander.reports.sweep_report  # noqa: E402
import lander.sweeps.callback  # noqa: E402
import lander.training.finish  # noqa: E402
import lander.training.train  # noqa: E402,F401


def warm_up() -> None:
    """Import what a run imports only when it gets there (about 2.5 s a process): torch._dynamo (on building the
    first optimizer), Box2D and pygame (the envs, the video), imageio's ffmpeg, PIL, and the Plotly classes a
    report's figures are built from (Plotly imports each on its first use)."""
    import Box2D  # noqa: F401
    import gymnasium.envs.box2d  # noqa: F401
    import imageio.plugins.ffmpeg  # noqa: F401
    import PIL.Image  # noqa: F401
    import pygame  # noqa: F401
    import torch._dynamo  # noqa: F401

    from lander.reports import figures

    table = pandas.DataFrame({"step": [0, 1], "value": [0.0, 1.0]})
    figure = figures.small_multiples(table, "step", ["value"], "warm-up")
    figure.add_trace(figures.band(table.step, table.value, table.value, "#1f77b4", "value", "value"))
    figure.add_scatter(x=[0], y=[0], error_y={"array": [1]}, marker={"size": 3})
    figure.to_html(include_plotlyjs=False)


warm_up()
SET_BY_IMPORTS = {k: v for k, v in os.environ.items() if k not in START_ENV}  # e.g. lander.envs' SDL_VIDEODRIVER


def child(request: dict, fds: list[int] | None = None) -> None:
    """Become ``python -m <module> <args>``, its stdin, stdout and stderr ``fds`` (or the request's files); never
    returns."""
    import atexit
    import runpy
    import signal
    import tempfile
    import threading
    import traceback

    code = 1
    try:
        if request["session"]:
            os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(SET_BY_IMPORTS | request["env"])
        tempfile.tempdir = None  # as in a new interpreter: found again from this environment (TMPDIR) at first use
        for fd, given in enumerate(fds or []):
            os.dup2(given, fd)
        files = () if fds else ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], 0), (2, request["stderr"], 0))
        for fd, name, mode in files:
            if name is None:  # stderr into stdout, in the order written
                os.dup2(1, fd)
                continue
            target = os.open(name, mode or (os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.path[0] = os.getcwd()  # as `python -m`: the working directory first
        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # as the interpreter: it ends by SIGINT
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter does at exit
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve(path: str) -> None:
    """Run one request of each connection to the UNIX socket ``path``, with the caller's stdin, stdout, stderr."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen()
    while True:
        connection, _ = server.accept()
        with connection:
            message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
            pid = os.fork()
            if pid == 0:
                server.close()
                child(json.loads(message), fds)
            for fd in fds:
                os.close(fd)
            _, status = os.waitpid(pid, 0)
            connection.sendall(json.dumps({"status": status}).encode())


def main() -> None:
    if sys.argv[1:2] == ["--socket"]:
        serve(sys.argv[2])
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": status}), flush=True)


if __name__ == "__main__":
    main()
