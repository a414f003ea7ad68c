"""Configs acclint understands, read into a small record that rules check through
`Rule.check_config`: msprobe's config.json, and the Ascend numerics modes of MindFormers-style YAML
configs (`context.ascend_config.precision_mode`). Positions are the lines where keys are written."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Optional

from acclint.findings import Location
from acclint.knowledge import table
from acclint.linter.facts import FileFacts


@dataclass
class ConfigFile:
    kind: str  # "msprobe" | "ascend-yaml"
    data: dict
    facts: FileFacts  # path and spans for reporting; node i = the i-th located key
    nodes: dict = field(default_factory=dict)  # key path ("task", "tensor.data_mode") -> node

    def node(self, *path: str) -> int:
        """The node of the deepest written key on `path` (0 = the file's first line)."""
        for depth in range(len(path), 0, -1):
            key = ".".join(path[:depth])
            if key in self.nodes:
                return self.nodes[key]
        return 0


def is_msprobe_config(data) -> bool:
    signature = table("msprobe")["config"]
    return isinstance(data, dict) and all(k in data for k in signature["signature_all"]) and \
        any(k in data for k in signature["signature_any"])


def read_config(display: str, abspath: str, text: str) -> tuple[Optional[ConfigFile], Optional[str]]:
    """(config, None) for a config acclint knows; (None, error) for a broken one; (None, None) otherwise."""
    if abspath.endswith((".yaml", ".yml")):
        return read_mode_yaml(display, abspath, text)
    try:
        data = json.loads(text)
    except ValueError as exc:
        looks_like_msprobe = '"dump_path"' in text and ('"task"' in text or '"level"' in text)
        return None, (f"invalid JSON: {exc}" if looks_like_msprobe else None)
    if not is_msprobe_config(data):
        return None, None
    facts = FileFacts(path=display, abspath=abspath, line_count=text.count("\n") + 1)
    config = ConfigFile("msprobe", data, facts)
    facts.spans.append(Location(1, 1, 1, 1))
    for path in _key_paths(data):
        location = _locate(text, path)
        if location is not None:
            config.nodes[".".join(path)] = len(facts.spans)
            facts.spans.append(location)
    return config, None


def _key_paths(data: dict) -> list:
    paths = []
    for key, value in data.items():
        paths.append((key,))
        if isinstance(value, dict):
            paths.extend((key, inner) for inner in value)
    return paths


def _locate(text: str, path: tuple) -> Optional[Location]:
    start = 0
    match = None
    for key in path:
        match = re.compile(r'"' + re.escape(key) + r'"\s*:').search(text, start)
        if match is None:
            return None
        start = match.end()
    line = text.count("\n", 0, match.start()) + 1
    column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
    return Location(line, column, line, column + len(path[-1]) + 2)


def _yaml_mode_keys() -> tuple:
    modes = table("npu_modes")
    return tuple(modes["precision"]["yaml_keys"]) + tuple(modes["impl"]["context_keys"])


def read_mode_yaml(display: str, abspath: str, text: str) -> tuple[Optional[ConfigFile], Optional[str]]:
    """The Ascend numerics modes of a YAML config, keyed by their dotted path
    ("context.ascend_config.precision_mode"), only under the sections the table names. Most YAML
    files hold neither key: a text search decides before any parse."""
    keys = _yaml_mode_keys()
    if not re.search(r"^\s*(?:" + "|".join(map(re.escape, keys)) + r")\s*:", text, re.M):
        return None, None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.compose_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return None, f"invalid YAML{where}: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"
    sections = set(table("npu_modes")["precision"]["yaml_sections"])
    facts = FileFacts(path=display, abspath=abspath, line_count=text.count("\n") + 1)
    config = ConfigFile("ascend-yaml", {}, facts)
    facts.spans.append(Location(1, 1, 1, 1))
    stack = [(document, ()) for document in documents if document is not None]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, yaml.MappingNode):
            continue
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if isinstance(value_node, yaml.MappingNode):
                stack.append((value_node, path + (key,)))
            elif key in keys and sections & set(path) and isinstance(value_node, yaml.ScalarNode):
                dotted = ".".join(path + (key,))
                config.data[dotted] = str(value_node.value)
                mark = key_node.start_mark
                config.nodes[dotted] = len(facts.spans)
                facts.spans.append(Location(mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 1 + len(key)))
    return (config, None) if config.data else (None, None)
