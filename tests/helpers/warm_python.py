"""``python warm_python.py <module> <args>``: ``python -m <module> <args>`` run warm, by the parent listening on the
UNIX socket ``$LANDER_TEST_ZYGOTE`` (``zygote.py --socket``), with this process's stdin, stdout, stderr, working
directory and environment; it exits as that run did. The docs' shell commands call it (``test_doc_commands.py``).

It imports nothing but the standard library: it starts in milliseconds, where ``python -m lander.run`` takes seconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys


def main() -> None:
    request = {"module": sys.argv[1], "args": sys.argv[2:], "cwd": os.getcwd(), "env": dict(os.environ)}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
        connection.connect(os.environ["LANDER_TEST_ZYGOTE"])
        socket.send_fds(connection, [json.dumps(request | {"session": False}).encode()], [0, 1, 2])
        status = json.loads(connection.recv(1 << 16))["status"]
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: so is this process
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main()
