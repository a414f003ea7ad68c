"""Settings in config files: YAML (MindFormers), JSON (DeepSpeed, HF TrainingArguments), TOML.

Nested tables are flattened to leaves; a leaf's key is its full dotted path when that path is
a known alias (`optimizer.type` -> optimizer), else the key of its last segment when that is a
setting acclint knows (`model_config.num_layers` -> num-layers), else the dotted path itself.
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from typing import Any, Iterator

from acclint.setups import keys
from acclint.setups.config_defaults import library_of
from acclint.setups.record import Setting, Setup, SetupError, Where
from acclint.setups.values import parse_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}
Leaf = tuple  # (path tuple, value, line)


def extract_config(text: str, display: str, suffix: str) -> Setup:
    kind = CONFIG_SUFFIXES[suffix]
    leaves = _yaml_leaves(text, display) if kind == "yaml" else _mapping_leaves(kind, text, display)
    setup = Setup(path=display, kind="config", files=[display])
    setup.library = library_of(path[0] for path, _, _ in leaves)
    known = known_keys()
    for path, value, line in leaves:
        where = Where(display, line)
        written = f"{'.'.join(map(str, path))}: {value!r}"
        for key, converted in _settings(path, value, known):
            setup.put(Setting(key, converted, where, written=written))
    return setup


def settings_of_leaf(path: tuple, value: Any) -> list:
    """(key, value) settings a config leaf at `path` gives, as `extract_config` records them."""
    return list(_settings(path, value, known_keys()))


def _settings(path: tuple, value: Any, known: frozenset) -> Iterator[tuple]:
    key = keys.config_key(path)
    if key == "betas" and isinstance(value, (list, tuple)) and len(value) == 2:
        yield "adam-beta1", value[0]
        yield "adam-beta2", value[1]
        return
    if key == "initial-scale-power" and isinstance(value, int):  # DeepSpeed fp16 dynamic scale
        yield "initial-loss-scale", float(2**value)
        return
    if key not in known and len(path) > 1:
        key = ".".join(str(part) for part in path)  # a nested leaf acclint does not know: keep its place
    if isinstance(value, str):
        value = parse_text(value)
    elif isinstance(value, list):
        value = tuple(value)
    yield key, value


@lru_cache(maxsize=1)
def known_keys() -> frozenset:
    """Keys acclint knows the meaning of: launcher flags, alias targets, constructor keys."""
    from acclint.knowledge import table

    knowledge = keys.knowledge()
    found = set(knowledge["aliases"].values()) | set(knowledge["why"])
    for name, flags in table("launcher_defaults").items():
        if name != "sources":
            found.update(flags)
    for spec in keys.constructors().values():
        for target in spec.get("keys", {}).values():
            found.update(target if isinstance(target, list) else [target])
        found.add(spec.get("role", ""))
    return frozenset(found)


# -- YAML: line numbers from the composed node graph -------------------------------------------
def _yaml_leaves(text: str, display: str) -> list:
    import yaml

    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise SetupError(f"{display}: invalid YAML: {exc}".replace("\n", " ")) from exc
    leaves: list = []
    for document in documents:
        if document is not None:
            _yaml_walk(document, (), leaves)
    return leaves


def _yaml_walk(node, path: tuple, leaves: list) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            _yaml_walk(value_node, path + (key_node.value,), leaves)
    elif isinstance(node, yaml.SequenceNode):
        if all(isinstance(item, yaml.ScalarNode) for item in node.value):
            values = tuple(_yaml_scalar(item) for item in node.value)
            leaves.append((path, list(values), node.start_mark.line + 1))
        else:
            for index, item in enumerate(node.value):
                _yaml_walk(item, path + (index,), leaves)
    elif isinstance(node, yaml.ScalarNode) and path:
        leaves.append((path, _yaml_scalar(node), node.start_mark.line + 1))


def _yaml_scalar(node) -> Any:
    import yaml

    try:
        return yaml.safe_load(yaml.serialize(node))
    except yaml.YAMLError:
        return node.value


# -- JSON and TOML: leaves in document order, lines found by a forward search -------------------
def _mapping_leaves(kind: str, text: str, display: str) -> list:
    loads, error = (json.loads, json.JSONDecodeError) if kind == "json" else (tomllib.loads, tomllib.TOMLDecodeError)
    try:
        data = loads(text)
    except error as exc:
        detail = f" at line {exc.lineno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else f": {exc}"
        raise SetupError(f"{display}: invalid {kind.upper()}{detail}") from exc
    return _located(data, text, json_style=kind == "json")


def _located(data: Any, text: str, json_style: bool) -> list:
    if not isinstance(data, dict):
        return []
    finder = _LineFinder(text, json_style)
    leaves: list = []
    for path, value in _flatten(data, ()):
        leaves.append((path, value, finder.line_of(path)))
    return leaves


def _flatten(data: Any, path: tuple) -> Iterator[tuple]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _flatten(value, path + (key,))
    elif isinstance(data, list) and any(isinstance(item, (dict, list)) for item in data):
        for index, item in enumerate(data):
            yield from _flatten(item, path + (index,))
    elif path:
        yield path, data


class _LineFinder:
    """Where a leaf's key is written: searched forward from its parent's key, so repeated
    names (`lr` under optimizer and under scheduler) land on the right line."""

    def __init__(self, text: str, json_style: bool):
        self.text = text
        self.json_style = json_style
        self.found: dict[tuple, int] = {(): 0}  # path -> offset where its key was found

    def line_of(self, path: tuple) -> int:
        offset = self._offset(path)
        return self.text.count("\n", 0, offset) + 1

    def _offset(self, path: tuple) -> int:
        if path in self.found:
            return self.found[path]
        start = self._offset(path[:-1])
        name = path[-1]
        if isinstance(name, int):
            offset = start
        else:
            quoted = re.escape(json.dumps(name))
            bare = re.escape(str(name))
            pattern = quoted + r"\s*:" if self.json_style else rf"(?m)(^|[\s.\[{{,])({bare}|{quoted})\s*[=\].]"
            match = re.compile(pattern).search(self.text, start)
            offset = (match.start(2) if not self.json_style else match.start()) if match else start
        self.found[path] = offset
        return offset
