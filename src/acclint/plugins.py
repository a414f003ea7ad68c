"""Project-local rules: `[tool.acclint] plugins = ["my_rules"]` (as Fixit's `enable = [".rules"]`).

Each entry names a Python module or package of the project, relative to the folder of the config
file: a module name (`my_rules`, `lint.rules`, Fixit's `.rules`) or a path (`tools/acc_rules.py`).
Its rules are the module's `RULES` list when it has one (as the built-in modules), else one
instance of every concrete `Rule` subclass it defines. They follow the built-ins' code scheme
(acclint.codes) and must not reuse a built-in code or name.

Modules are imported as `acclint_plugins.<name>`, never under their own top-level name, so a
plugin called `json` or `test` cannot replace a real module; a package plugin imports its own
modules relatively. A module is imported again only when its source changes; the digest of its
source is part of the cache key (linter/cache.py), so editing a plugin invalidates cached results.
"""

from __future__ import annotations

import copyreg
import functools
import hashlib
import importlib.util
import inspect
import sys
import types
from pathlib import Path
from typing import Iterable, Optional

from acclint.codes import NAME_PATTERN, code_problem
from acclint.config import ConfigError
from acclint.findings import SEVERITIES
from acclint.linter.maturity import MATURITIES
from acclint.linter.rulebase import Rule, RuleDoc

PACKAGE = "acclint_plugins"
_REQUIRED = ("code", "name", "category", "severity", "summary", "doc")
# (resolved path, source digest) -> the rules it defined: a scan, its config and `acclint rules`
# ask for the same plugins several times in one process.
_LOADED: dict = {}


class PluginError(ConfigError):
    """A plugin that cannot be used; reported as a configuration error (exit 2, no traceback)."""


def load_plugins(specs: Iterable[str], root: Path, builtin: Iterable[Rule] = ()) -> list:
    """The rules of the plugins `specs`, found relative to `root`, checked against `builtin`."""
    builtin = list(builtin)
    taken_codes = {rule.code: "a built-in rule" for rule in builtin}
    taken_names = {rule.name: rule.code for rule in builtin}
    rules = []
    for spec in specs:
        for rule in _rules_of(spec, Path(root)):
            origin = f"plugins: {spec}: {type(rule).__name__}"
            if rule.code in taken_codes:
                raise PluginError(f"{origin}: code {rule.code} is already used by {taken_codes[rule.code]}; "
                                  "pick a free one (`acclint rules` lists the codes in use)")
            if rule.name in taken_names:
                raise PluginError(f"{origin}: name {rule.name!r} is already used by {taken_names[rule.name]}")
            taken_codes[rule.code] = f"plugin {spec}"
            taken_names[rule.name] = rule.code
            rules.append(rule)
    return rules


def plugin_rules(config, builtin: Iterable[Rule] = ()) -> list:
    """The rules of the plugins a loaded configuration names (none without a config file)."""
    if not getattr(config, "plugins", None) or config.source is None:
        return []
    return load_plugins(config.plugins, Path(config.source).parent, builtin)


def sources_stamp(rules: Iterable[Rule]) -> str:
    """The source digests of the plugin modules among `rules`' classes, for the cache key."""
    stamps = set()
    for rule in rules:
        module = sys.modules.get(type(rule).__module__)
        stamp = getattr(module, "__acclint_plugin__", None)
        if stamp is not None:
            stamps.add(stamp)
    return "\n".join(sorted(stamps))


