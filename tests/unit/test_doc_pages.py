"""The docs against the code: the configuration table is the one ``lander/conf/config.yaml`` gives, the README is
short with a two-command Quick start, every link resolves, and ``lander.evaluate --help`` names every key."""

from __future__ import annotations

import re

from omegaconf import OmegaConf

from helpers import REPO
from lander.config.reference import config_table, rows
from lander.config.schema import CONF_DIR, EvaluateConfig

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_configuration_table_is_generated_from_the_config() -> None:
    text = (REPO / "docs" / "configuration.md").read_text()
    assert config_table() in text, "docs/configuration.md: paste `python -m lander.config.reference` over its table"


def test_the_table_has_every_key_of_the_config_with_its_default() -> None:
    cfg = OmegaConf.load(CONF_DIR / "config.yaml")
    found = {key: default for key, default, _ in rows()}
    for key in ("seed", "total_timesteps", "eval.freq", "eval.episodes", "video.enabled", "early_stop.patience"):
        assert found[key] == str(OmegaConf.select(cfg, key)).replace("None", "null").replace("True", "true").replace(
            "False", "false"
        ), key
    assert found["algo"] == "ppo" and "`td3`" in {k: m for k, _, m in rows()}["algo"]
    assert not [k for k in found if k.startswith("hydra")]


def test_the_readme_is_short_with_a_quick_start_of_two_commands() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    quick = text.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in quick.strip().splitlines() if line.strip()]
    assert len(commands) == 2 and "lander.run" in commands[0] and "pytest" in commands[1]


def test_every_relative_link_of_the_docs_resolves() -> None:
    broken = []
    for page in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith(("http://", "https://")) and not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")
    assert not broken, broken


def test_every_evaluate_key_is_in_its_help_with_its_default() -> None:
    help_text = OmegaConf.load(CONF_DIR / "evaluate.yaml").hydra.help.template
    defaults = OmegaConf.load(CONF_DIR / "evaluate.yaml")
    for key in EvaluateConfig.__dataclass_fields__:
        shown = "DIR" if key == "run" else str(defaults[key]).replace("None", "null").replace("True", "true")
        assert re.search(rf"^\s+{key}={re.escape(shown.replace('False', 'false'))}\s", help_text, re.M), key
