"""The package's shape: subpackages by concept in layers, no import cycle, imports at the top of modules, and no
training dependency for what does not train (``import lander``, the config checks, the service)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

PACKAGE = REPO / "lander"
# what each part may import of lander's (besides itself): the ground first, the entry points last
LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "faults": set(),
    "numbers": set(),  # numbers as lander writes them for people
    "storage": {"errors", "faults"},
    "registry": set(),  # what Gymnasium's registry says of an env id: gymnasium only
    "envs": {"registry"},
    "algorithms": set(),
    "config": {"errors", "storage", "registry", "envs"},  # envs: MuJoCo's warnings routed before a check makes an env
    "process": {"errors", "storage"},
    "evaluation": {"errors", "numbers", "storage", "config", "envs", "algorithms"},
    "tracking": {"errors", "storage", "config"},
    "analysis": {"errors", "numbers", "storage", "config"},
    "reports": {"errors", "numbers", "storage", "config", "analysis"},  # config: what of a saved config is resolved
    "training": {
        "errors",
        "numbers",
        "faults",
        "storage",
        "envs",
        "algorithms",
        "config",
        "process",
        "evaluation",
        "tracking",
        "reports",
    },
    "sweeps": {
        "errors",
        "numbers",
        "storage",
        "config",
        "process",
        "tracking",
        "analysis",
        "reports",
        "algorithms",
        "training",
    },
    # how a job runs: forking, signals held, each launcher; above the sweeps' comparison and re-run it ends with
    "execution": {"errors", "storage", "config", "process", "algorithms", "training", "sweeps"},
    "service": {"errors", "storage", "config"},
}
ENTRY_POINTS = {"run", "evaluate", "compare", "report", "serve", "api", "reproduce"}  # on top: they may import any part
# imports inside functions, each for start-up time (measured: torch and SB3 take ~2 s, pandas/matplotlib/plotly ~1 s)
LATE_IMPORTS = {
    "lander.run": {
        "lander.training.train",
        "lander.training.resume",
        "lander.training.finish",
        "lander.sweeps.callback",
        "lander.config.precheck",
    },
    "lander.evaluate": {"lander.evaluation.saved"},
    "lander.reproduce": {"lander.training.train", "lander.training.resume", "lander.training.callbacks"},
    "lander.sweeps.callback": {
        "lander.reports.sweep_report",
        "lander.tracking.wandb_tracker",
        "lander.analysis.sequential",
    },  # Hydra imports
    # the callback in every run; only a sweep's end needs the analysis and W&B (3.3 s, python -X importtime)
    "lander.serve": {"lander.service.app"},
    "lander.config.checks": {"lander.envs"},  # with SB3 and torch (~2 s): only where a MuJoCo env is made for a check
    "lander.sweeps.adastop": {"lander.analysis.sequential"},  # adastop and pandas (1.0 s): only a sweep needs them
    "lander.execution.jobs": {"lander.training.train"},  # Hydra imports its launcher plugins in every process;
    "lander.execution.parallel": {"lander.execution.lockstep"},  # torch and SB3 (~2 s) only when a sweep
    # launches its jobs
}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def part(module: str) -> str:
    """``lander.training.callbacks`` -> ``training``; ``lander.run`` -> ``run``."""
    return module.split(".")[1] if module != "lander" else ""


def lander_imports(path: Path) -> list[tuple[str, bool]]:
    """Every import of a lander module in ``path``: (module, at the module's top level)."""
    tree = ast.parse(path.read_text())
    typing_only = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    top = {id(node) for node in tree.body} | {id(node) for block in typing_only for node in block.body}
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lander"):
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("lander")]
        found += [(name, id(node) in top) for name in names]
    return found


def test_every_part_imports_only_the_layers_below_it() -> None:
    wrong = []
    for module, path in modules().items():
        here = part(module)
        if here in ENTRY_POINTS or not here:
            continue
        for imported, _ in lander_imports(path):
            there = part(imported)
            if there and there != here and there not in LAYERS[here]:
                wrong.append(f"{module} imports {imported}")
    assert not wrong, wrong
    assert set(LAYERS) | ENTRY_POINTS >= {part(m) for m in modules() if part(m)}  # every part has its place


def test_imports_are_at_the_top_of_modules_except_for_start_up_time() -> None:
    late = {
        (module, imported)
        for module, path in modules().items()
        for imported, at_top in lander_imports(path)
        if not at_top and imported not in LATE_IMPORTS.get(module, set())
    }
    assert not late, sorted(late)


def late_imports_without_reason(path: Path) -> list[int]:
    """Lines of the imports inside functions of ``path`` (any module's) with no comment giving their reason: on the
    import's line, on the first line of its block of imports, or on the comment lines just above the block."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    top = {id(node) for node in tree.body}
    wrong = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            node is tree
            or not isinstance(body, list)
            or ast.unparse(getattr(node, "test", ast.Pass())) == "TYPE_CHECKING"
        ):
            continue
        for statements in (body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
            block: list[ast.stmt] = []
            for statement in [*statements, ast.Pass()]:
                if isinstance(statement, ast.Import | ast.ImportFrom) and id(statement) not in top:
                    block.append(statement)
                    continue
                if block:
                    first = block[0].lineno - 1
                    above = first - 1
                    while above >= 0 and lines[above].strip().startswith("#"):
                        above -= 1
                    reason = "#" in lines[first] or above < first - 1
                    wrong += [] if reason else [s.lineno for s in block if "#" not in lines[s.lineno - 1]]
                block = []
    return wrong


def test_every_import_inside_a_function_says_why() -> None:
    """Start-up time (measured), an optional dependency, or the order a security check needs: said beside it."""
    wrong = {module: lines for module, path in modules().items() if (lines := late_imports_without_reason(path))}
    assert not wrong, wrong


def test_the_late_import_check_sees_one_without_a_reason(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    import json\n\n\ndef g():\n    # 2 s\n    import torch\n    import numpy\n")
    assert late_imports_without_reason(source) == [2]


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from lander.training.train import train\n\ndef f():\n    import lander.reports.plots\n")
    assert lander_imports(source) == [("lander.training.train", True), ("lander.reports.plots", False)]
    assert "training" not in LAYERS["storage"]


def test_every_module_says_what_it_is_for() -> None:
    assert not [m for m, p in modules().items() if not ast.get_docstring(ast.parse(p.read_text()))]


@pytest.mark.parametrize("module", ["lander", "lander.config.precheck", "lander.service.app", "lander.api"])
def test_what_does_not_train_imports_no_training_dependency(module: str) -> None:
    loaded = "{m.split('.')[0] for m in sys.modules}"
    code = f"import sys, {module}; print(sorted({loaded} & {{'torch', 'stable_baselines3'}}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"{module} imports {out.stdout.strip()}"


def test_the_checks_of_a_run_import_no_training_dependency() -> None:
    """The checks of a run on each of lander's envs but MuJoCo's (whose warnings ``lander.envs`` routes) import
    neither torch nor SB3: the service runs them for every launch (checking blackjack's wrapper, lander's own
    ``lander.envs.TupleToDiscrete``, imported them)."""
    commands = [
        ["env=blackjack", "algo=q_learning"],
        ["env=frozen_lake", "algo=q_learning"],
        ["env=cartpole"],
        ["env=lunar_lander"],
        ["env=lunar_lander_continuous", "algo=sac"],
        ["env=pong", "algo=a2c"],
    ]
    code = (
        "import sys\nfrom lander.config.precheck import check_command\n"
        f"for command in {commands!r}:\n    check_command([*command, 'logger=none'])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'stable_baselines3'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]", out.stdout