def resolve(spec: str, root: Path) -> Path:
    """The file a plugin entry names: `my_rules` -> my_rules.py or my_rules/__init__.py."""
    if not isinstance(spec, str) or not spec.strip():
        raise PluginError(f"plugins: {spec!r} is not a module name or a path")
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        candidates = [root / spec]
        if not spec.endswith(".py"):
            candidates.append(root / spec / "__init__.py")
    else:
        parts = spec.lstrip(".").split(".")
        if not all(part.isidentifier() for part in parts):
            raise PluginError(f"plugins: {spec!r} is not a module name (dotted identifiers) or a path")
        base = root.joinpath(*parts)
        candidates = [base.with_name(base.name + ".py"), base / "__init__.py"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise PluginError(f"plugins: cannot find {spec!r} (looked for {looked})")


def _rules_of(spec: str, root: Path) -> list:
    path = resolve(spec, root)
    package = path.name == "__init__.py"
    digest = _digest(path.parent if package else path)
    key = (str(path), digest)
    if key not in _LOADED:
        module = _import(spec, path, package, digest)
        rules = [_checked(rule, spec) for rule in _collect(module, spec)]
        for rule in rules:  # a worker process started by spawn or forkserver imports the plugin itself
            copyreg.pickle(type(rule), functools.partial(_reduce, spec=spec, root=str(root)))
        _LOADED[key] = rules
    return _LOADED[key]


def _reduce(rule: Rule, *, spec: str, root: str) -> tuple:
    return _restore, (spec, root, rule.code)


def _restore(spec: str, root: str, code: str) -> Rule:
    """The plugin rule `code`, in a process that has not imported the plugin yet."""
    return next(rule for rule in _rules_of(spec, Path(root)) if rule.code == code)


def _digest(target: Path) -> str:
    """sha256 over the module's source, or every .py file of the package."""
    files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
    hasher = hashlib.sha256()
    for file in files:
        hasher.update(str(file.relative_to(target.parent)).encode("utf-8", "surrogatepass") + b"\0")
        hasher.update(file.read_bytes() + b"\0")
    return hasher.hexdigest()


def _import(spec: str, path: Path, package: bool, digest: str) -> types.ModuleType:
    if PACKAGE not in sys.modules:
        parent = types.ModuleType(PACKAGE, "Project-local acclint rules ([tool.acclint] plugins).")
        parent.__path__ = []
        sys.modules[PACKAGE] = parent
    stem = path.parent.name if package else path.stem
    name = f"{PACKAGE}.{''.join(c if c.isalnum() else '_' for c in stem)}"
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]  # an edited plugin: its old submodules must not be reused
    location = [str(path.parent)] if package else None
    module_spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=location)
    module = importlib.util.module_from_spec(module_spec)
    module.__acclint_plugin__ = f"{spec}:{digest}"
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:  # whatever a user's module raises on import, SystemExit included
        del sys.modules[name]
        raise PluginError(f"plugins: {spec} ({path}) failed to import: {type(exc).__name__}: {exc}"
                          f"{_where(exc, path)}") from None
    return module


def _where(exc: BaseException, path: Path) -> str:
    """` (at FILE:LINE)` for the deepest frame of the plugin's own files, if any."""
    line = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" (at {exc.filename}:{exc.lineno})"
    frame = exc.__traceback__
    while frame is not None:
        if Path(frame.tb_frame.f_code.co_filename).resolve().is_relative_to(path.parent):
            line = f" (at {frame.tb_frame.f_code.co_filename}:{frame.tb_lineno})"
        frame = frame.tb_next
    return line


def _collect(module: types.ModuleType, spec: str) -> list:
    declared = getattr(module, "RULES", None)
    if declared is not None:
        if not isinstance(declared, (list, tuple)) or not all(isinstance(r, Rule) for r in declared):
            raise PluginError(f"plugins: {spec}: RULES must be a list of Rule instances")
        rules = list(declared)
    else:
        rules = []
        for _, cls in inspect.getmembers(module, inspect.isclass):
            # Defined here (a package's submodules included), not imported from acclint; abstract bases
            # without a code are skipped.
            if issubclass(cls, Rule) and cls.__module__.startswith(module.__name__) \
                    and isinstance(getattr(cls, "code", None), str):
                rules.append(_instance(cls, spec))
    if not rules:
        raise PluginError(f"plugins: {spec} defines no rule (a subclass of acclint.linter.rulebase.Rule "
                          "with a `code`, or a RULES list)")
    return sorted(rules, key=lambda r: r.code)


def _instance(cls, spec: str) -> Rule:
    try:
        return cls()
    except Exception as exc:
        raise PluginError(f"plugins: {spec}: {cls.__name__}() failed: {type(exc).__name__}: {exc}") from None


def _checked(rule: Rule, spec: str) -> Rule:
    origin = f"plugins: {spec}: {type(rule).__name__}"
    missing = [attribute for attribute in _REQUIRED if not hasattr(rule, attribute)]
    if missing:
        raise PluginError(f"{origin} lacks {', '.join(missing)} (see CONTRIBUTING.md, 'Adding a rule')")
    problem = _problem(rule)
    if problem is not None:
        raise PluginError(f"{origin}: {problem}")
    return rule


def _problem(rule: Rule) -> Optional[str]:
    problem = code_problem(rule.code, rule.category)
    if problem is not None:
        return problem
    if not isinstance(rule.name, str) or not NAME_PATTERN.fullmatch(rule.name):
        return f"name {rule.name!r} is not kebab-case (e.g. 'unseeded-dataloader')"
    if rule.severity not in SEVERITIES:
        return f"severity {rule.severity!r} is not one of {', '.join(SEVERITIES)}"
    if getattr(rule, "maturity", "stable") not in MATURITIES:
        return f"maturity {rule.maturity!r} is not one of {', '.join(MATURITIES)}"
    if not isinstance(rule.doc, RuleDoc):
        return "doc must be a RuleDoc(what=..., why=..., fix=...)"
    return None
