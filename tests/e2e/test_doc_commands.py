"""Every shell block of README.md and docs/ marked ``<!-- runnable -->`` runs as written, in a fresh directory with
the repository's ``conf/`` (the user's own configs), one bash process per page so later blocks see earlier runs.

Each ``python -m lander.<command>`` runs as a process of its own, forked from a parent that has imported torch, SB3
and Hydra once (``helpers.processes.warm_shell``; ``LANDER_TEST_COLD=1``: a new interpreter each). Budgets are made
tiny by a ``python`` shell function that adds :data:`TINY` to each ``python -m lander.run`` that
trains, and caps the budget a resume is given (it keeps its run's saved config otherwise); nothing else of a command
is changed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import REPO, lander_env, tiny
from helpers.processes import warm_shell

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"<!-- runnable -->\s*```bash\n(.*?)```", re.S)
# what a page's `python -m lander.run` gets appended: one env, 256 steps, whatever the algorithm or preset; the video
# and the report as a user's command makes them
TINY = " ".join(
    [
        "n_envs=1",
        "algo.total_timesteps=256",
        *tiny(None, 256, eval_every=128, episodes=2, checkpoints=128, video=True, report=True),
    ]
)
WRAPPER = f"""
warm() {{
  if [ -n "${{WARM_PYTHON:-}}" ] && [ "$1" = "-m" ] && [[ "$2" == lander.* ]]; then
    $WARM_PYTHON "${{@:2}}"  # python -m lander.<command> ..., forked warm (helpers.processes.warm_shell)
  else
    command python "$@"
  fi
}}
python() {{
  if [ "$1 $2" = "-m lander.run" ] && [[ " $* " != *" resume="* ]] && [[ " $* " != *" --help "* ]]; then
    warm "$@" {TINY}
  elif [ "$1 $2" = "-m lander.run" ] && [[ " $* " == *" total_timesteps="* ]]; then
    warm "$@" total_timesteps=512
  else
    warm "$@"
  fi
}}
"""


def runnable(page: Path) -> list[str]:
    """The runnable shell blocks of ``page``, in order."""
    return BLOCK.findall(page.read_text())


def test_the_docs_have_runnable_commands() -> None:
    assert len(runnable(REPO / "README.md")) >= 3
    assert sum(len(runnable(page)) for page in PAGES) >= 4


@pytest.fixture(scope="module")
def shell_env() -> Iterator[dict[str, str]]:
    """The environment of the pages' shells: ``python -m lander.<command>`` forked warm (``WARM_PYTHON``), each
    still a process of its own with the shell's stdin, stdout, stderr, directory and environment."""
    env = lander_env()
    with warm_shell(env) as warm:
        yield env | ({"WARM_PYTHON": warm} if warm else {})


@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=lambda p: p.name)
def test_the_runnable_commands_of_a_page_run(page: Path, tmp_path: Path, shell_env: dict[str, str]) -> None:
    shutil.copytree(REPO / "conf", tmp_path / "conf")
    for block in runnable(page):
        script = f"set -euo pipefail\n{WRAPPER}\n{block}"
        proc = subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=shell_env
        )
        assert proc.returncode == 0, f"{page.name}:\n{block}\n{proc.stderr[-3000:]}"
