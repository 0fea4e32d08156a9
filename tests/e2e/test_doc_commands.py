"""Every shell block of README.md and docs/ marked ``<!-- runnable -->`` runs as written, in a fresh directory with
the repository's ``conf/`` (the user's own configs), one bash process per page so later blocks see earlier runs.

Budgets are made tiny by a ``python`` shell function that adds :data:`TINY` to each ``python -m lander.run`` that
trains, and caps the budget a resume is given (it keeps its run's saved config otherwise); nothing else of a command
is changed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import REPO, lander_env, tiny

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"<!-- runnable -->\s*```bash\n(.*?)```", re.S)
# what a page's `python -m lander.run` gets appended: one env, 256 steps, whatever the algorithm or preset
TINY = " ".join(["n_envs=1", "algo.total_timesteps=256", *tiny(None, 256, eval_every=128, episodes=2, checkpoints=128)])
WRAPPER = f"""
python() {{
  if [ "$1 $2" = "-m lander.run" ] && [[ " $* " != *" resume="* ]] && [[ " $* " != *" --help "* ]]; then
    command python "$@" {TINY}
  elif [ "$1 $2" = "-m lander.run" ] && [[ " $* " == *" total_timesteps="* ]]; then
    command python "$@" total_timesteps=512
  else
    command python "$@"
  fi
}}
"""


def runnable(page: Path) -> list[str]:
    """The runnable shell blocks of ``page``, in order."""
    return BLOCK.findall(page.read_text())


def test_the_docs_have_runnable_commands() -> None:
    assert len(runnable(REPO / "README.md")) >= 3
    assert sum(len(runnable(page)) for page in PAGES) >= 4


@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=lambda p: p.name)
def test_the_runnable_commands_of_a_page_run(page: Path, tmp_path: Path) -> None:
    shutil.copytree(REPO / "conf", tmp_path / "conf")
    for block in runnable(page):
        script = f"set -euo pipefail\n{WRAPPER}\n{block}"
        proc = subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=lander_env()
        )
        assert proc.returncode == 0, f"{page.name}:\n{block}\n{proc.stderr[-3000:]}"
