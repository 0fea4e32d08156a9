"""What lander runs from a config it did not compose from its own files.

A config is code wherever it names something to import: a ``_target_`` (Hydra's ``instantiate``), the ``path``
of a ``hydra.utils.get_class`` / ``get_method`` / ``get_object`` target, a Gymnasium id ``module:Env-v0``
(Gymnasium imports the module); and wherever it calls a resolver (``${oc.env:...}`` reads the environment,
``${oc.decode:...}`` builds new nodes, ``_target_`` keys included, from a string).

:func:`check_trusted` refuses, naming the key, every import that is not one of lander's own configs
(:func:`shipped_targets`) or under a prefix the user allowed, and every resolver but ``now``. The experiment
service applies it to what it launches and resumes, and tells ``python -m lander.run`` to apply it too
(:data:`ALLOW_ENV`), so a planted ``.hydra/config.yaml`` or a request never runs code.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf, grammar_parser
from omegaconf.errors import OmegaConfBaseException
from omegaconf.grammar.gen.OmegaConfGrammarParser import OmegaConfGrammarParser

from lander.config.schema import CONF_DIR
from lander.errors import ConfigError
from lander.storage.rundir import CLAIM_RESOLVER

SAFE_RESOLVERS = frozenset({"now"})  # Hydra's clock, used in directory names
HYDRA_RESOLVERS = SAFE_RESOLVERS | {"hydra"}  # Hydra's own node reads itself: ${hydra:runtime.output_dir}
CLAIMED = ("hydra.run.dir", "hydra.sweep.dir")  # made as they are named: ${lander.claim:...} (nothing but a mkdir)
HYDRA_TARGETS = ("hydra._internal.", "hydra_plugins.")  # Hydra's sweepers and launchers, and installed plugins
GETTERS = frozenset({"hydra.utils.get_class", "hydra.utils.get_method", "hydra.utils.get_object"})
ALLOW_ENV = "LANDER_ALLOWED_TARGETS"  # set (comma-separated prefixes, maybe none): lander.run checks its config


STOP_AT = "lander.training.callbacks.StopAtTimesteps"  # the callbacks lander.reproduce writes into a copy's config
INTERRUPT_AT = "lander.training.callbacks.InterruptAtTimesteps"


@cache
def shipped_targets() -> frozenset[str]:
    """Every name lander's own configs (``lander/conf``) import: ``_target_`` values, getters' paths, and the
    modules its env ids name (``ale_py``); and the targets lander's code writes into a run's config (:data:`STOP_AT`,
    :data:`INTERRUPT_AT`: a reproduction of a run's first steps is resumed as any run is)."""
    names: set[str] = {STOP_AT, INTERRUPT_AT}
    for path in sorted(CONF_DIR.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for _key, node in nodes(data, ""):
            names |= set(imported(node))
        if path.parent.name == "env" and ":" in str(data.get("id", "")):  # ale_py:PongNoFrameskip-v4
            names.add(str(data["id"]).split(":")[0])
    return frozenset(names)


def allowed_prefixes() -> list[str] | None:
    """The prefixes :data:`ALLOW_ENV` allows, or None where it is unset (a run started from a terminal)."""
    value = os.environ.get(ALLOW_ENV)
    return None if value is None else [p.strip() for p in value.split(",") if p.strip()]


def nodes(value: Any, key: str) -> Iterator[tuple[str, Any]]:
    """Every node of a plain container with its dotted key, the container itself first."""
    yield key, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for name, child in items:
        yield from nodes(child, f"{key}.{name}" if key else str(name))


def imported(node: Any) -> list[str]:
    """The names a node makes Hydra import: its ``_target_``, and a getter's ``path``."""
    if not isinstance(node, dict) or "_target_" not in node:
        return []
    target = str(node["_target_"])
    return [target, str(node.get("path"))] if target in GETTERS else [target]


def resolvers(text: str) -> list[str]:
    """The names of the resolvers an OmegaConf string calls, nested ones included (escaped ``\\${`` is text)."""
    if "${" not in text:
        return []

    found: list[str] = []

    def walk(tree: Any) -> None:
        if isinstance(tree, OmegaConfGrammarParser.InterpolationResolverContext):
            found.append(tree.resolverName().getText())  # type: ignore[no-untyped-call]  # ANTLR's generated parser
        for child in tree.getChildren() if hasattr(tree, "getChildren") else ():
            walk(child)

    walk(grammar_parser.parse(text))
    return found


def is_allowed(name: str, prefixes: Sequence[str]) -> bool:
    return name in shipped_targets() or any(name == p or name.startswith(p.rstrip(".") + ".") for p in prefixes)


def untrusted_resolvers(
    plain: Any, prefix: str = "", safe: frozenset[str] = SAFE_RESOLVERS
) -> Iterator[tuple[str, str, str]]:
    """``(key, value, resolver)`` for every call of a resolver but ``safe`` in a plain container (its keys
    dotted after ``prefix``); a value that does not parse as OmegaConf's grammar counts as calling ``"?"``."""
    for key, value in nodes(plain, prefix):
        try:
            called = resolvers(value) if isinstance(value, str) else []
        except OmegaConfBaseException:
            called = ["?"]
        for name in called:
            if name not in safe:
                yield key, value, name


def resolve_trusted(plain: dict[str, Any]) -> dict[str, Any]:
    """A config read from a file, its interpolations resolved where they call only :data:`SAFE_RESOLVERS`; as
    written where any calls another (``${oc.env:...}`` is shown, never resolved) or one does not resolve."""
    if next(untrusted_resolvers(plain), None) is not None:
        return plain
    try:
        return OmegaConf.to_container(OmegaConf.create(plain), resolve=True)  # type: ignore[return-value]
    except (OmegaConfBaseException, ValueError, TypeError):
        return plain


ALLOW_HINT = "--allow-target {} (lander.serve and lander.reproduce take it)"  # how a user allows a prefix


def check_trusted(
    cfg: DictConfig | dict[str, Any], prefixes: Sequence[str], where: str = "", allow: str = ALLOW_HINT
) -> None:
    """Raise :class:`ConfigError` naming the first key whose resolver or import lander does not trust.

    :param cfg: a run config (a composed one, or one read from a ``.hydra/config.yaml``)
    :param prefixes: dotted prefixes the user allowed (``--allow-target``), beyond lander's own targets
    :param where: the file it came from, for the message
    :param allow: how the command checking it allows a prefix, ``{}`` for the prefix (:data:`ALLOW_HINT`)
    """
    source = f"{where}: " if where else ""
    plain = OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else cfg
    assert isinstance(plain, dict)
    if isinstance(plain.get("hydra"), dict):  # a config composed with Hydra's node (what a preset can set there)
        check_hydra_node(plain["hydra"], prefixes, source, allow)
        plain = {k: v for k, v in plain.items() if k != "hydra"}
    for key, value, name in untrusted_resolvers(plain):
        raise ConfigError(
            f"{source}{key}={value!r} calls the resolver {name}, which lander does not run in a config it did not "
            "compose from your own command (a run directory's, a request's): only ${now:...} and ${key} "
            "interpolations are; allowing a target (--allow-target, allow_target=) does not change that"
        )
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(plain), resolve=True)
    except (OmegaConfBaseException, ValueError, TypeError) as exc:
        raise ConfigError(f"{source}an interpolation does not resolve: {str(exc).splitlines()[0]}") from exc
    for key, node in nodes(resolved, ""):
        for name in imported(node):
            if not is_allowed(name, prefixes):
                raise ConfigError(
                    f"{source}{key} imports {name!r}, which is not one of lander's own targets: allow it with "
                    + allow.format(name)
                )
    env = resolved.get("env") if isinstance(resolved, dict) else None
    env_id = str(env.get("id", "")) if isinstance(env, dict) else ""
    if ":" in env_id and not is_allowed(env_id.split(":")[0], prefixes):
        raise ConfigError(
            f"{source}env.id={env_id!r} makes Gymnasium import {env_id.split(':')[0]!r}: allow it with "
            + allow.format(env_id.split(":")[0])
        )


def check_hydra_node(hydra: dict[str, Any], prefixes: Sequence[str], source: str, allow: str = ALLOW_HINT) -> None:
    """The ``hydra`` node of a composed config, as written (it resolves only inside a run): its callbacks, launcher
    and sweeper are instantiated by Hydra before lander's code runs, so each ``_target_`` must be Hydra's own, an
    installed plugin's, lander's or allowed, and no resolver but ``now`` and ``hydra`` is called (and ``lander.claim``,
    :func:`lander.storage.rundir.claim_directory`, in ``hydra.run.dir`` and ``hydra.sweep.dir``)."""
    for key, value, name in untrusted_resolvers(hydra, "hydra", HYDRA_RESOLVERS):
        if name == CLAIM_RESOLVER and key in CLAIMED:  # lander's default directories (config.yaml)
            continue
        raise ConfigError(f"{source}{key}={value!r} calls the resolver {name}: not run for a config the service starts")
    for key, node in nodes(hydra, "hydra"):
        for name in imported(node):
            if not (name.startswith(HYDRA_TARGETS) or is_allowed(name, prefixes)):
                raise ConfigError(
                    f"{source}{key} makes Hydra import {name!r}, which is not Hydra's, a plugin's or lander's: "
                    f"allow it with {allow.format(name)}"
                )
