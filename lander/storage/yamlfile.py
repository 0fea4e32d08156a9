"""Reading YAML that may come from anywhere (a copied run's ``.hydra/*.yaml``, a downloaded ``conf/``) with a bound
on what its aliases expand to.

A YAML alias repeats a node by reference: ten nested lines of ``[*a, *a, *a, ...]`` (a kilobyte, "billion
laughs") stand for 10^9 nodes. PyYAML builds them as shared references in a millisecond, but whatever walks
the result (OmegaConf, JSON, a resolver) expands them, and runs until memory or time runs out. Here the node
graph is composed first, and the number of nodes it stands for is counted once per distinct node before anything
is built: a file that stands for more than :data:`MAX_NODES` is refused in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_NODES = 100_000  # a run's whole config is about 300 nodes; a preset or an override list far fewer


class YamlBomb(yaml.YAMLError):  # type: ignore[misc]  # PyYAML's classes are untyped here
    """A YAML text whose aliases expand past :data:`MAX_NODES` nodes (or nest past Python's recursion limit)."""


def expanded_size(node: yaml.Node, seen: dict[int, int]) -> int:
    """How many nodes ``node`` stands for with every alias expanded; ``seen`` holds each distinct node's count."""
    if id(node) in seen:
        return seen[id(node)]
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(expanded_size(k, seen) + expanded_size(v, seen) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(expanded_size(item, seen) for item in node.value)
    else:
        size = 1
    seen[id(node)] = size
    return size


def check_aliases(text: str, where: str, limit: int = MAX_NODES) -> None:
    """Raise :class:`YamlBomb` if ``text`` stands for more than ``limit`` nodes once its aliases are expanded.

    :param where: the file, for the message
    :raises yaml.YAMLError: ``text`` is not YAML
    """
    if "*" not in text:  # no alias: as many nodes as it has written, bounded by its size
        return
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        size = 0 if node is None else expanded_size(node, {})
    except RecursionError:
        raise YamlBomb(f"{where}: nested too deeply to be read") from None
    if size > limit:
        raise YamlBomb(f"{where}: its aliases expand past {limit:,} nodes (a YAML alias bomb?): not read")


def safe_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load(text)`` once :func:`check_aliases` let it through."""
    check_aliases(text, where)
    return yaml.safe_load(text)


def read_yaml(path: Path) -> Any:
    """The YAML file ``path``, read as :func:`safe_yaml`."""
    return safe_yaml(path.read_text(), str(path))
