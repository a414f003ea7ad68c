"""JSON configs acclint understands (today: msprobe's config.json), read into a small record that
rules check through `Rule.check_config`. Positions are the lines where keys are written."""

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
    kind: str  # "msprobe"
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
    """(config, None) for an msprobe config; (None, error) for broken JSON; (None, None) otherwise."""
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
