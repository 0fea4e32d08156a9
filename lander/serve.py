"""``python -m lander.serve [--host 127.0.0.1] [--port 8765] [--root .] [--token T]``: the local experiment
service, FastAPI served by uvicorn. It finds the runs and sweeps under ``--root`` (``outputs/``, ``multirun/``)
on disk, launches, stops and resumes them, and serves the dashboard at ``/`` and the API docs at ``/docs``.

It binds 127.0.0.1 by default; any other address needs a token (``--token`` or ``LANDER_TOKEN``), and with a
token every request without it is refused (401).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger(__name__)
LOCAL = ("127.0.0.1", "localhost", "::1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lander.serve", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    parser.add_argument("--root", type=Path, default=Path("."), help="directory holding outputs/ and multirun/")
    parser.add_argument("--token", default=os.environ.get("LANDER_TOKEN"), help="required from clients (LANDER_TOKEN)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root}: not a directory")
    if args.host not in LOCAL and not args.token:
        parser.error(f"--host {args.host} is reachable from other machines: give a --token (or set LANDER_TOKEN)")
    import uvicorn

    from lander.service.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    url = f"http://{args.host}:{args.port}/" + ("?token=<your token>" if args.token else "")
    log.info("lander service for %s: %s (API docs at /docs)", args.root.resolve(), url)
    uvicorn.run(create_app(args.root, args.token), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
