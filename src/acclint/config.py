"""`[tool.acclint]` in pyproject.toml: which rules run, where, how severe, and what fails a run."""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from acclint.knowledge.api_differences import parse_version
from acclint.findings import CATEGORIES, SEVERITIES, SEVERITY_RANK, Finding
from acclint.linter.limits import DEFAULT_MAX_FILE_SIZE, DEFAULT_TIME_BUDGET, LimitError, Limits, parse_seconds, parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(ValueError):
    """A configuration the user must fix; reported without a traceback."""


@dataclass
class Config:
    select: list = field(default_factory=list)  # codes or categories; empty = all
    extend_select: list = field(default_factory=list)  # added to select (ruff's extend-select)
    ignore: list = field(default_factory=list)
    exclude: list = field(default_factory=list)  # exclude and extend-exclude together
    per_file_ignores: dict = field(default_factory=dict)  # glob -> codes/categories
    severity: dict = field(default_factory=dict)  # code or category -> severity
    fail_on: str = "warning"
    source: Optional[Path] = None  # the file it came from
    diff_ignore: list = field(default_factory=list)  # [tool.acclint.diff] ignore: keys, globs, groups
    respect_gitignore: bool = True  # skip what .gitignore files ignore while walking folders
    fix: bool = False  # apply safe fixes (ruff's `fix = true`); --fix/--no-fix override it
    preview: bool = False  # run preview rules too (otherwise only when selected by exact code)
    max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE  # bytes; None: no limit
    file_time_budget: Optional[float] = DEFAULT_TIME_BUDGET  # seconds per file; None: no budget
    plugins: list = field(default_factory=list)  # project-local rule modules, relative to the config file
    # The MindSpore release whose documented API differences apply (ACL711); None: the installed one's,
    # else the newest documented.
    mindspore_version: Optional[str] = None

    def merged(self, *, select=None, extend_select=None, ignore=None, exclude=None, fail_on=None,
               respect_gitignore=None, fix=None, preview=None, max_file_size=None) -> "Config":
        """Command-line options: --select replaces the config's select and extend-select (a later
        layer, as in ruff); --extend-select, --ignore, --exclude and --extend-exclude add; the
        switches (None: not given) override; --max-file-size (as written: `2MB`, `none`) replaces."""
        return replace(
            self,
            select=list(select) if select else self.select,
            extend_select=(self.extend_select if not select else []) + list(extend_select or []),
            ignore=self.ignore + list(ignore or []),
            exclude=self.exclude + list(exclude or []),
            fail_on=fail_on or self.fail_on,
            respect_gitignore=self.respect_gitignore if respect_gitignore is None else respect_gitignore,
            fix=self.fix if fix is None else fix,
            preview=self.preview if preview is None else preview,
            max_file_size=self.max_file_size if max_file_size is None else _limit(parse_size, max_file_size,
                                                                                  "--max-file-size"),
        )

    def limits(self) -> Limits:
        return Limits(max_file_size=self.max_file_size, time_budget=self.file_time_budget)


_KEYS = {"select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "severity",
         "fail-on", "respect-gitignore", "fix", "diff", "preview", "max-file-size", "file-time-budget",
         "plugins", "mindspore-version"}
_DIFF_KEYS = {"ignore"}


def find_pyproject(start: Path) -> Optional[Path]:
    start = Path(os.path.abspath(start))
    for folder in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Optional[Path], *, explicit: bool, known_codes: set) -> Config:
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}")
    section = data.get("tool", {}).get("acclint")
    if section is None and explicit and path.name != "pyproject.toml":
        section = data  # a dedicated acclint.toml holds the keys at top level
    if section is None:
        return Config(source=path)
    return _parse(section, path, known_codes)


def _parse(section: dict, path: Path, known_codes: set) -> Config:
    unknown = set(section) - _KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown [tool.acclint] key(s): {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(sorted(_KEYS))})")
    config = Config(source=path)
    config.plugins = _strings(section.get("plugins", []), "plugins", path)
    if config.plugins:  # their codes are selectable like the built-ins'
        from acclint.plugins import load_plugins

        known_codes = set(known_codes) | {rule.code for rule in load_plugins(config.plugins, path.parent)}
    config.select = _selectors(section.get("select", []), "select", path, known_codes)
    config.extend_select = _selectors(section.get("extend-select", []), "extend-select", path, known_codes)
    config.ignore = _selectors(section.get("ignore", []), "ignore", path, known_codes)
    # The built-in skipped folders stay skipped either way, so exclude and extend-exclude add alike.
    config.exclude = _strings(section.get("exclude", []), "exclude", path) + \
        _strings(section.get("extend-exclude", []), "extend-exclude", path)
    config.respect_gitignore = _boolean(section.get("respect-gitignore", True), "respect-gitignore", path)
    config.fix = _boolean(section.get("fix", False), "fix", path)
    for glob, selectors in _table(section.get("per-file-ignores", {}), "per-file-ignores", path).items():
        config.per_file_ignores[glob] = _selectors(selectors, f"per-file-ignores.{glob}", path, known_codes)
    for key, level in _table(section.get("severity", {}), "severity", path).items():
        _selectors([key], "severity", path, known_codes)
        if level not in SEVERITIES:
            raise ConfigError(f"{path}: severity.{key} must be one of {', '.join(SEVERITIES)}, not {level!r}")
        config.severity[key.upper() if key.upper().startswith("ACL") else key] = level
    fail_on = section.get("fail-on", "warning")
    if fail_on not in (*SEVERITIES, "never"):
        raise ConfigError(f"{path}: fail-on must be one of error, warning, info, never; not {fail_on!r}")
    config.fail_on = fail_on
    config.preview = section.get("preview", False)
    if not isinstance(config.preview, bool):
        raise ConfigError(f"{path}: preview must be true or false, not {config.preview!r}")
    diff = _table(section.get("diff", {}), "diff", path)
    unknown_diff = set(diff) - _DIFF_KEYS
    if unknown_diff:
        raise ConfigError(f"{path}: unknown [tool.acclint.diff] key(s): {', '.join(sorted(unknown_diff))} "
                          f"(known: {', '.join(sorted(_DIFF_KEYS))})")
    config.diff_ignore = _strings(diff.get("ignore", []), "diff.ignore", path)
    if "max-file-size" in section:
        config.max_file_size = _limit(parse_size, section["max-file-size"], f"{path}: max-file-size")
    if "mindspore-version" in section:
        version = section["mindspore-version"]
        if not isinstance(version, str) or parse_version(version) is None:
            raise ConfigError(f"{path}: mindspore-version must be a version string such as \"2.4.1\", not {version!r}")
        config.mindspore_version = version
    if "file-time-budget" in section:
        config.file_time_budget = _limit(parse_seconds, section["file-time-budget"], f"{path}: file-time-budget")
    return config


