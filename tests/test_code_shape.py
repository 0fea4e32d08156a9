"""Small modules and short functions (the project's style rules), checked on lander's own source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers import REPO

MODULES = sorted((REPO / "lander").rglob("*.py"))
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 40


def function_lengths(path: Path) -> dict[str, int]:
    """Lines of every function and method in ``path``, its docstring left out."""
    lengths = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body[1:] if ast.get_docstring(node) and len(node.body) > 1 else node.body
            lengths[f"{path.name}:{node.name}"] = node.end_lineno - body[0].lineno + 1 + len(node.decorator_list)
    return lengths


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_modules_and_functions_are_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES
    long = {name: n for name, n in function_lengths(path).items() if n > MAX_FUNCTION_LINES}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_length_measure_sees_a_long_function(tmp_path: Path) -> None:
    source = tmp_path / "long.py"
    source.write_text('def f():\n    """Doc."""\n' + "    x = 1\n" * 41)
    assert function_lengths(source) == {"long.py:f": 41}
