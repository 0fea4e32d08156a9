"""Benchmark: the default test suite's time at two commits, on the tests both have (the same node ids).

    python benchmarks/suite_same_tests.py OLD NEW [-k EXPRESSION]

Each commit is checked out in a worktree of its own (under a temporary folder), its default suite collected
(``python -m pytest --collect-only``), and the node ids both collect are run at each commit in turn, one after the
other (``python -m pytest`` with the project's options, restricted to those ids by a collection hook: the plugin
below). Prints each commit's pytest summary line. Run it with nothing else on the machine. ``-k`` narrows both runs
(a quick check of the script itself).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLUGIN = """
import os
KEEP = set(open(os.environ["SAME_TESTS"]).read().splitlines())


def pytest_collection_modifyitems(config, items):
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in KEEP])
    items[:] = [item for item in items if item.nodeid in KEEP]
"""


def pytest(tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest <args>`` in ``tree``, importing lander from it."""
    env = env | {"PYTHONPATH": os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=tree, env=env,
                          capture_output=True, text=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("-k", default=None, help="a pytest -k expression for both runs")
    args = parser.parse_args()
    narrow = ["-k", args.k] if args.k else []
    with tempfile.TemporaryDirectory(prefix="same-tests-") as folder:
        base = Path(folder)
        (base / "same_tests_plugin.py").write_text(PLUGIN)
        env = dict(os.environ) | {"PYTHONPATH": str(base), "SAME_TESTS": str(base / "ids.txt")}
        trees, collected = {}, []
        for name, commit in (("old", args.old), ("new", args.new)):
            trees[name] = base / name
            subprocess.run(["git", "worktree", "add", "--detach", "-q", str(trees[name]), commit], cwd=REPO, check=True)
            listing = pytest(trees[name], env, "--collect-only", "-q", *narrow).stdout
            collected.append({line for line in listing.splitlines() if "::" in line})
        same = collected[0] & collected[1]
        (base / "ids.txt").write_text("\n".join(sorted(same)))
        print(f"{len(collected[0])} tests at {args.old}, {len(collected[1])} at {args.new}, {len(same)} in both")
        try:
            for name, commit in (("old", args.old), ("new", args.new)):
                result = pytest(trees[name], env, "-q", "-p", "same_tests_plugin", *narrow)
                print(f"{commit}: {result.stdout.strip().splitlines()[-1]}", flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)


if __name__ == "__main__":
    main()
