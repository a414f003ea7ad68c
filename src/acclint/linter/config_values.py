"""The values a configuration file sets, read as data: YAML, JSON, and Python configs of the
mmengine / detectron2 LazyConfig kind (parsed, never executed). Each file is read once, at most
`max_bytes` of it; a file that cannot be read or parsed sets nothing and says why, never raises.

Values are flat: a key path ("train", "amp") -> Entry(value, line). Inheritance is resolved here:
`_base_` (mmengine) and `_BASE_` (detectron2 YAML) files are read first and the child overrides
them key by key, as mmengine's Config merges dicts (`_delete_=True` drops the base's keys under it);
a LazyConfig's `from .common.optim import SGD as optimizer` roots that module's values at `optimizer`.
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from acclint.knowledge import table
from acclint.linter.facts import NOT_LITERAL


class _Mapping:
    """A key whose value is a mapping: truthy when it has keys."""

    def __init__(self, size: int):
        self.size = size

    def __bool__(self) -> bool:
        return self.size > 0

    def __repr__(self) -> str:
        return "{...}"


@dataclass(frozen=True)
class Entry:
    value: Any  # NOT_LITERAL when the file writes code there
    line: int
    abspath: str = ""  # the file that writes it (a base config, for an inherited value)


@dataclass
class ConfigValues:
    abspath: str
    values: dict = field(default_factory=dict)  # key path tuple -> Entry
    problem: Optional[str] = None  # why nothing could be read
    defaults: list = field(default_factory=list)  # a Hydra primary config's `defaults:` list, as written

    def lookup(self, parts: tuple) -> Optional[tuple]:
        """(path, Entry) for the longest suffix of `parts` this file sets (`cfg.train.amp` may be `train.amp`
        of the file, or `amp` at its top)."""
        for start in range(len(parts)):
            entry = self.values.get(parts[start:])
            if entry is not None:
                return parts[start:], entry
        return None


def _settings() -> dict:
    return table("runconfig")


class ConfigFiles:
    """Configuration files read for one scan, each once."""

    def __init__(self):
        self._read: dict = {}  # abspath -> ConfigValues
        self._texts: dict = {}  # abspath -> text or None

    def text(self, abspath: str) -> Optional[str]:
        if abspath not in self._texts:
            self._texts[abspath] = _read_text(abspath, _settings()["max_bytes"])
        return self._texts[abspath]

    def read(self, abspath: str) -> ConfigValues:
        abspath = os.path.normpath(abspath)
        found = self._read.get(abspath)
        if found is None:
            self._read[abspath] = ConfigValues(abspath, problem="inherits from itself")  # a cycle stops here
            found = self._read[abspath] = _owned(self._parse(abspath))
        return found

    def _parse(self, abspath: str) -> ConfigValues:
        text = self.text(abspath)
        if text is None:
            return ConfigValues(abspath, problem="not found, unreadable or over the size limit")
        if abspath.endswith(tuple(_settings()["python_endings"])):
            return self._python(abspath, text)
        if abspath.endswith(".json"):
            return _json(abspath, text)
        return self._yaml(abspath, text)

    # -- YAML ----------------------------------------------------------------------------------
    def _yaml(self, abspath: str, text: str) -> ConfigValues:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            # A stream of several documents holds the configuration first: MindSpore's model zoo writes
            # (config, help texts, choices) and reads them with `yaml.load_all` (model_utils/config.py).
            root = next(iter(yaml.compose_all(text, Loader=loader)), None)
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            return ConfigValues(abspath, problem=f"invalid YAML: {str(exc).splitlines()[0] if str(exc) else exc}")
        out = ConfigValues(abspath)
        if not isinstance(root, yaml.MappingNode):
            return out
        values: dict = {}
        constructor = yaml.SafeLoader("")
        stack = [(root, ())]
        while stack:
            node, path = stack.pop()
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = path + (str(key_node.value),)
                line = key_node.start_mark.line + 1
                if isinstance(value_node, yaml.MappingNode):
                    values[key] = Entry(_Mapping(len(value_node.value)), line)
                    stack.append((value_node, key))
                    continue
                try:
                    value = constructor.construct_object(value_node, deep=True)
                except (yaml.YAMLError, ValueError, TypeError, RecursionError):
                    value = NOT_LITERAL  # a tag this reader does not construct (`!include`, `!!python/...`)
                values[key] = Entry(value, line)
        hydra = _settings()["hydra_defaults"]
        if (hydra,) in values and isinstance(values[(hydra,)].value, list):
            out.defaults = values[(hydra,)].value
        bases = [values.pop(k).value for k in list(values) if len(k) == 1 and k[0] in ("_base_", "_BASE_")]
        out.values = self._inherit(abspath, bases, values)
        return out

    # -- Python --------------------------------------------------------------------------------
    def _python(self, abspath: str, text: str) -> ConfigValues:
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return ConfigValues(abspath, problem="not valid Python")
        values: dict = {}
        names: dict = {}  # module-level name -> its evaluated value (for `model = dict(backbone=backbone)`)
        bases: list = []
        base_key = _settings()["base_key"]
        for statement in module.body:
            if isinstance(statement, ast.ImportFrom) and statement.level:
                self._imported(abspath, statement, values)
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id == base_key:
                    bases.append(_evaluate(statement.value, names))
                    continue
                names[target.id] = _evaluate(statement.value, names)
                _drop_under(values, (target.id,))
                _flatten(statement.value, (target.id,), statement.lineno, values, names)
        return ConfigValues(abspath, values=self._inherit(abspath, bases, values))

    def _imported(self, abspath: str, statement: ast.ImportFrom, values: dict) -> None:
        """LazyConfig: `from ..common.optim import SGD as optimizer` roots optim.py's `SGD` at `optimizer`."""
        folder = os.path.dirname(abspath)
        for _ in range(statement.level - 1):
            folder = os.path.dirname(folder)
        module = os.path.join(folder, *(statement.module or "").split(".")) + ".py"
        if not os.path.isfile(module):
            return
        source = self.read(module).values
        for alias in statement.names:
            bound = alias.asname or alias.name
            for path, entry in source.items():
                if path[0] == alias.name:
                    values[(bound,) + path[1:]] = entry

    def _inherit(self, abspath: str, bases: list, values: dict) -> dict:
        """The bases' values, then this file's over them (`_delete_` drops the base's keys under a key)."""
        paths = []
        for base in bases:
            paths.extend(base if isinstance(base, (list, tuple)) else [base])
        if not paths:
            return values
        merged: dict = {}
        for path in paths:
            if isinstance(path, str):
                merged.update(self.read(os.path.join(os.path.dirname(abspath), path)).values)
        for path, entry in values.items():
            if path[-1] == "_delete_" and entry.value is True:
                _drop_under(merged, path[:-1])
        merged.update(values)
        return merged