def _limit(parse, value, origin: str):
    try:
        return parse(value, origin)
    except LimitError as exc:
        raise ConfigError(str(exc))


def _strings(value, key: str, path: Path) -> list:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {key} must be a list of strings")
    return value


def _boolean(value, key: str, path: Path) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: {key} must be true or false, not {value!r}")
    return value


def _table(value, key: str, path: Path) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key} must be a table")
    return value


def _selectors(value, key: str, path, known_codes: set) -> list:
    out = []
    for item in _strings(value, key, path):
        normalised = item.upper() if item.upper().startswith("ACL") else item
        known = normalised in CATEGORIES or normalised == "ALL" or any(c.startswith(normalised) for c in known_codes)
        if not known or (normalised.startswith("ACL") and len(normalised) < 4):
            raise ConfigError(f"{path}: {key}: unknown rule or category {item!r}")
        out.append(normalised)
    return out


def validate_selectors(items, known_codes: set, origin: str) -> list:
    return _selectors(list(items), origin, "command line", known_codes)


def matches(selectors, code: str, category: str) -> bool:
    return any(s in (code, category, "ALL") or (s.startswith("ACL") and code.startswith(s)) for s in selectors)


def rule_enabled(config: Config, code: str, category: str, preview: bool = False) -> bool:
    """Selected (by select, all when empty, or by extend-select) and not ignored: ignore wins.
    `preview`: the rule is a preview rule; it runs with `preview = true` or when selected (or
    extend-selected) by its exact code (as ruff does: a prefix or a category never turns it on)."""
    if preview and not config.preview and code not in config.select and code not in config.extend_select:
        return False
    selected = not config.select or matches(config.select, code, category)
    if not selected and not matches(config.extend_select, code, category):
        return False
    return not matches(config.ignore, code, category)


def waiting_for_preview(config: Config, rule, preview: bool) -> bool:
    """Whether `rule` (a preview rule when `preview`) is off only because it is preview: selected and not
    ignored, so `--preview` would run it. The report says so instead of "turned off"."""
    return preview and not rule_enabled(config, rule.code, rule.category, True) and \
        rule_enabled(config, rule.code, rule.category, False)


def apply_to_finding(config: Config, finding: Finding) -> Optional[Finding]:
    """Per-file ignores and severity overrides; None when the finding is ignored for its file."""
    path = _config_relative(config, finding.path)
    for glob, selectors in config.per_file_ignores.items():
        if (_path_matches(path, glob) or _path_matches(finding.path, glob)) \
                and matches(selectors, finding.rule, finding.category):
            return None
    level = _severity_for(config, finding.rule, finding.category)
    return replace(finding, severity=level) if level else finding


def _severity_for(config: Config, code: str, category: str) -> Optional[str]:
    """Exact code first, then the longest code prefix, then the category."""
    if code in config.severity:
        return config.severity[code]
    prefixes = [key for key in config.severity if key.startswith("ACL") and code.startswith(key)]
    if prefixes:
        return config.severity[max(prefixes, key=len)]
    return config.severity.get(category)


def _config_relative(config: Config, path: str) -> str:
    """Globs in per-file-ignores are relative to the folder of the config file, wherever acclint runs."""
    if config.source is None:
        return path
    try:
        return Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(config.source)).parent).as_posix()
    except ValueError:
        return path


def _path_matches(path: str, glob: str) -> bool:
    posix = path.replace("\\", "/")
    return fnmatch.fnmatch(posix, glob) or fnmatch.fnmatch(posix.rsplit("/", 1)[-1], glob)


def fails(config: Config, severity: str) -> bool:
    if config.fail_on == "never":
        return False
    return SEVERITY_RANK[severity] <= SEVERITY_RANK[config.fail_on]
