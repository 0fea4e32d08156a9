"""The experiment service: a dashboard and REST API over the runs and sweeps under --root (FastAPI, uvicorn).

``python -m lander.serve [--root .] [--port 8765]`` finds the runs and sweeps under ``--root`` (``outputs/``,
``multirun/``) on disk, launches, stops and resumes them, and serves the dashboard at ``/``.

It starts Python processes as you, so it is guarded as Jupyter Server is (see ``lander/service/guard.py`` and the
docs/service-and-security.md): a random token by default, printed in a ready-to-open URL; the Host header checked
(against DNS rebinding) and the Origin of every state change; run files served sandboxed; launch requests are
data, never code; a resumed run's saved config imports only what lander ships or ``--allow-target`` allows.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import secrets
import signal
import socket
import sys
from pathlib import Path

from lander.storage.rundir import enclosing_run, made_from

log = logging.getLogger(__name__)
LOCAL = ("127.0.0.1", "localhost", "::1")
TOKEN = re.compile(r"[A-Za-z0-9._~-]{16,}")
"""A chosen token: 16 characters or more (one of 3 characters, with nothing to slow a guesser down, fell to 2**18
guesses), each one a URL, a cookie and a header carry as it is (the printed URL's ``?token=`` was cut at a ``&``)."""


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lander.serve", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--root", type=Path, default=Path("."), help="directory holding outputs/ and multirun/ (default .)")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    add("--port", type=int, default=8765, help="port (default 8765)")
    add(
        "--token",
        default=os.environ.get("LANDER_TOKEN"),
        help="the token clients must give (default: LANDER_TOKEN, else a new random one at each start, printed in "
        "the URL). A token given here is readable by every user of this machine in the process list "
        "(/proc/<pid>/cmdline): set LANDER_TOKEN instead",
    )
    add(
        "--no-token",
        action="store_true",
        help="no token (127.0.0.1 only, with --no-token-acknowledged): any "
        "process or user of this machine can then launch runs as you",
    )
    add("--no-token-acknowledged", action="store_true", help=argparse.SUPPRESS)
    add(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients use to reach the service (its name on a lab network, a reverse proxy's); repeatable",
    )
    add(
        "--allow-target",
        action="append",
        default=[],
        metavar="PREFIX",
        help="let launched and resumed runs "
        "import _target_s under this dotted prefix (your own callbacks, e.g. mylab.callbacks); repeatable",
    )
    add(
        "--max-running",
        type=int,
        default=os.cpu_count() or 1,
        help="the most runs and sweeps it keeps running at once (default: the number of cores)",
    )
    add("--max-jobs", type=int, default=100, help="the most jobs one sweep request may expand to (default 100)")
    return parser


def without_working_directory() -> None:
    """Take the working directory off ``sys.path``, as ``python -P`` does: ``python -m`` puts it first, and the
    service's root is usually the working directory, a folder that may be downloaded. With it there, Hydra's
    plugin discovery would import a planted ``hydra_plugins/`` and a config's module (``env.id: evil:Env``) could be
    imported from it, in the service's own process."""
    here = os.getcwd()
    if sys.path and sys.path[0] in ("", ".", here):
        del sys.path[0]


def bind(host: str, port: int) -> socket.socket:
    """The service's socket, bound as uvicorn binds it (``SO_REUSEADDR``; IPv6 for an address with ':').

    Bound before the dashboard's URL, token and all, is printed: a port another process holds is refused here, so
    the URL never names that process's server (opening it would hand it the token).

    :raise OSError: the address cannot be bound (in use, not this machine's, a port below 1024 without the right)
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def main(argv: list[str] | None = None) -> int:
    without_working_directory()  # before anything imports Hydra or a config's module
    args = parser().parse_args(argv)
    if not args.root.is_dir():
        parser().error(f"--root {args.root}: not a directory")
    if (run := enclosing_run(args.root)) is not None:  # it lists nothing; a launch would make outputs/ in the run
        where = "the run" if run == args.root.resolve() else "inside the run"
        parser().error(
            f"--root {args.root} is {where} {run}: the dashboard serves the directory runs are made from; "
            f"start it with --root {made_from(run) or '<the directory that run was made from>'}"
        )
    if args.no_token and not args.no_token_acknowledged:
        parser().error(
            "--no-token lets any process or user of this machine launch Python processes as you: add "
            "--no-token-acknowledged to confirm (127.0.0.1 only)"
        )
    if args.no_token and args.host not in LOCAL:
        parser().error(f"--no-token: only on 127.0.0.1 (--host {args.host} is reachable from other machines)")
    if args.max_running < 1 or args.max_jobs < 1:
        parser().error("--max-running and --max-jobs: at least 1")
    if not 1 <= args.port <= 65535:
        parser().error(f"--port {args.port}: a port number from 1 to 65535")
    if args.token and not args.no_token and not TOKEN.fullmatch(args.token):  # '' (LANDER_TOKEN=): a random one
        others = sorted({c for c in args.token if not TOKEN.fullmatch(c * 16)})
        given = f"{len(args.token)} characters" + (f", with {', '.join(map(repr, others))}" if others else "")
        parser().error(
            f"--token (or LANDER_TOKEN): {given}; a chosen token is at least 16 characters, each a letter, digit, "
            "'.', '_', '~' or '-' (it guards launching Python processes as you): leave it out for a random one, or "
            "make one with python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    token = None if args.no_token else args.token or secrets.token_urlsafe(32)
    # after the arguments are checked, and after the working directory left sys.path (above): nothing a folder
    # holds is imported in the service's process
    import uvicorn

    from lander.service.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    hosts = [*args.allow_host, *([] if args.host in ("0.0.0.0", "::") else [args.host])]
    app = create_app(args.root, token, args.port, hosts, args.max_running, args.max_jobs, args.allow_target)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        parser().error(f"--host {args.host} --port {args.port}: cannot listen there ({exc.strerror or exc})")
    everywhere = args.host in ("0.0.0.0", "::")  # not a name a client can use: this machine's and --allow-host's
    names = ["127.0.0.1", *args.allow_host] if everywhere else [args.host]
    urls = [
        f"http://{f'[{name}]' if ':' in name else name}:{args.port}/" + (f"?token={token}" if token else "")
        for name in names
    ]
    log.info("lander service for %s; open the dashboard at:\n    %s", args.root.resolve(), "\n    ".join(urls))
    if not any((args.root / place).is_dir() for place in ("outputs", "multirun", "comparisons")):
        log.info(
            "%s has no outputs/ or multirun/ yet: the dashboard lists the runs and sweeps there, those python -m "
            "lander.run makes when run from that directory and those launched from the dashboard (runs made "
            "elsewhere: start the service with --root <the directory they were run from>)",
            args.root.resolve(),
        )
    if everywhere and not args.allow_host:
        log.warning(
            "bound to every address: give each name or address clients use with --allow-host (e.g. "
            "--allow-host myserver.lab); other Host headers are refused"
        )
    # SIGTERM (kill, systemd's and Docker's stop) ends the service as Ctrl-C does: uvicorn shuts down on either and
    # then raises the signal again, which by default killed the process before its exit handlers (the launched
    # processes' working directory was left in the temporary directory)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