def _owned(config: ConfigValues) -> ConfigValues:
    """Entries without a file are this file's own (inherited ones already name theirs)."""
    config.values = {path: entry if entry.abspath else Entry(entry.value, entry.line, config.abspath)
                     for path, entry in config.values.items()}
    return config


def _drop_under(values: dict, prefix: tuple) -> None:
    for path in [p for p in values if p[:len(prefix)] == prefix and len(p) > len(prefix)]:
        del values[path]


def _evaluate(node: ast.AST, names: dict) -> Any:
    """A literal, a dict/list written as one or as `dict(...)`, or an earlier module-level name."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name):
        return names.get(node.id, NOT_LITERAL)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {k.arg: _evaluate(k.value, names) for k in node.keywords if k.arg}
    if isinstance(node, ast.Dict):
        return {k.value: _evaluate(v, names) for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_evaluate(e, names) for e in node.elts]
    return NOT_LITERAL


def _items(node: ast.AST) -> Optional[list]:
    """(key, value node, line) of a dict written as `dict(k=v)`, `{"k": v}` or LazyCall(X)(k=v)."""
    if isinstance(node, ast.Dict):
        return [(k.value, v, k.lineno) for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and not node.args and (isinstance(node.func, ast.Name) and node.func.id == "dict"
                                                          or isinstance(node.func, ast.Call)):
        return [(k.arg, k.value, k.value.lineno) for k in node.keywords if k.arg]
    return None


def _flatten(node: ast.AST, path: tuple, line: int, values: dict, names: dict) -> None:
    items = _items(node)
    if items is None:
        value = _evaluate(node, names)
        if isinstance(value, dict):
            _flatten_value(value, path, line, values)
        else:
            values[path] = Entry(value, line)
        return
    values[path] = Entry(_Mapping(len(items)), line)
    for key, child, child_line in items:
        _flatten(child, path + (key,), child_line, values, names)


def _flatten_value(value: dict, path: tuple, line: int, values: dict) -> None:
    values[path] = Entry(_Mapping(len(value)), line)
    for key, child in value.items():
        if isinstance(child, dict):
            _flatten_value(child, path + (str(key),), line, values)
        else:
            values[path + (str(key),)] = Entry(child, line)


# -- JSON --------------------------------------------------------------------------------------
def _json(abspath: str, text: str) -> ConfigValues:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return ConfigValues(abspath, problem=f"invalid JSON: {exc}")
    out = ConfigValues(abspath)
    if not isinstance(data, dict):
        return out
    lines = _json_key_lines(text)
    stack = [(data, ())]
    while stack:
        node, path = stack.pop()
        for key, value in node.items():
            key_path = path + (str(key),)
            line = lines.get(str(key), 1)
            if isinstance(value, dict):
                out.values[key_path] = Entry(_Mapping(len(value)), line)
                stack.append((value, key_path))
            else:
                out.values[key_path] = Entry(value, line)
    return out


_JSON_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')


def _json_key_lines(text: str) -> dict:
    """The line where each key is first written (a key repeated under two parents shows its first)."""
    lines: dict = {}
    line, counted = 1, 0
    for match in _JSON_KEY.finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        lines.setdefault(match.group(1), line)
    return lines


def _read_text(abspath: str, limit: int) -> Optional[str]:
    try:
        if not os.path.isfile(abspath) or os.path.getsize(abspath) > limit:
            return None
        with open(abspath, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def is_config_path(text: str) -> bool:
    settings = _settings()
    return isinstance(text, str) and text.lower().endswith(
        tuple(settings["data_endings"]) + tuple(settings["python_endings"]))
